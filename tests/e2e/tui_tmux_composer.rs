//! End to end: the composer's keys through a real terminal (the `strata`
//! binary in tmux, against a mock OpenAI-compatible server): readline's
//! Ctrl-A and Ctrl-W edit the message that is sent, F2 toggles the context
//! pane, a bracketed paste of 30 lines folds to its label and is sent
//! whole, and the inputs are there for Up in the next run. Skipped (with a
//! message) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::common;
use crate::support::server;
use crate::support::tmux;

use common::Sandbox;
use server::{Reply, Server};
use tmux::Tmux;

fn sse(text: &str) -> String {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

/// The content of the last message of request `n`.
fn last_message(server: &Server, n: usize) -> String {
    let sent = server.requests()[n].json();
    let messages = sent["messages"].as_array().unwrap();
    messages.last().unwrap()["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
async fn readline_keys_f_keys_a_folded_paste_and_the_history_in_a_terminal() {
    let tmux = Tmux::private("composer");
    let server = Server::start(vec![
        Reply::sse(sse("first reply")),
        Reply::sse(sse("second reply")),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    tmux.start("app", &sb.tmux_line(""));
    tmux.wait_for("app", "gpt-4o-mini · openai").await;
    tmux.wait_for("app", "Context").await;

    // Ctrl-A goes to the line start, Ctrl-W deletes the word before the cursor.
    tmux.keys("app", &["-l", "world typo"]);
    tmux.keys("app", &["C-w", "C-a"]);
    tmux.keys("app", &["-l", "hello "]);
    tmux.wait_for("app", "› hello world").await;
    tmux.keys("app", &["Enter"]);
    tmux.wait_for("app", "first reply").await;
    assert_eq!(last_message(&server, 0).trim_end(), "hello world");

    // F2 hides the context pane and shows it again.
    tmux.keys("app", &["F2"]);
    tmux.wait_until(
        "app",
        "the pane hidden",
        std::time::Duration::from_secs(10),
        |s| !s.contains("Context"),
    )
    .await;
    tmux.keys("app", &["F2"]);
    tmux.wait_for("app", "Context").await;

    // A bracketed paste of 30 lines is one label; the 30 lines are sent.
    let paste: String = (0..30).map(|i| format!("log line {i}\n")).collect();
    let file = sb.home.path().join("paste.txt");
    std::fs::write(&file, &paste).unwrap();
    tmux.cmd(&["load-buffer", "-b", "p", file.to_str().unwrap()]);
    tmux.cmd(&["paste-buffer", "-p", "-d", "-b", "p", "-t", "app"]);
    tmux.wait_for("app", "› [pasted 30 lines").await;
    let screen = tmux.wait_for("app", "tokens]").await;
    assert!(!screen.contains("log line 29"), "{screen}");
    tmux.keys("app", &["Enter"]);
    let screen = tmux.wait_for("app", "second reply").await;
    assert!(
        screen.contains("[pasted 30 lines"),
        "folded in the chat:\n{screen}"
    );
    assert!(!screen.contains("log line 29"), "{screen}");
    assert_eq!(last_message(&server, 1), paste);

    tmux.keys("app", &["-l", "/quit"]);
    tmux.keys("app", &["Enter"]);
    tmux.wait_until(
        "app",
        "the app to quit",
        std::time::Duration::from_secs(10),
        |s| !s.contains("Enter send"),
    )
    .await;

    // The next run recalls the inputs of this workspace with Up.
    tmux.start("again", &sb.tmux_line(""));
    tmux.wait_for("again", "gpt-4o-mini · openai").await;
    tmux.keys("again", &["Up"]);
    tmux.wait_for("again", "› /quit").await;
    tmux.keys("again", &["Up"]);
    tmux.wait_for("again", "› [pasted 30 lines").await;
    tmux.keys("again", &["Up"]);
    tmux.wait_for("again", "› hello world").await;
    tmux.keys("again", &["C-c"]);
    tmux.keys("again", &["C-c"]);
    tmux.keys("again", &["C-c"]);
}
