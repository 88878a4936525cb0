//! strata: a terminal chat session manager for language models whose heart is
//! context engineering — a layered system prompt with an explicit prompt-cache
//! boundary, token budgets per layer, and sessions with a frozen prompt kept
//! in SQLite.
//!
//! # Layers
//!
//! Every module sits in one layer and uses only what its layer allows:
//! layer 0 uses nothing but layer 0; the pure core (1) uses 0–1 and no I/O,
//! process, environment, clock (time is passed in) or UI crate; adapters (2)
//! use 0–1 but not each other; the runtime (3) uses 0–2; `render` (4) uses
//! 0–1 and ratatui/syntect but no I/O; the app (4) uses of the runtime
//! only its doors (the session handle, the protocol and view types),
//! `render`, 0 and 1, never an adapter; the binary (5) uses everything.
//! `tests/architecture.rs` parses every file under `src/` and enforces this.
//!
//! - 0 [`domain`]: sessions, messages, system prompts, compactions, usage.
//! - 0 [`text`]: small pure text helpers.
//! - 1 [`tokens`]: token counting, per-layer budgets and thresholds.
//! - 1 [`prompt`]: system prompt assembly from inputs read by `workspace`.
//! - 1 [`pipeline`]: the per-turn preparation of the exact request.
//! - 1 [`prompt_cache`]: the prompt-cache bookkeeping: block hashes, predicted reads, breaks.
//! - 1 [`compress`]: the compression plan of a session's history.
//! - 1 [`conversation`]: the turn state machine, `handle(Event) -> Vec<Effect>`.
//! - 1 [`tooling`]: tool schemas, output limits and spill decisions, approval rules.
//! - 2 [`provider`]: OpenAI-compatible, Anthropic and embedded llama.cpp streams.
//! - 2 [`store`]: the SQLite session store and its search index.
//! - 2 [`workspace`]: instruction files, skills, memory and the file watcher.
//! - 2 [`config`]: file locations, the config file and model selection.
//! - 2 [`tools`]: the built-in tools' handlers (files, search, shell).
//! - 2 [`mcp`]: MCP servers over stdio: their processes, connections and calls.
//! - 3 [`runtime`]: the session service; executes the core's effects.
//! - 4 [`render`]: Markdown and highlighted code as ratatui lines, cached.
//! - 4 [`tui`]: the full-screen app: view model, drawing, keys and intents.
//! - 5 `cli`: the binary's argument parsing and wiring (`src/main.rs`, `src/cli/`).

pub mod compress;
pub mod config;
pub mod conversation;
pub mod domain;
pub mod mcp;
pub mod pipeline;
pub mod prompt;
pub mod prompt_cache;
pub mod provider;
pub mod render;
pub mod runtime;
pub mod store;
pub mod text;
pub mod tokens;
pub mod tooling;
pub mod tools;
pub mod tui;
pub mod workspace;
