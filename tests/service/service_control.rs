#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The app's context control through the session service, against the
//! local test server: the context list's rows, an exclusion the next
//! request leaves out (and the context the pane gets afterwards), a
//! previewed compression that stores nothing until applied and then stores
//! the edited summary, and an edit and resend whose request ends with the
//! new text.

use crate::support::server;
use crate::support::tool_sse;

use crate::support::service as service_support;

use server::{Reply, Server};
use service_support::{Dirs, history, import, open, recorder};
use strata::config::Config;
use strata::domain::{Message, MessageKind, Role};
use strata::pipeline::RowState;
use strata::runtime::service::{Command, CompressAsk, ServiceEvent};
use strata::store::Store;

fn config(server: &Server) -> Config {
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n[compression]\nsummarizer = \"extractive\"\n",
        server.base_url()
    );
    Config::parse(&text).unwrap().config
}

fn active(dirs: &Dirs, id: strata::domain::SessionId) -> Vec<Message> {
    Store::open(dirs.paths().database())
        .unwrap()
        .messages(id, false)
        .unwrap()
}

fn contents(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_an_exclusion_and_the_next_request_agree() {
    let server = Server::with(|_| Reply::sse(tool_sse::openai_text("ok"))).await;
    let dirs = Dirs::new();
    let config = config(&server);
    let id = import(&dirs, &config, &history(6, "the parser keeps a table"));
    let (sink, events) = recorder();
    let mut service = open(&dirs, config, id, true, sink);
    service.run(Command::ContextList).await.unwrap();
    let rows = events
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find_map(|e| match e {
            ServiceEvent::ContextList(rows) => Some(rows.clone()),
            _ => None,
        })
        .expect("the rows");
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.state == RowState::Kept), "{rows:?}");
    let second = active(&dirs, id)[1].id;
    events.lock().unwrap().clear();
    service
        .run(Command::Exclude {
            message: second,
            on: true,
        })
        .await
        .unwrap();
    let seen = events.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|e| matches!(e, ServiceEvent::Notice(n) if n.starts_with("Excluded message 2"))),
        "{seen:?}"
    );
    let excluded_row = seen.iter().rev().find_map(|e| match e {
        ServiceEvent::ContextList(rows) => rows.iter().find(|r| r.message_id == second).cloned(),
        _ => None,
    });
    assert_eq!(
        excluded_row.map(|r| r.state),
        Some(RowState::Excluded),
        "the list follows"
    );
    let context = seen.iter().rev().find_map(|e| match e {
        ServiceEvent::Context(c) => Some(c.clone()),
        _ => None,
    });
    let report = context.expect("the pane gets the new context").report;
    assert!(
        report
            .iter()
            .any(|r| r.message_id == second && r.action == strata::pipeline::Action::Excluded),
        "{report:?}"
    );
    service.send("next".into(), std::future::pending()).await.unwrap();
    let sent = contents(&server.requests().last().unwrap().json());
    assert!(!sent.iter().any(|c| c.contains("message 1:")), "{sent:?}");
    // The user messages on either side of it are sent (merged into one).
    assert!(
        sent.iter()
            .any(|c| c.contains("message 0:") && c.contains("message 2:")),
        "{sent:?}"
    );
}

/// The compression preview the service sent.
fn preview_of(
    events: &std::sync::Arc<std::sync::Mutex<Vec<ServiceEvent>>>,
) -> strata::runtime::CompressOutcome {
    events
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match e {
            ServiceEvent::CompressPreview(o) => Some((**o).clone()),
            _ => None,
        })
        .expect("a preview")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_stores_nothing_until_applied_and_then_the_edited_summary() {
    let server = Server::with(|_| Reply::sse(tool_sse::openai_text("ok"))).await;
    let dirs = Dirs::new();
    let config = config(&server);
    let body = "the parser keeps its state in a small table and the tests cover it; ".repeat(30);
    let id = import(&dirs, &config, &history(24, &body));
    let (sink, events) = recorder();
    let mut service = open(&dirs, config, id, true, sink);
    let before = active(&dirs, id);
    service
        .run(Command::Compress(CompressAsk {
            keep_last: Some(2),
            preview: true,
            ..CompressAsk::default()
        }))
        .await
        .unwrap();
    let preview = preview_of(&events);
    assert!(preview.preview);
    assert_eq!(active(&dirs, id), before, "nothing stored by the preview");
    let edited = format!(
        "{}\n\nEdited by hand: keep the parser notes.",
        preview.summary.clone().unwrap()
    );
    service
        .run(Command::ApplyPreview {
            summary: edited,
            edited: true,
            force: true,
        })
        .await
        .unwrap();
    let after = active(&dirs, id);
    let summary = after
        .iter()
        .find(|m| m.kind == MessageKind::Summary)
        .expect("a summary");
    assert!(
        summary.content.contains("Edited by hand: keep the parser notes."),
        "{}",
        summary.content
    );
    let store = Store::open(dirs.paths().database()).unwrap();
    assert!(store.compactions(id).unwrap().last().unwrap().edited);
    // The last two exchanges stay verbatim.
    let users: Vec<_> = after
        .iter()
        .filter(|m| m.role == Role::User && m.kind == MessageKind::Normal)
        .collect();
    assert_eq!(users.len(), 2, "{after:?}");
    // A second apply has nothing waiting.
    let again = service
        .run(Command::ApplyPreview {
            summary: "x".into(),
            edited: true,
            force: false,
        })
        .await;
    assert!(again.unwrap_err().to_string().contains("no compression preview"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_is_not_stored_over_a_history_that_moved_since() {
    let server = Server::with(|_| Reply::sse(tool_sse::openai_text("ok"))).await;
    let dirs = Dirs::new();
    let config = config(&server);
    let body = "the parser keeps its state in a small table and the tests cover it; ".repeat(30);
    let id = import(&dirs, &config, &history(24, &body));
    let (sink, events) = recorder();
    let mut service = open(&dirs, config, id, true, sink);
    service
        .run(Command::Compress(CompressAsk {
            preview: true,
            ..CompressAsk::default()
        }))
        .await
        .unwrap();
    let summary = preview_of(&events).summary.expect("a summary");
    // A turn while the preview waits moves the protected end.
    service
        .send("one more question".into(), std::future::pending())
        .await
        .unwrap();
    let before = active(&dirs, id);
    let refused = service
        .run(Command::ApplyPreview {
            summary,
            edited: false,
            force: false,
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("the conversation changed since the preview"),
        "{refused}"
    );
    assert_eq!(active(&dirs, id), before, "nothing stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_and_resend_sends_the_new_text_last_and_undo_restores_the_history() {
    let server = Server::with(|_| Reply::sse(tool_sse::openai_text("ok"))).await;
    let dirs = Dirs::new();
    let config = config(&server);
    let id = import(&dirs, &config, &history(6, "a question"));
    let (sink, events) = recorder();
    let mut service = open(&dirs, config, id, true, sink);
    let before = active(&dirs, id);
    let third = before[2].id;
    service
        .edit_and_send(third, "the edited question".into(), std::future::pending())
        .await
        .unwrap();
    let edited = events.lock().unwrap().iter().find_map(|e| match e {
        ServiceEvent::Edited(edit) => Some((edit.message_id, edit.pos, edit.archived)),
        _ => None,
    });
    assert_eq!(
        edited,
        Some((third, 3, 4)),
        "the typed edit: the third of six messages, it and the three after it archived"
    );
    let last_context = events.lock().unwrap().iter().rev().find_map(|e| match e {
        ServiceEvent::Context(c) => Some(c.clone()),
        _ => None,
    });
    assert!(
        last_context.expect("a context").last_compaction.is_none(),
        "an edit is not a compaction for the pane"
    );
    let sent = contents(&server.requests().last().unwrap().json());
    assert_eq!(
        sent.last().map(String::as_str),
        Some("the edited question"),
        "{sent:?}"
    );
    assert!(
        !sent
            .iter()
            .any(|c| c.starts_with("message 2:") || c.starts_with("message 5:")),
        "{sent:?}"
    );
    service.run(Command::UndoEditMessage).await.unwrap();
    assert_eq!(active(&dirs, id), before, "byte for byte");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_picker_lists_the_server_s_models_with_the_current_one_first() {
    let server = Server::with(|_| Reply::sse(tool_sse::openai_text("ok"))).await;
    server.answer_discovery(
        "/v1/models",
        Reply::json(
            200,
            r#"{"object":"list","data":[{"id":"qwen2.5:7b"},{"id":"gpt-4o-mini"},{"id":"llama3.2"}]}"#,
        ),
    );
    let dirs = Dirs::new();
    let (sink, events) = recorder();
    let mut service = service_support::open_new(&dirs, config(&server), true, sink);
    service
        .run(Command::ListChoices(strata::runtime::service::ChoiceKind::Model))
        .await
        .unwrap();
    let names: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match e {
            ServiceEvent::Choices { items, .. } => Some(items.iter().map(|c| c.name.clone()).collect()),
            _ => None,
        })
        .expect("the items");
    assert_eq!(names, ["gpt-4o-mini", "llama3.2", "qwen2.5:7b"]);
}
