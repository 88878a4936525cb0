//! Tests that need a tool this machine may lack: tmux, llama.cpp's
//! `llama-server`, the real MCP servers.
//!
//! Such a test carries `#[cfg_attr(strata_missing_TOOL, ignore = "...")]`:
//! `build.rs` sets that `cfg` when the tool is missing and `CI` is unset
//! (or `0`/`false`), so `cargo test` reports the test as ignored with its
//! reason and install command — never as passed. Under `CI` the `cfg` is
//! never set: the test runs, and the functions here fail it with one
//! sentence naming the install command. No test keeps a private skip.

use std::path::PathBuf;

use super::locate;
pub use super::locate::in_ci;

/// The install command of each tool, as the `ignore` reasons give it.
pub const TMUX: &str = "tmux is not installed: apt-get install tmux";
pub const LLAMA_SERVER: &str = "llama-server is not installed: scripts/install-llama-server.sh";
pub const MCP_SERVERS: &str = "the real MCP servers are not installed: scripts/install-mcp-servers.sh";

/// `tmux`; fails the test when it is missing.
pub fn tmux() -> PathBuf {
    locate::tmux().unwrap_or_else(|| panic!("{TMUX}"))
}

/// `llama-server`; fails the test when it is missing.
pub fn llama_server() -> PathBuf {
    locate::llama_server().unwrap_or_else(|| panic!("{LLAMA_SERVER}"))
}

/// The three real MCP servers; fails the test when one is missing.
pub fn mcp_servers() -> [PathBuf; 3] {
    locate::mcp_servers().unwrap_or_else(|| {
        let dir = locate::mcp_servers_dir().unwrap_or_default();
        panic!("{MCP_SERVERS} (looked in {})", dir.display())
    })
}
