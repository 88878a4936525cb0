//! The full-screen app driven with events, no terminal: the app, the real
//! session handle (store, provider) and a mock OpenAI-compatible
//! server on 127.0.0.1 serving SSE.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::server;
use crate::support::tui as tui_support;
use crate::support::tui::harness;
use strata::runtime::Op;

use crossterm::event::KeyCode;
use harness::{Harness, sse};
use server::{Reply, Server};
use std::sync::Arc;
use strata::domain::{MessageStatus, Role};
use strata::tui::{App, AppEvent, Effect, EnvLookup, Opening, Overlay};
use tui_support::{ctrl, draw, key, type_text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sending_a_message_streams_the_reply_and_stores_it() {
    let server = Server::start(vec![Reply::sse(sse(&["Hel", "lo ", "wörld"]))]).await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("say hello").await;
    let m = h.app.messages();
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[0].content, "say hello");
    assert_eq!(m[1].content, "Hello wörld");
    assert_eq!(m[1].status, MessageStatus::Complete);
    // Both are counted during the turn, and their headers say so at once.
    assert!(m.iter().all(|m| m.tokens.is_some()), "{m:?}");
    let screen = draw(&h.app, 120, 36);
    let you = format!("you  {} tok", m[0].tokens.as_ref().unwrap().tokens);
    assert!(screen.contains(&you), "{screen}");
    assert_eq!(h.app.session().unwrap().title, "say hello");
    let ctx = h.app.context().unwrap();
    assert_eq!(ctx.last_usage.as_ref().unwrap().cache_read_tokens, Some(100));
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"].as_array().unwrap().last().unwrap()["content"],
        "say hello"
    );

    // The request inspector shows the next request's wire body.
    h.command("/inspect");
    h.until("the prepared request", |a| {
        matches!(a.overlay(), Some(Overlay::Request { view: Some(_), .. }))
    })
    .await;
    let Some(Overlay::Request { view: Some(v), .. }) = h.app.overlay() else {
        unreachable!()
    };
    let next: serde_json::Value = serde_json::from_str(&v.json).unwrap();
    assert_eq!(next["stream"], true);
    assert_eq!(next["messages"][0], body["messages"][0], "same system prompt");
    assert_eq!(next["messages"].as_array().unwrap().len(), 3);
    assert_eq!(v.report.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_stream_and_keeps_the_partial_reply() {
    let first = serde_json::json!({"choices": [{"index": 0, "delta": {"content": "partial an"}, "finish_reason": null}]});
    let server = Server::start(vec![Reply::sse_hold(format!("data: {first}\n\n"))]).await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    h.command("tell me a long story");
    h.until("the first text", |a| {
        a.streaming_text().is_some_and(|t| !t.is_empty())
    })
    .await;
    let effects = h.app.handle(ctrl('c'));
    assert_eq!(effects, vec![Effect::Op(Op::Cancel)]);
    h.run(effects);
    h.until("the end of the turn", |a| !a.is_busy()).await;
    let last = h.app.messages().last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.content, "partial an");
    assert_eq!(last.status, MessageStatus::Interrupted);
    assert!(server.saw_disconnect().await, "the request was not dropped");
    // Twice always quits: the Ctrl-C after the one that cancelled.
    assert_eq!(h.app.handle(ctrl('c')), vec![Effect::Quit]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_session_then_the_old_one_is_in_the_picker_and_resumes_with_the_same_prompt() {
    let server = Server::start(vec![
        Reply::sse(sse(&["first answer"])),
        Reply::sse(sse(&["second answer"])),
    ])
    .await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("remember the parser").await;
    let old = h.app.session().unwrap().clone();

    h.command("/new");
    h.until("the new session", |a| a.session().is_none()).await;
    assert!(h.app.messages().is_empty());

    h.act(ctrl('o'));
    h.until(
        "the picker rows",
        |a| matches!(a.overlay(), Some(Overlay::Picker(p)) if p.loaded),
    )
    .await;
    let Some(Overlay::Picker(p)) = h.app.overlay() else {
        unreachable!()
    };
    assert_eq!(p.rows.len(), 1);
    assert_eq!(p.rows[0].id, old.id);
    assert_eq!(p.rows[0].messages, 2);
    // Typing searches through FTS.
    let effects = type_text(&mut h.app, "nothingmatches");
    h.run(effects);
    h.until(
        "the search",
        |a| matches!(a.overlay(), Some(Overlay::Picker(p)) if p.loaded),
    )
    .await;
    let Some(Overlay::Picker(p)) = h.app.overlay() else {
        unreachable!()
    };
    assert!(p.rows.is_empty());
    h.act(key(KeyCode::Esc));
    assert!(h.app.overlay().is_none());

    h.command(&format!("/resume {}", old.id.short()));
    h.until("the resumed session", |a| {
        a.session().is_some_and(|s| s.id == old.id)
    })
    .await;
    assert_eq!(h.app.messages().len(), 2);
    assert_eq!(h.app.messages()[1].content, "first answer");

    h.send("and now?").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let system = |i: usize| requests[i].json()["messages"][0].clone();
    assert_eq!(system(0)["role"], "system");
    assert_eq!(
        system(0),
        system(1),
        "the resumed session sends the same prompt bytes"
    );
    assert_eq!(requests[1].json()["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_that_cannot_run_while_streaming_say_so_and_unknown_ones_list_the_known() {
    let first =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": null}]});
    let server = Server::start(vec![Reply::sse_hold(format!("data: {first}\n\n"))]).await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    h.command("hi");
    h.command("/new");
    let n = h.app.notice().unwrap();
    assert!(
        n.error && n.text.contains("/new is not available while a reply streams"),
        "{n:?}"
    );
    assert_eq!(h.app.draft(), "/new", "the typed command is kept");
    h.act(ctrl('c'));
    h.until("the end of the turn", |a| !a.is_busy()).await;
    for _ in 0.."/new".len() {
        h.app.handle(key(KeyCode::Backspace));
    }
    assert_eq!(h.app.draft(), "");
    type_text(&mut h.app, "/bogus");
    assert!(h.app.handle(key(KeyCode::Enter)).is_empty());
    let n = h.app.notice().unwrap();
    assert!(
        n.text
            .starts_with("unknown command /bogus; known commands: /new /compress"),
        "{n:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compress_shows_the_feedback_line_and_the_summary_and_undo_restores() {
    let server = Server::start(vec![Reply::sse(sse(&[
        "an answer about the parser and its tests",
    ]))])
    .await;
    let mut h = Harness::start_with(
        &server,
        "[compression]\nprotect_last_n = 2\nsummarizer = \"extractive\"\n",
    );
    h.until("the connection", |a| a.context().is_some()).await;
    let questions = [
        "how does the parser work?",
        "where are its tests?",
        "and the lexer?",
        "what about errors?",
        "and recovery?",
        "and performance?",
    ];
    // Long enough that the summary is smaller than what it replaces (a
    // compression that grows the request is not applied).
    let context = " The parser keeps a table of states and a stack of pending tokens; the tests feed it files from the corpus and compare the trees.".repeat(6);
    for q in questions {
        h.send(&format!("{q}{context}")).await;
    }
    h.command("/compress parser");
    // The app previews a manual compression first; Enter stores it.
    h.until("the preview", |a| {
        matches!(a.overlay(), Some(strata::tui::Overlay::Preview(_)))
    })
    .await;
    h.act(tui_support::read_the_question(&h.app));
    h.act(key(KeyCode::Enter));
    h.until("the feedback line", |a| {
        a.notice().is_some_and(|n| n.text.starts_with("Compressed"))
    })
    .await;
    let n = h.app.notice().unwrap();
    assert!(n.text.contains("topic \"parser\""), "{n:?}");
    let m = h.app.messages();
    let summaries: Vec<_> = m
        .iter()
        .filter(|m| m.kind == strata::domain::MessageKind::Summary)
        .collect();
    assert_eq!(summaries.len(), 1, "{m:?}");
    assert!(m.iter().any(|m| m.archived_by.is_some()));
    assert!(h.app.context().unwrap().last_compaction.is_some());

    h.command("/undo-compress");
    h.until("the undo", |a| {
        a.notice()
            .is_some_and(|n| n.text.starts_with("compression undone"))
    })
    .await;
    let m = h.app.messages();
    assert_eq!(m.len(), 12, "{m:?}");
    assert!(
        m.iter()
            .all(|m| m.archived_by.is_none() && m.kind != strata::domain::MessageKind::Summary)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_cannot_be_sent_goes_back_to_the_composer() {
    // Anthropic without a key cannot connect.
    let mut h = Harness::from_config("[model]\nprovider = \"anthropic\"\n");
    h.until("the key problem", |a| a.notice().is_some_and(|n| n.error))
        .await;
    h.command("keep these words");
    h.until("the end of the attempt", |a| !a.is_busy()).await;
    assert_eq!(h.app.draft(), "keep these words");
    assert!(h.app.messages().is_empty());
    assert!(h.app.session().is_none(), "no empty session is left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_switches_this_session_at_once_and_a_resumed_session_keeps_its_own() {
    let server = Server::start(vec![
        Reply::sse(sse(&["one"])),
        Reply::sse(sse(&["two"])),
        Reply::sse(sse(&["three"])),
    ])
    .await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("first").await;
    let first = h.app.session().unwrap().id;

    h.command("/model gpt-4.1-nano");
    h.until("the switch", |a| {
        a.session().is_some_and(|s| s.model == "gpt-4.1-nano")
    })
    .await;
    h.until("the switch's notice", |a| {
        a.notice()
            .is_some_and(|n| !n.error && n.text == "now on gpt-4.1-nano (openai)")
    })
    .await;
    h.send("on nano").await;
    assert_eq!(server.requests()[1].json()["model"], "gpt-4.1-nano");

    h.command("/new");
    h.until("the new session", |a| a.session().is_none()).await;
    h.send("second session").await;
    let second = h.app.session().unwrap().clone();
    assert_ne!(second.id, first);

    h.command(&format!("/resume {first}"));
    h.until("the resumed session", |a| {
        a.session().is_some_and(|s| s.id == first)
    })
    .await;
    assert_eq!(h.app.session().unwrap().model, "gpt-4.1-nano");
    h.command(&format!("/resume {}", second.id));
    h.until("the other session", |a| {
        a.session().is_some_and(|s| s.id == second.id)
    })
    .await;
    assert_eq!(h.app.session().unwrap().model, second.model);
}

/// The status bar (last row) and the header (first row) of the app drawn at 120×36.
fn header_and_status(app: &App) -> (String, String) {
    let screen = draw(app, 120, 36);
    let rows: Vec<&str> = screen.lines().collect();
    (rows[0].to_owned(), rows[rows.len() - 1].to_owned())
}

/// A notice the status bar shows whole, as one sentence on one line.
fn assert_one_sentence_shown(app: &App) -> String {
    let n = app.notice().unwrap();
    assert!(n.error, "{n:?}");
    assert!(
        !n.text.contains(". ") && !n.text.contains('\n'),
        "not one sentence: {n:?}"
    );
    let (_, status) = header_and_status(app);
    assert!(status.contains(&n.text), "cut off in the status bar: {status}");
    n.text.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_cannot_connect_leaves_the_session_on_its_own_model_and_working() {
    let server = Server::start(vec![Reply::sse(sse(&["one"])), Reply::sse(sse(&["two"]))]).await;
    // The server is reached through OPENAI_BASE_URL; once that is gone, a
    // new openai connection has neither a base URL nor a key, and fails.
    let base_url = Arc::new(std::sync::Mutex::new(Some(format!("{}/v1", server.base_url()))));
    let read = Arc::clone(&base_url);
    let env: EnvLookup = Arc::new(move |name: &str| {
        (name == "OPENAI_BASE_URL")
            .then(|| read.lock().unwrap().clone())
            .flatten()
    });
    let mut h = Harness::launch(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n",
        Opening::New,
        env,
    );
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("first").await;
    *base_url.lock().unwrap() = None;

    h.command("/model gpt-4.1-nano");
    h.until("the refusal", |a| a.notice().is_some_and(|n| n.error))
        .await;
    let text = assert_one_sentence_shown(&h.app);
    assert!(
        text.contains("gpt-4.1-nano") && text.contains("OPENAI_API_KEY"),
        "{text}"
    );
    let (header, _) = header_and_status(&h.app);
    assert!(header.contains("gpt-4o-mini · openai"), "{header}");
    assert!(!header.contains("nano"), "{header}");

    // The previous connection and conversation answer the next message.
    h.send("still there?").await;
    let last = h.app.messages().last().unwrap();
    assert_eq!(
        (last.content.as_str(), last.status),
        ("two", MessageStatus::Complete),
        "notice: {:?}",
        h.app.notice()
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].json()["model"], "gpt-4o-mini");
    assert_eq!(
        requests[1].json()["messages"][0],
        requests[0].json()["messages"][0],
        "the same prompt bytes"
    );
    assert_eq!(h.app.session().unwrap().model, "gpt-4o-mini");

    // /reload builds from the model the session is on: nothing to change.
    h.command("/reload");
    h.until("the reload", |a| {
        a.notice().is_some_and(|n| n.text.contains("nothing changed"))
    })
    .await;
    let prompt = &h.app.context().unwrap().prompt;
    assert_eq!(prompt.version, 1);
    assert!(!prompt.text.contains("gpt-4.1-nano"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_model_refuses_a_hosted_model_in_one_sentence_and_new_still_works() {
    // The configured GGUF is missing: the start cannot connect.
    let missing = tempfile::tempdir().unwrap();
    let gguf = missing.path().join("gone.gguf");
    let mut h = Harness::from_config(&format!(
        "[model]\nprovider = \"local\"\n[providers.local]\nmodel_path = \"{}\"\n",
        gguf.display()
    ));
    h.until("the failed start", |a| a.notice().is_some_and(|n| n.error))
        .await;
    assert!(h.app.notice().unwrap().text.contains("gone.gguf"));

    h.command("/model gpt-4o");
    h.until("the refusal", |a| {
        a.notice().is_some_and(|n| n.text.contains("gpt-4o"))
    })
    .await;
    let text = assert_one_sentence_shown(&h.app);
    assert_eq!(
        text,
        "the embedded model cannot run gpt-4o; use /model FILE.gguf, or set OPENAI_API_KEY and use --provider openai"
    );
    h.command(&format!("/model {}", gguf.display()));
    h.until("the second refusal", |a| {
        a.notice().is_some_and(|n| n.text.contains("does not exist"))
    })
    .await;
    assert_one_sentence_shown(&h.app);

    h.command("/new");
    h.until("the new session", |a| {
        a.notice().is_some_and(|n| n.text.starts_with("new session"))
    })
    .await;
    assert!(h.app.context().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_cannot_be_found_opens_a_new_one_that_works() {
    let server = Server::start(vec![Reply::sse(sse(&["hello back"]))]).await;
    let mut h = Harness::launch(
        &format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
            server.base_url()
        ),
        Opening::Resume("nosuchid".into()),
        Arc::new(|_: &str| None),
    );
    h.until("the connection", |a| {
        header_and_status(a).0.contains("gpt-4o-mini · openai")
    })
    .await;
    let n = h.app.notice().unwrap();
    assert!(
        n.error && n.text.contains("no session matches 'nosuchid'"),
        "{n:?}"
    );
    assert!(h.app.context().is_some());
    h.send("hello").await;
    let last = h.app.messages().last().unwrap();
    assert_eq!(last.content, "hello back", "notice: {:?}", h.app.notice());
    assert_eq!(h.app.session().unwrap().title, "hello");
}

/// The paste: 3,000 lines into an 8k window. It folds to a label
/// the session's counter fills in, sending it asks first (it is larger
/// than the window) and Enter sends it cut. The pane's "input" and "next
/// request" are the prepared request (the paste cut to fit), the
/// categories add up to it, the stored and pre-limit figures are labelled
/// beside it, and no compression is tried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_paste_shows_the_prepared_request_everywhere_and_compresses_nothing() {
    let server = Server::start(vec![Reply::sse(sse(&["ok"])), Reply::sse(sse(&["fine"]))]).await;
    let mut h = Harness::from_config(&format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\ncontext_window = 8192\nmax_tokens = 1024\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    ));
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("a short question first").await;
    let paste: String = (0..3_000)
        .map(|i| {
            format!(
                "2026-12-01 12:00:{:02} worker-{i} processed batch {i} in {} ms\n",
                i % 60,
                i * 7
            )
        })
        .collect();
    h.act(AppEvent::Paste(paste));
    h.until("the paste's count", |a| a.draft().ends_with("tokens]"))
        .await;
    assert!(
        h.app.draft().starts_with("[pasted 3,000 lines · "),
        "{}",
        h.app.draft()
    );
    h.act(key(KeyCode::Enter));
    h.until("the question", |a| {
        a.question().is_some_and(|q| q.starts_with("message "))
    })
    .await;
    assert!(!h.app.is_busy(), "nothing was sent yet");
    h.act(key(KeyCode::Enter));
    assert!(h.app.is_busy());
    h.until("the reply", |a| !a.is_busy()).await;
    let screen = draw(&h.app, 120, 36);
    assert!(
        screen.contains("[pasted 3,000 lines · "),
        "folded in the chat:\n{screen}"
    );
    h.until("the context after the turn", |a| {
        a.context().is_some_and(|c| c.stored_tokens > 30_000)
    })
    .await;
    let c = h.app.context().unwrap();
    let prepared = c.prepared_tokens.expect("the request can be prepared");
    assert_eq!(
        prepared,
        c.budget.input_tokens(),
        "the categories add up to what is sent"
    );
    assert!(prepared <= 8_192 - 1_024, "{prepared}");
    assert!(
        c.stored_tokens > 10 * prepared,
        "{} vs {prepared}",
        c.stored_tokens
    );
    assert!(c.prelimit_tokens.is_some_and(|p| p < c.stored_tokens));
    assert!(c.blocked_reason.is_none());
    let screen = draw(&h.app, 140, 40);
    let figure = |label: &str| {
        screen
            .lines()
            .find_map(|l| l.split(label).nth(1))
            .map(|rest| {
                rest.split_whitespace()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches('~')
                    .to_owned()
            })
            .unwrap_or_else(|| panic!("no '{label}' on screen:\n{screen}"))
    };
    assert_eq!(figure("input "), figure("next request "), "{screen}");
    assert!(
        screen.contains("stored"),
        "the stored figure is labelled:\n{screen}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "no summariser call, no compression");
    let sent = requests[1].json();
    let last = sent["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .len();
    assert!(last < 40_000, "the paste was cut to fit: {last} bytes");
}

/// The pane follows the turn: once the request is sent, its figures are
/// the request in flight (the new message in it), not the last turn's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pane_shows_the_request_in_flight_while_the_reply_runs() {
    let held =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wait\"},\"finish_reason\":null}]}\n\n";
    let server = Server::start(vec![Reply::sse(sse(&["ok"])), Reply::sse_hold(held)]).await;
    let mut h = Harness::from_config(&format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\ncontext_window = 8192\nmax_tokens = 1024\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    ));
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("a short question first").await;
    let before = h.app.context().unwrap().stored_tokens;
    let paste: String = (0..3_000)
        .map(|i| format!("log line {i} of the paste\n"))
        .collect();
    h.act(AppEvent::Paste(paste));
    h.act(key(KeyCode::Enter));
    h.until("the question", |a| {
        a.question().is_some_and(|q| q.starts_with("message "))
    })
    .await;
    h.act(key(KeyCode::Enter));
    h.until("the context of the request in flight", |a| {
        a.is_busy() && a.context().is_some_and(|c| c.stored_tokens > before + 10_000)
    })
    .await;
    let c = h.app.context().unwrap();
    assert_eq!(c.prepared_tokens, Some(c.budget.input_tokens()));
    assert!(c.prepared_tokens.unwrap() < c.stored_tokens);
    h.act(ctrl('c'));
    h.until("the cancel", |a| !a.is_busy()).await;
}
