//! Failures said as failures, in the app with its real session handle
//! against the loopback server: a stream that breaks is not a cancel, a
//! failed turn shows its error in the transcript, and a failed or empty
//! reply is never counted as history left out to fit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::server;
use crate::support::tui::harness;

use harness::Harness;
use server::{Reply, Server};
use strata::domain::{MessageStatus, Role};

fn first_chunk(text: &str) -> String {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!("data: {chunk}\n\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_breaks_is_said_as_a_failure_not_a_cancel() {
    let server = Server::start(vec![Reply::sse_cut(first_chunk("half a rep"))]).await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("tell me a story").await;
    let last = h.app.messages().last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.status, MessageStatus::Interrupted);
    assert_eq!(last.content, "half a rep");
    let badges = strata::tui::badges(last, None);
    assert_eq!(badges, ["failed mid-reply"], "the badge");
    let notice = h.app.notice().unwrap();
    assert!(notice.error, "{notice:?}");
    assert!(
        notice.text.starts_with("the reply broke off: ") && notice.text.contains("broke during the reply"),
        "the status line says what broke: {}",
        notice.text
    );
    assert!(
        !h.app
            .notices_log()
            .iter()
            .any(|(n, _)| n.contains("the reply was interrupted")),
        "never called a cancel: {:?}",
        h.app.notices_log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_shows_its_error_in_the_transcript_and_is_not_counted_as_left_out() {
    let server = Server::start(vec![
        Reply::sse(harness::sse(&["Hi"])),
        Reply::json(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
        ),
        Reply::sse(harness::sse(&["Hello again"])),
    ])
    .await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    // (A first message refused is not kept at all: the session starts
    // with a reply.)
    h.send("hi").await;
    h.send("hello").await;
    let failed = h.app.messages().last().unwrap().clone();
    assert_eq!(
        (failed.role, failed.status),
        (Role::Assistant, MessageStatus::Error)
    );
    let error = failed.error.clone().expect("the reply keeps its error");
    assert!(error.contains("401") || error.contains("key"), "{error}");
    let screen = crate::support::tui::draw(&h.app, 120, 36);
    assert!(screen.contains("✗ "), "the transcript shows it: {screen}");
    assert!(
        screen.contains(&error[..error.len().min(30)]),
        "{error}: {screen}"
    );

    h.send("hello?").await;
    assert_eq!(h.app.messages().last().unwrap().content, "Hello again");
    assert!(
        !h.app.notices_log().iter().any(|(n, _)| n.contains("left out")),
        "an empty failed reply is not history left out to fit: {:?}",
        h.app.notices_log()
    );
    // Kept in the store, for the next time the session is opened.
    let store = strata::store::Store::open(strata::config::Paths::under(h._home.path()).database()).unwrap();
    let stored = store.message(failed.id).unwrap().unwrap();
    assert_eq!(stored.error.as_deref(), Some(error.as_str()));
    // Never sent to the model.
    let body = server.requests().last().unwrap().json().to_string();
    assert!(!body.contains(&error[..error.len().min(30)]), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_error_whose_count_is_implausible_never_shrinks_the_window() {
    // The second request is refused as 250,000 tokens long (it is about
    // 2k); every other request is answered.
    let overflow = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 250000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let server = Server::with(move |n| match n {
        1 => Reply::json(400, overflow),
        _ => Reply::sse(harness::sse(&["Fine."])),
    })
    .await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    h.send(&"a question of some length ".repeat(80)).await;
    h.send("and another").await;
    h.send("and a normal turn after it").await;
    let last = h.app.messages().last().unwrap();
    assert_eq!(
        (last.role, last.status),
        (Role::Assistant, MessageStatus::Complete)
    );
    assert_eq!(last.content, "Fine.");
    let log = h.app.notices_log();
    assert!(
        !log.iter()
            .any(|(n, _)| n.contains("too small") || n.contains("context window is")),
        "no window was taken from the error: {log:?}"
    );
    let window = h.app.context().unwrap().budget.window;
    assert_eq!(window, 128_000, "the pane's window");
    // Every request after the error was planned for the same window: none
    // was cut to a few hundred tokens.
    for r in &server.requests()[2..] {
        let body = r.json();
        assert!(body.to_string().len() > 1_000, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_summariser_is_stopped_from_the_app_and_nothing_is_stored() {
    // Six turns are answered; the seventh request (the summariser's)
    // never ends; the one after it is answered.
    let server = Server::with(|n| match n {
        6 => Reply::sse_hold(first_chunk("The conversation so far")),
        _ => Reply::sse(harness::sse(&["an answer about the parser and its tests"])),
    })
    .await;
    let mut h = Harness::start_with(
        &server,
        "[compression]\nprotect_last_n = 2\nsummarizer = \"model\"\n",
    );
    h.until("the connection", |a| a.context().is_some()).await;
    let context = " The parser keeps a table of states and a stack of pending tokens.".repeat(6);
    for q in [
        "how?",
        "where?",
        "and the lexer?",
        "errors?",
        "recovery?",
        "speed?",
    ] {
        h.send(&format!("{q}{context}")).await;
    }
    let before = h.app.messages().len();
    h.command("/compress");
    // The summariser's request arrives and is held: no event follows it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server.requests().len() < 7 {
        assert!(
            std::time::Instant::now() < deadline,
            "the summariser was never asked"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let status = crate::support::tui::draw(&h.app, 120, 36);
    assert!(
        status.lines().last().unwrap().contains("compressing") && status.contains("Esc stops"),
        "{status}"
    );
    h.act(crate::support::tui::key(crossterm::event::KeyCode::Esc));
    h.until("the compression to stop", |a| {
        a.notice()
            .is_some_and(|n| n.text == "compression cancelled; nothing was stored")
    })
    .await;
    h.until("idle", |a| {
        crate::support::tui::draw(a, 120, 36)
            .lines()
            .last()
            .unwrap()
            .contains(" idle ")
    })
    .await;
    assert!(h.app.overlay().is_none());
    assert_eq!(h.app.messages().len(), before);
    assert!(h.app.context().unwrap().last_compaction.is_none());
    h.send("and now?").await;
    assert_eq!(
        h.app.messages().last().unwrap().content,
        "an answer about the parser and its tests"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_is_stopped_from_the_app_and_the_session_keeps_its_prompt() {
    let server = Server::start(vec![Reply::sse(harness::sse(&["ok"]))]).await;
    // The prompt's command makes every build take a second: the reload is
    // still running when Esc comes.
    let mut h = Harness::start_with(&server, "[prompt]\ncontext_cmd = \"sleep 1; echo built\"\n");
    let ws = h._ws.path().to_path_buf();
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("hello").await;
    std::fs::write(ws.join("AGENTS.md"), "Answer in haiku.\n").unwrap();
    h.command("/reload");
    let status = crate::support::tui::draw(&h.app, 120, 36);
    assert!(
        status.lines().last().unwrap().contains("reloading the prompt") && status.contains("Esc stops"),
        "{status}"
    );
    h.act(crate::support::tui::key(crossterm::event::KeyCode::Esc));
    h.until("the reload to stop", |a| {
        a.notice()
            .is_some_and(|n| n.text == "the reload was stopped; the session keeps its prompt")
    })
    .await;
    // Nothing was stored: the next reload makes version 2.
    h.command("/reload");
    h.until_within(std::time::Duration::from_secs(20), "the new version", |a| {
        a.notice()
            .is_some_and(|n| n.text.contains("rebuilt as version 2"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_the_wait_for_a_slow_context_command_and_nothing_is_stored() {
    let server = Server::start(vec![Reply::sse(harness::sse(&["ok"]))]).await;
    let marker = format!("late-{}", std::process::id());
    let mut h = Harness::start_with(
        &server,
        &format!("[prompt]\ncontext_cmd = \"sleep 30; echo {marker}\"\n"),
    );
    h.until("the connection", |a| a.context().is_some()).await;
    h.command("hello");
    assert!(h.app.is_busy());
    // The session's prompt is being built: the command runs.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    h.act(crate::support::tui::ctrl('c'));
    h.until_within(std::time::Duration::from_secs(5), "the turn to end", |a| {
        !a.is_busy()
    })
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(h.app.session().is_none(), "no session was stored");
    assert_eq!(h.app.draft(), "hello", "the message is back in the composer");
    assert!(server.requests().is_empty(), "nothing was sent");
    // The command was stopped with the turn, not left to run.
    let running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
            std::fs::read(p.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while running() {
        assert!(std::time::Instant::now() < deadline, "the command still runs");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
