//! Running `strata` against the local server for the tools' end-to-end
//! tests: the command with the server's address and a key, its output as
//! `--json` events, and the processes a command left behind.

#![allow(dead_code, clippy::unwrap_used)]

use crate::support::common::Sandbox;
use crate::support::server::Server;
use serde_json::Value;
use std::process::{Command, Output};

/// A key that must never reach the store or a log.
pub const KEY: &str = "sk-test-PLANTED-agent-1a2b3c";

/// `strata ARGS` in the sandbox, talking OpenAI to `server`.
pub fn openai(sb: &Sandbox, server: &Server, args: &[&str]) -> Command {
    let mut c = sb.cmd(args);
    c.env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", KEY);
    c
}

/// `strata ARGS` in the sandbox, talking Anthropic to `server`.
pub fn anthropic(sb: &Sandbox, server: &Server, args: &[&str]) -> Command {
    let mut c = sb.cmd(args);
    c.env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", KEY)
        .args(["--provider", "anthropic"]);
    c
}

/// Runs `cmd` off the test's runtime (the server keeps answering).
pub async fn run(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// [`run`], asserting the command succeeded.
pub async fn run_ok(cmd: Command) -> Output {
    let out = run(cmd).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The `--json` events of a run.
pub fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The events of one `type`.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// How many processes have exactly `words` as their command line (/proc).
pub fn processes_running(words: &[&str]) -> usize {
    let wanted: Vec<u8> = words.iter().flat_map(|w| w.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted))
        .count()
}
