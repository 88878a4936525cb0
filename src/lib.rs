//! strata: a terminal chat session manager for language models whose heart is
//! context engineering — a layered system prompt with an explicit prompt-cache
//! boundary, token budgets per layer, and sessions with a frozen prompt kept
//! in SQLite.
//!
//! Layers (a module imports only from its own layer or below):
//! 0 [`domain`]; 1 core, pure: [`tokens`], [`prompt`]; 2 adapters: [`store`],
//! [`workspace`], [`config`]; 3 [`runtime`]; the binary is the CLI.

pub mod compress;
pub mod config;
pub mod conversation;
pub mod domain;
pub mod pipeline;
pub mod prompt;
pub mod provider;
pub mod render;
pub mod runtime;
pub mod store;
pub mod text;
pub mod tokens;
pub mod tui;
pub mod workspace;
