//! Where the tools some tests need are found: tmux on `PATH`, llama.cpp's
//! `llama-server` and the real MCP servers in strata's cache directory
//! (what `scripts/install-llama-server.sh` and
//! `scripts/install-mcp-servers.sh` install). Plain `std` only: `build.rs`
//! includes this file too, so the build script that marks tests as
//! ignored and the tests that run them look in the same places.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `$XDG_CACHE_HOME/strata`, else `$HOME/.cache/strata`: the install
/// scripts' cache, outside any clone so that it survives one.
pub fn cache_root() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
    Some(base.join("strata"))
}

/// The file the install scripts touch when they change an install, so the
/// build script runs again.
pub fn stamp() -> Option<PathBuf> {
    cache_root().map(|root| root.join("tools.stamp"))
}

/// The first executable file named `name` in a directory of `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// `tmux`, if installed.
pub fn tmux() -> Option<PathBuf> {
    on_path("tmux")
}

/// `$LLAMA_SERVER`, else `bin/llama-server` under
/// `$STRATA_LLAMA_SERVER_DIR` or the cache's `llama-server/`, else
/// `llama-server` on `PATH`.
pub fn llama_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LLAMA_SERVER").filter(|v| !v.is_empty()) {
        return Some(p.into());
    }
    let dir = std::env::var_os("STRATA_LLAMA_SERVER_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| cache_root().map(|r| r.join("llama-server")));
    if let Some(bin) = dir.map(|d| d.join("bin/llama-server")).filter(|p| p.is_file()) {
        return Some(bin);
    }
    on_path("llama-server")
}

/// `$STRATA_MCP_SERVERS`, else the cache's `mcp-servers/`.
pub fn mcp_servers_dir() -> Option<PathBuf> {
    std::env::var_os("STRATA_MCP_SERVERS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| cache_root().map(|r| r.join("mcp-servers")))
}

/// The three real MCP servers' programs — `mcp-server-time`,
/// `mcp-server-everything`, `mcp-server-filesystem` — as installed, found
/// or not.
pub fn mcp_server_paths() -> Option<[PathBuf; 3]> {
    let dir = mcp_servers_dir()?;
    Some([
        dir.join("python/bin/mcp-server-time"),
        dir.join("node/node_modules/.bin/mcp-server-everything"),
        dir.join("node/node_modules/.bin/mcp-server-filesystem"),
    ])
}

/// The three servers when all are installed.
pub fn mcp_servers() -> Option<[PathBuf; 3]> {
    mcp_server_paths().filter(|found| found.iter().all(|p| p.is_file()))
}

/// `CI` set to anything but empty, `0` or `false`: a missing tool is then
/// a failure, never a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}
