//! The `e2e` test binary: tmux, the embedded model, llama-server and the real MCP servers.
//!
//! One module per area, in `tests/e2e/`; the shared support tree is
//! `tests/support/`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod support;

#[path = "e2e/cli_local.rs"]
mod cli_local;
#[path = "e2e/cli_mcp.rs"]
mod cli_mcp;
#[path = "e2e/cli_mcp_chat.rs"]
mod cli_mcp_chat;
#[path = "e2e/cli_mcp_json.rs"]
mod cli_mcp_json;
#[path = "e2e/llama_server.rs"]
mod llama_server;
#[path = "e2e/local_model.rs"]
mod local_model;
#[path = "e2e/local_q8.rs"]
mod local_q8;
#[path = "e2e/local_state.rs"]
mod local_state;
#[path = "e2e/mcp_detached.rs"]
mod mcp_detached;
#[path = "e2e/mcp_large.rs"]
mod mcp_large;
#[path = "e2e/mcp_servers.rs"]
mod mcp_servers;
#[path = "e2e/service_local.rs"]
mod service_local;
#[path = "e2e/tui_local.rs"]
mod tui_local;
#[path = "e2e/tui_tmux.rs"]
mod tui_tmux;
#[path = "e2e/tui_tmux_cache.rs"]
mod tui_tmux_cache;
#[path = "e2e/tui_tmux_composer.rs"]
mod tui_tmux_composer;
#[path = "e2e/tui_tmux_mcp.rs"]
mod tui_tmux_mcp;
#[path = "e2e/tui_tmux_tools.rs"]
mod tui_tmux_tools;
