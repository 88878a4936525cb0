//! The support tree of the four test binaries (`core`, `service`, `cli`,
//! `e2e`): each compiles it once and uses the parts it needs. The locks that
//! hold heavy groups to one at a time (the model, llama-server, the real MCP
//! servers) live here, so they hold across every module of a binary; and so
//! does the rule for tests that need a tool this machine may lack
//! ([`needs`]).
#![allow(dead_code, unused_imports)]

pub mod agent;
pub mod architecture;
pub mod cache_server;
pub mod common;
pub mod compress;
pub mod compress_cli;
pub mod events;
pub mod locate;
pub mod locks;
pub mod mcp;
pub mod mixed_text;
pub mod needs;
pub mod pipeline;
pub mod prompt;
pub mod server;
pub mod service;
pub mod store;
pub mod tmux;
pub mod tool_sse;
pub mod tools;
pub mod tui;
