//! Marks the tests whose tool is missing as ignored (see
//! `tests/support/needs.rs`): sets `strata_missing_tmux`,
//! `strata_missing_llama_server` and `strata_missing_mcp_servers` when the
//! tool is not found and `CI` is unset (or `0`/`false`). Under `CI` nothing
//! is set, so a missing tool fails its tests.

#[path = "tests/support/locate.rs"]
mod locate;

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=tests/support/locate.rs");
    for var in [
        "CI",
        "HOME",
        "XDG_CACHE_HOME",
        "LLAMA_SERVER",
        "STRATA_LLAMA_SERVER_DIR",
        "STRATA_MCP_SERVERS",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let ci = locate::in_ci();
    let mut missing_cached = false;

    let tmux = locate::tmux();
    mark("strata_missing_tmux", tmux.as_deref(), ci);
    if tmux.is_none() {
        // Installing tmux changes a directory on PATH.
        if let Some(paths) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&paths).filter(|d| d.is_dir()) {
                println!("cargo::rerun-if-changed={}", dir.display());
            }
        }
    }
    let server = locate::llama_server();
    missing_cached |= server.is_none();
    mark("strata_missing_llama_server", server.as_deref(), ci);
    match locate::mcp_servers() {
        Some(found) => {
            for path in &found {
                println!("cargo::rerun-if-changed={}", path.display());
            }
            mark("strata_missing_mcp_servers", Some(&found[0]), ci);
        }
        None => {
            missing_cached = true;
            mark("strata_missing_mcp_servers", None, ci);
        }
    }
    // The install scripts touch the stamp when they install something; a
    // path that does not exist would make every build run this script
    // again, so the stamp is made here when missing.
    if missing_cached && let Some(stamp) = locate::stamp() {
        let made = stamp.is_file()
            || stamp
                .parent()
                .is_some_and(|dir| std::fs::create_dir_all(dir).is_ok())
                && std::fs::write(&stamp, b"").is_ok();
        if made {
            println!("cargo::rerun-if-changed={}", stamp.display());
        }
    }
}

/// Declares `cfg` and sets it when the tool is missing outside CI; a found
/// tool is watched, so removing it runs this script again.
fn mark(cfg: &str, found: Option<&Path>, ci: bool) {
    println!("cargo::rustc-check-cfg=cfg({cfg})");
    match found {
        Some(path) => println!("cargo::rerun-if-changed={}", path.display()),
        None if !ci => println!("cargo::rustc-cfg={cfg}"),
        None => {}
    }
}
