#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The session service holds what it read: one turn on a 10,000-message
//! session reads no message row again, builds no second token counter, and
//! answers with deltas (the turn's messages and the new context) instead of
//! a reload. Against the local OpenAI-compatible test server on 127.0.0.1.

use crate::support::server;

use crate::support::service as service_support;

use server::{Reply, Server};
use service_support::{Dirs, history, recorder};
use std::sync::{Arc, Mutex};
use strata::config::Config;
use strata::domain::{MessageStatus, Role};
use strata::runtime::counters_built;
use strata::runtime::service::{ServiceEvent, SessionService};

fn sse(text: &str) -> String {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 2}});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: {usage}\n\ndata: [DONE]\n\n"
    )
}

/// A service on a stored 10,000-message session, opened; the rows it read.
struct Opened {
    service: SessionService,
    events: Arc<Mutex<Vec<ServiceEvent>>>,
    server: Server,
    dirs: Dirs,
}

async fn open(model_section: &str) -> Opened {
    let server = Server::start(vec![Reply::sse(sse("one")), Reply::sse(sse("two"))]).await;
    let dirs = Dirs::new();
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n{model_section}\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    );
    let config = Config::parse(&text).unwrap().config;
    let id = service_support::import(
        &dirs,
        &config,
        &history(10_000, "the parser keeps its state in a table"),
    );
    let (sink, events) = recorder();
    let service = service_support::open(&dirs, config, id, false, sink);
    assert_eq!(
        service.message_rows_read(),
        10_000,
        "the session's rows are read once when it opens"
    );
    Opened {
        service,
        events,
        server,
        dirs,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_on_a_10000_message_session_reads_no_row_the_service_holds() {
    let _quiet = service_support::counters_quiet().await;
    // A window that holds the whole history: no compaction.
    let Opened {
        mut service,
        events,
        server,
        dirs: _dirs,
    } = open("context_window = 1000000").await;
    let opened = service.message_rows_read();
    let counters = counters_built();
    for (n, word) in ["first", "second"].into_iter().enumerate() {
        events.lock().unwrap().clear();
        service.send(word.into(), std::future::pending()).await.unwrap();
        assert_eq!(service.message_rows_read(), opened, "turn {n} read rows again");
        assert_eq!(counters_built(), counters, "turn {n} built another token counter");
        let events = events.lock().unwrap();
        assert!(
            !events.iter().any(|e| matches!(e, ServiceEvent::Loaded(_))),
            "a turn without a compaction sends deltas, not the whole session"
        );
        let stored: Vec<(Role, MessageStatus, String)> = events
            .iter()
            .filter_map(|e| match e {
                ServiceEvent::Message(m) => Some((m.role, m.status, m.content.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            stored.first(),
            Some(&(Role::User, MessageStatus::Complete, word.to_owned()))
        );
        assert_eq!(
            stored.last().map(|s| (s.0, s.1)),
            Some((Role::Assistant, MessageStatus::Complete))
        );
        let context = events
            .iter()
            .rev()
            .find_map(|e| match e {
                ServiceEvent::Context(c) => Some(c.clone()),
                _ => None,
            })
            .expect("the new context");
        assert_eq!(
            context.last_usage.as_ref().and_then(|u| u.prompt_tokens),
            Some(900)
        );
        // The gauge shows what is sent, and the categories add up to it.
        assert_eq!(context.prepared_tokens, Some(context.budget.input_tokens()));
        assert!(context.stored_tokens >= context.budget.input_tokens());
        assert!(matches!(events.last(), Some(ServiceEvent::TurnDone { .. })));
    }
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_inside_a_turn_is_applied_to_the_rows_the_service_holds() {
    // 128k tokens: the 10,000 messages are over the threshold, so the
    // turn compresses first (extractive summary) and then sends.
    let Opened {
        mut service,
        events,
        server,
        dirs,
    } = open("context_window = 128000\nmax_tokens = 4096\n[compression]\nsummarizer = \"extractive\"").await;
    let opened = service.message_rows_read();
    service
        .send("first".into(), std::future::pending())
        .await
        .unwrap();
    assert_eq!(
        service.message_rows_read(),
        opened,
        "the compacted history came from the turn"
    );
    let events = events.lock().unwrap();
    let view = events
        .iter()
        .rev()
        .find_map(|e| match e {
            ServiceEvent::Loaded(v) => Some(v.clone()),
            _ => None,
        })
        .expect("the rewritten session, whole");
    let archived = view.messages.iter().filter(|m| m.archived_by.is_some()).count();
    let summaries: Vec<_> = view
        .messages
        .iter()
        .filter(|m| m.kind == strata::domain::MessageKind::Summary && m.archived_by.is_none())
        .collect();
    assert!(archived > 8_000, "the originals are kept, archived: {archived}");
    assert_eq!(summaries.len(), 1);
    // As the store has it, row for row.
    let stored = strata::store::Store::open(dirs.paths().database())
        .unwrap()
        .messages(view.session.as_ref().unwrap().id, true)
        .unwrap();
    let ids = |ms: &[strata::domain::Message]| ms.iter().map(|m| (m.id, m.archived_by)).collect::<Vec<_>>();
    assert_eq!(ids(&view.messages), ids(&stored));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_first_message_in_the_app_leaves_no_session_and_gives_the_text_back() {
    let server = Server::start(vec![Reply::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    )])
    .await;
    let dirs = Dirs::new();
    let config = Config::parse(&format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    ))
    .unwrap()
    .config;
    let (sink, events) = recorder();
    let mut service = service_support::open_new(&dirs, config, true, sink);
    service
        .send("is anyone there?".into(), std::future::pending())
        .await
        .unwrap();
    let events = events.lock().unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ServiceEvent::Unsent(t) if t == "is anyone there?")),
        "the text goes back to the composer"
    );
    let last_loaded = events.iter().rev().find_map(|e| match e {
        ServiceEvent::Loaded(view) => Some(view.session.is_none()),
        _ => None,
    });
    assert_eq!(last_loaded, Some(true), "the app is back on a new session");
    let store = strata::store::Store::open(dirs.paths().database()).unwrap();
    let all = store
        .list_sessions(&strata::store::SessionQuery::default())
        .unwrap();
    assert!(all.is_empty(), "{all:?}");
}
