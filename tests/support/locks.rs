//! The groups of tests that run one at a time within a test binary: each
//! starts heavy processes that would starve the others on a two-core
//! machine. A lock lives here, not in a test module, so it holds across
//! every module of the binary.

use std::sync::{Mutex, MutexGuard, PoisonError};

fn hold(lock: &'static Mutex<()>) -> MutexGuard<'static, ()> {
    lock.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One `llama-server` at a time.
pub fn llama_server() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    hold(&LOCK)
}

/// One test of real or misbehaving MCP servers at a time.
pub fn mcp() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    hold(&LOCK)
}
