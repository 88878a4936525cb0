//! `prompt.context_cmd` at the command line: run once when a session
//! starts, its output in the prompt.

use crate::support::common;
use crate::support::compress_cli as compress_cli_support;
use crate::support::server;

use common::Sandbox;
use compress_cli_support::*;
use server::{Reply, Server};

/// `prompt.context_cmd` runs once, when a session starts: not to show the
/// prompt a new session would get, not to compare the files' layers when
/// it is continued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_command_runs_once_when_a_session_starts() {
    let sb = Sandbox::new();
    let counter = sb.home.path().join("runs");
    write_config(
        &sb,
        &format!(
            "[prompt]\ncontext_cmd = \"echo run >> {}; echo branch main\"\n",
            counter.display()
        ),
    );
    let server = Server::with(|_| Reply::sse(sse("ok", None))).await;
    let runs = || {
        std::fs::read_to_string(&counter)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let out = run(openai(
        &sb,
        &server.base_url(),
        &["chat", "--tools", "off", "hello"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(runs(), 1);
    let sent = server.requests()[0].json()["messages"][0]["content"].to_string();
    assert!(sent.contains("branch main"), "its output is in the prompt");
    let out = run(openai(
        &sb,
        &server.base_url(),
        &["chat", "-c", "--tools", "off", "again"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(runs(), 1, "a continued session keeps its prompt");
}
