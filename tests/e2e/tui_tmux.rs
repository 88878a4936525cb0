//! End to end: the real `strata` binary in tmux, with a temporary
//! `STRATA_HOME`, against a mock OpenAI-compatible server on 127.0.0.1.
//! The reply appears, the context pane shows the layer rows and the cache
//! boundary, `/new` and `/quit` work, `strata --continue` shows the
//! previous session, and quitting with a session open prints how to resume
//! it. Skipped (with a message) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::common;
use crate::support::server;
use crate::support::tmux;

use common::Sandbox;
use server::{Reply, Server};
use std::time::{Duration, Instant};
use tmux::Tmux;

fn sse(text: &str) -> String {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 300, "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 256}}});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: {usage}\n\ndata: [DONE]\n\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
async fn the_app_chats_starts_a_new_session_quits_and_continues() {
    let server = Server::start(vec![Reply::sse(sse("Bonjour from the mock"))]).await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let tmux = Tmux::private("app");
    tmux.start("one", &sb.tmux_line(""));
    tmux.wait_for("one", "gpt-4o-mini · openai").await;
    tmux.keys("one", &["say bonjour", "Enter"]);
    let screen = tmux.wait_for("one", "Bonjour from the mock").await;
    assert!(screen.contains("cache boundary"), "{screen}");
    assert!(screen.contains("system"), "{screen}");
    assert!(screen.contains("messages"), "{screen}");
    let screen = tmux.wait_for("one", "cached 256").await;
    assert!(screen.contains("strata · say bonjour"), "{screen}");

    tmux.keys("one", &["/new", "Enter"]);
    tmux.wait_for("one", "new session ·").await;
    tmux.keys("one", &["/quit", "Enter"]);
    // The app left the alternate screen: the shell's screen is back.
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.screen("one").contains("Enter send") {
        assert!(Instant::now() < deadline, "the app did not quit");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A new session nothing was sent in leaves nothing to resume.
    let screen = tmux.screen("one");
    assert!(!screen.contains("--resume"), "{screen}");

    tmux.start("two", &sb.tmux_line("--continue"));
    let screen = tmux.wait_for("two", "Bonjour from the mock").await;
    assert!(screen.contains("strata · say bonjour"), "{screen}");
    tmux.keys("two", &["C-c"]);
    tmux.keys("two", &["C-c"]);
    // Once the terminal is restored, the way back is printed.
    let short = sb.json(&["sessions", "--json"])[0]["short_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let screen = tmux.wait_for("two", &format!("strata --resume {short}")).await;
    assert!(!screen.contains("Enter send"), "{screen}");
}

/// A tmux format value of the pane `name` (`alternate_on`, ...).
fn pane_flag(tmux: &Tmux, name: &str, flag: &str) -> String {
    let out = tmux.cmd(&["display-message", "-p", "-t", name, &format!("#{{{flag}}}")]);
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
async fn a_terminate_signal_restores_the_terminal_and_exits_with_its_code() {
    let server = Server::start(vec![Reply::sse(sse("unused"))]).await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let tmux = Tmux::private("signal");
    tmux.start(
        "one",
        &sb.tmux_line("")
            .replace("; sleep 30", "; echo \"exit=$?\"; sleep 30"),
    );
    tmux.wait_for("one", "gpt-4o-mini · openai").await;
    assert_eq!(pane_flag(&tmux, "one", "alternate_on"), "1");
    assert_eq!(pane_flag(&tmux, "one", "mouse_any_flag"), "1");
    let shell = pane_flag(&tmux, "one", "pane_pid");
    let children = std::process::Command::new("pgrep")
        .args(["-P", &shell])
        .output()
        .unwrap();
    let strata = String::from_utf8_lossy(&children.stdout).trim().to_owned();
    assert!(
        !strata.is_empty() && !strata.contains('\n'),
        "one child: {strata:?}"
    );
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &strata])
        .status()
        .unwrap();
    assert!(sent.success());
    let screen = tmux.wait_for("one", "exit=143").await;
    assert!(!screen.contains("Enter send"), "{screen}");
    assert_eq!(
        pane_flag(&tmux, "one", "alternate_on"),
        "0",
        "the alternate screen was left"
    );
    assert_eq!(
        pane_flag(&tmux, "one", "mouse_any_flag"),
        "0",
        "mouse capture was undone"
    );
}
