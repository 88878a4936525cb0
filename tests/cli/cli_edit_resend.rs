//! Edit and resend: `strata chat --session ID --edit MSG TEXT` and
//! `strata undo-edit-message ID`, run as the real binary against a
//! temporary home and a local OpenAI-compatible server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::server;

use crate::support::compress_cli as compress_cli_support;

use common::Sandbox;
use compress_cli_support::*;
use serde_json::Value;
use server::{Reply, Server};

/// Every message (archived ones too) and the prompt, as `show --json` prints them.
fn shown(sb: &Sandbox, id: &str) -> (Value, Value) {
    let show = sb.json(&["show", id, "--json"]);
    (show["messages"].clone(), show["system_prompt"].clone())
}

fn events(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_after_an_edit_ends_with_the_edited_text_and_undo_restores_the_history() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(6, 200));
    let before = shown(&sb, &id);
    let server = Server::start(vec![Reply::sse(sse("Edited answer.", Some(500)))]).await;
    let text = "Request 2, reworded: fix src/parser.rs instead";
    let out = run(openai(
        &sb,
        &server.base_url(),
        &["chat", "--session", &id, "--edit", "5", "--json", text],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out);
    assert_eq!(events[0]["type"], "start");
    let edited = events
        .iter()
        .find(|e| e["type"] == "edited")
        .expect("an edited event");
    assert_eq!(edited["pos"], 5);
    assert_eq!(edited["archived"], 8, "request 2 and the seven messages after it");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(
        (last["role"].as_str(), last["content"].as_str()),
        (Some("user"), Some(text))
    );
    let sent = body.to_string();
    assert!(sent.contains("Request 1: fix src/mod1.rs") && sent.contains("Done 1:"));
    for archived in (2..6).flat_map(|i| [format!("Request {i}: fix"), format!("Done {i}:")]) {
        assert!(!sent.contains(&archived), "{archived} was archived but sent");
    }
    let now = active(&sb, &id);
    assert_eq!(now.len(), 6, "four kept, the edited text and its reply");
    assert_eq!(now[4].3, text);
    assert_eq!(now[5].3, "Edited answer.");

    // The latest change is an edit: undo-compress says so and names the command.
    let refused = sb.run(&["undo-compress", &id]);
    assert_eq!(refused.status.code(), Some(1));
    let err = common::one_line_error(&refused);
    assert!(
        err.contains("edited message") && err.contains("undo-edit-message"),
        "{err}"
    );

    let undone = sb.json(&["undo-edit-message", &id, "--json"]);
    assert_eq!(undone["edit_id"], edited["edit_id"]);
    assert_eq!(
        (undone["archived"].as_u64(), undone["restored"].as_u64()),
        (Some(2), Some(8))
    );
    assert_eq!(
        shown(&sb, &id),
        before,
        "the history before the edit, byte for byte"
    );
    let again = sb.run(&["undo-edit-message", &id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(common::one_line_error(&again).contains("no edited message to undo"));
    assert_eq!(integrity(&sb), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_users_message_is_edited_and_a_failed_resend_keeps_the_new_text() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(4, 200));
    let before = shown(&sb, &id);
    let reply = run(openai(
        &sb,
        "http://127.0.0.1:9",
        &["chat", "--session", &id, "--edit", "2", "new text"],
    ))
    .await;
    assert_eq!(reply.status.code(), Some(1));
    let err = last_line(&reply);
    assert!(
        err.contains("not a message you wrote") && err.contains("reply of the model"),
        "{err}"
    );
    let blank = run(openai(
        &sb,
        "http://127.0.0.1:9",
        &["chat", "--session", &id, "--edit", "3", " "],
    ))
    .await;
    assert_eq!(blank.status.code(), Some(2), "an empty message is a usage error");
    let without_session = sb.run(&["chat", "--edit", "3", "new text"]);
    assert_eq!(without_session.status.code(), Some(2), "--edit needs --session");
    assert_eq!(shown(&sb, &id), before);

    // No key: the provider cannot be connected, so nothing is edited and
    // nothing is sent.
    let no_key = sb.run(&[
        "--provider",
        "openai",
        "chat",
        "--session",
        &id,
        "--edit",
        "3",
        "new text",
    ]);
    assert_eq!(no_key.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&no_key.stderr);
    assert!(
        stderr.contains("key") && !stderr.contains("edited message"),
        "{stderr}"
    );
    assert_eq!(shown(&sb, &id), before);

    // Nothing listens on port 9: the text is stored, the reply fails.
    let failed = run(openai(
        &sb,
        "http://127.0.0.1:9",
        &["chat", "--session", &id, "--edit", "3", "Request 1, again"],
    ))
    .await;
    assert_eq!(failed.status.code(), Some(1));
    let now = active(&sb, &id);
    assert_eq!(now.len(), 4, "two kept, the new text and the failed reply");
    assert_eq!(now[2].3, "Request 1, again");
    assert_eq!(now[3].1, "assistant");
    sb.json(&["undo-edit-message", &id, "--json"]);
    assert_eq!(shown(&sb, &id), before);
}
