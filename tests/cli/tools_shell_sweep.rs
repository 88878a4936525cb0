//! Nothing a `shell` command starts outlives it (issue 28): processes that
//! left the command's group with `setsid` (or `setsid -f`), ignored SIGHUP
//! with `nohup`, or were orphaned by a double fork are stopped when the
//! command ends, on a timeout, on a cancel, and when strata is killed by
//! SIGKILL during the command; the result says how many were stopped.
//!
//! Each case runs 10 times in a row under the real supervisor (`strata
//! __supervise`). A process is found by a marker in its command line: a
//! `sleep` duration of 1000 s plus a fraction unique to the case, so no
//! other process has it. Processes are waited for with a generous
//! deadline (they go within milliseconds).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::agent::openai;
use crate::support::mcp::processes_with;
use crate::support::server::{Reply, Server};
use crate::support::tool_sse::{openai_calls, openai_text};
use crate::support::{common, tools};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use strata::tooling::ToolStatus;
use strata::tools::{Progress, ToolOutput, shell};

const STRATA: &str = env!("CARGO_BIN_EXE_strata");

/// How many times each case runs in a row.
const RUNS: usize = 10;

/// How long the processes of a case may take to go (they take
/// milliseconds; the bound is only there so a failure ends).
const GONE_WITHIN: Duration = Duration::from_secs(20);

/// A `sleep` argument no other process has: 1000 s and a fraction made of
/// this test process's pid and a counter.
fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "1000.{}{:04}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The live processes whose command line holds `marker`, once they are
/// gone or [`GONE_WITHIN`] passed.
fn left_with(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + GONE_WITHIN;
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left
                .iter()
                .map(|pid| {
                    let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    format!("{pid}: {}", String::from_utf8_lossy(&line).replace('\0', " "))
                })
                .collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A workspace whose `shell` runs under the real supervisor.
fn supervised() -> tools::Ws {
    tools::ws_with(|env| {
        env.shell.supervisor = Some(PathBuf::from(STRATA));
        env.shell.default_timeout_s = 20;
        env.shell.max_timeout_s = 30;
    })
}

fn quiet() -> Progress {
    Arc::new(|_: &str| {})
}

fn text(out: &ToolOutput) -> String {
    format!("{}{}", out.output.head, out.output.tail)
}

async fn run(ws: &tools::Ws, command: &str, timeout: u64) -> ToolOutput {
    let args = json!({ "command": command, "timeout": timeout });
    shell::run(&ws.env, "call_1", &args, quiet()).await
}

/// Runs `shape` (a command with `{m}` for the marker) [`RUNS`] times;
/// after each, no process with the marker is left. Returns the results.
async fn nothing_outlives(shape: &str) -> Vec<String> {
    let ws = supervised();
    let mut results = Vec::new();
    for run_no in 1..=RUNS {
        let m = marker();
        let out = run(&ws, &shape.replace("{m}", &m), 20).await;
        let left = left_with(&m);
        assert!(
            left.is_empty(),
            "run {run_no} of `{shape}` left: {left:#?} (result: {})",
            text(&out)
        );
        results.push(text(&out));
    }
    results
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_child_in_the_background_is_stopped_when_the_command_ends() {
    nothing_outlives("setsid sleep {m} &").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_fork_is_stopped_when_the_command_ends() {
    nothing_outlives("setsid -f sleep {m}").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_child_that_ran_for_a_second_is_stopped_and_counted() {
    let results = nothing_outlives("setsid sleep {m} & sleep 1").await;
    for result in results {
        assert_eq!(
            result,
            "(no output)\n[exit code 0]\n[1 background process was stopped when the command ended]"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nohup_child_is_stopped_when_the_command_ends() {
    nothing_outlives("nohup sleep {m} > /dev/null 2>&1 &").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grandchild_of_a_double_fork_in_a_new_session_is_stopped() {
    // The subshells end at once: the sleep is orphaned, in a session of its own.
    nothing_outlives("( ( setsid sleep {m} > /dev/null 2>&1 & ) & ); sleep 0.5").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_result_says_how_many_background_processes_were_stopped() {
    let ws = supervised();
    let m = marker();
    let out = run(
        &ws,
        &format!("sleep {m} & setsid sleep {m} & ( setsid sleep {m} & ); sleep 0.5; echo started"),
        20,
    )
    .await;
    assert_eq!(out.status, ToolStatus::Ok);
    assert_eq!(
        text(&out),
        "started\n[exit code 0]\n[3 background processes were stopped when the command ended]"
    );
    assert_eq!(left_with(&m), Vec::<String>::new());
    // A command that leaves nothing says nothing of it.
    let out = run(&ws, "sleep 0.1 & wait; echo done", 20).await;
    assert_eq!(text(&out), "done\n[exit code 0]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setsid_children_go_on_a_timeout_and_on_a_cancel() {
    let ws = supervised();
    for _ in 0..3 {
        let m = marker();
        let out = run(&ws, &format!("setsid sleep {m} & sleep 600"), 1).await;
        assert!(text(&out).contains("[timed out after 1 s: "), "{}", text(&out));
        // The setsid sleep and the command's own sleep.
        assert!(
            text(&out).ends_with("[2 background processes were stopped when the command ended]"),
            "{}",
            text(&out)
        );
        assert_eq!(left_with(&m), Vec::<String>::new(), "after the timeout");

        let m = marker();
        let command = format!("setsid sleep {m} & sleep 600");
        let call = run(&ws, &command, 30);
        let cancelled = tokio::time::timeout(Duration::from_millis(700), call).await;
        assert!(cancelled.is_err(), "the command ended by itself");
        assert_eq!(left_with(&m), Vec::<String>::new(), "after the cancel");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_running_when_strata_is_killed_by_sigkill_leaves_nothing() {
    for run_no in 1..=RUNS {
        let m = marker();
        let command = format!("setsid sleep {m} & sleep {m}");
        let arguments = json!({ "command": command, "timeout": 600 }).to_string();
        let server = Server::with(move |n| match n {
            0 => Reply::sse(openai_calls(&[("call_s", "shell", &arguments)])),
            _ => Reply::sse(openai_text("unused")),
        })
        .await;
        let sb = common::Sandbox::new();
        let mut strata = openai(
            &sb,
            &server,
            &["chat", "--json", "--new", "--approve", "all", "start it"],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
        // Both sleeps run: the command's and the one in its own session.
        let started = Instant::now();
        let sleeps = || {
            processes_with(&m)
                .into_iter()
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep\0"))
                })
                .count()
        };
        while sleeps() < 2 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "run {run_no}: the command never started"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        strata.kill().unwrap(); // SIGKILL
        strata.wait().unwrap();
        let left = tokio::task::spawn_blocking(move || left_with(&m)).await.unwrap();
        assert!(left.is_empty(), "run {run_no} left: {left:#?}");
    }
}
