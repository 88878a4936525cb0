//! The agent turn in the real app, in tmux, against the local server: the
//! model (scripted) reads a file and runs a command once the user allows
//! it; Ctrl-C during a long command leaves no process behind and the call
//! answered `interrupted`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::agent;
use crate::support::common;
use crate::support::server;
use crate::support::tmux;
use crate::support::tool_sse;

use agent::processes_running;
use common::Sandbox;
use server::{Reply, Server};
use std::time::{Duration, Instant};
use tmux::Tmux;
use tool_sse::{openai_calls, openai_text};

/// The time a person takes to read a question that just appeared: keys
/// pressed sooner answer nothing (`strata::tui::ANSWER_GUARD_MS`).
async fn read_the_question() {
    let guard = u64::try_from(strata::tui::ANSWER_GUARD_MS).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(guard + 200)).await;
}

fn config(sb: &Sandbox, server: &Server) {
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
            server.base_url()
        ),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
async fn the_model_reads_a_file_and_runs_a_command_after_the_user_allows_it() {
    let tmux = Tmux::private("tools");
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[("r", "read_file", r#"{"path":"notes.txt"}"#)])),
        1 => Reply::sse(openai_calls(&[(
            "s",
            "shell",
            r#"{"command":"touch approved-file && echo made it"}"#,
        )])),
        _ => Reply::sse(openai_text("All done: the file exists.")),
    })
    .await;
    let sb = Sandbox::new();
    config(&sb, &server);
    std::fs::write(sb.ws().join("notes.txt"), "remember the milk\n").unwrap();
    tmux.start("app", &sb.tmux_line(""));
    tmux.wait_for("app", "gpt-4o-mini · openai").await;
    tmux.keys("app", &["make the file", "Enter"]);
    let screen = tmux.wait_for("app", "Allow shell?").await;
    assert!(screen.contains("touch approved-file && echo made it"), "{screen}");
    assert!(screen.contains("sandboxed (workspace, no network)"), "{screen}");
    assert!(
        !sb.ws().join("approved-file").exists(),
        "nothing runs before the answer"
    );
    read_the_question().await;
    tmux.keys("app", &["y"]);
    let screen = tmux.wait_for("app", "All done: the file exists.").await;
    assert!(sb.ws().join("approved-file").exists());
    assert!(screen.contains("read_file notes.txt"), "{screen}");
    assert!(screen.contains("✓ ok"), "{screen}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let read = requests[1].json();
    let last = read["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(last["content"].as_str().unwrap().contains("remember the milk"));
    let ran = requests[2].json();
    let last = ran["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(last["content"].as_str().unwrap().contains("made it"), "{last}");
    tmux.keys("app", &["C-c"]);
    tmux.keys("app", &["C-c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
async fn ctrl_c_during_a_long_command_kills_it_and_answers_the_call_interrupted() {
    let tmux = Tmux::private("cancel");
    let marker = ["sleep", "619"];
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[(
            "slow",
            "shell",
            r#"{"command":"sleep 619","timeout":600}"#,
        )])),
        _ => Reply::sse(openai_text("You stopped it.")),
    })
    .await;
    let sb = Sandbox::new();
    config(&sb, &server);
    tmux.start("app", &sb.tmux_line(""));
    tmux.wait_for("app", "gpt-4o-mini · openai").await;
    tmux.keys("app", &["wait a while", "Enter"]);
    tmux.wait_for("app", "Allow shell?").await;
    read_the_question().await;
    tmux.keys("app", &["y"]);
    let started = Instant::now();
    while processes_running(&marker) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the command never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tmux.wait_for("app", "running shell").await;
    tmux.keys("app", &["C-c"]);
    let cancelled = Instant::now();
    while processes_running(&marker) > 0 {
        assert!(
            cancelled.elapsed() < Duration::from_secs(10),
            "the command outlived the cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The block says interrupted, then the turn ends (the status bar
    // reads "cancelling the reply…" in between).
    tmux.wait_until("app", "interrupted and idle", Duration::from_secs(20), |s| {
        s.contains("interrupted") && s.contains(" idle ")
    })
    .await;
    // The next message carries the call with its `interrupted` result.
    tmux.keys("app", &["what happened?", "Enter"]);
    tmux.wait_for("app", "You stopped it.").await;
    let body = server.requests()[1].json();
    let m = body["messages"].as_array().unwrap();
    let result = m
        .iter()
        .find(|x| x["tool_call_id"] == "slow")
        .expect("the call's result");
    assert!(
        result["content"].as_str().unwrap().starts_with("Interrupted"),
        "{result}"
    );
    tmux.keys("app", &["C-c"]);
    tmux.keys("app", &["C-c"]);
}
