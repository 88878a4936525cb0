//! `strata compress`, `strata undo-compress` and automatic compression in
//! `strata chat`, run as the real binary against a temporary home and, where
//! a model summarises or answers, a local OpenAI-compatible server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::server;

use crate::support::compress_cli as compress_cli_support;

use common::Sandbox;
use compress_cli_support::*;
use serde_json::{Value, json};
use server::{Reply, Server};
use std::time::Duration;

#[test]
fn compress_prints_the_json_contract_and_undo_restores_messages_and_prompt_bytes() {
    let sb = Sandbox::new();
    let id = sb.import(&history(30, 600));
    let before = state(&sb, &id);
    let dry = sb.json(&["compress", &id, "--dry-run", "--json"]);
    assert_eq!(dry["noop"], false);
    assert_eq!(dry["compaction_id"], Value::Null);
    assert_eq!(state(&sb, &id), before, "a dry run changes nothing");

    let out = sb.json(&[
        "compress",
        &id,
        "--topic",
        "parser",
        "--summarizer",
        "extractive",
        "--json",
    ]);
    for key in [
        "noop",
        "messages_before",
        "messages_after",
        "tokens_before",
        "tokens_after",
        "summarizer",
        "topic",
        "compaction_id",
        "summary",
        "warnings",
    ] {
        assert!(out.get(key).is_some(), "missing {key} in {out}");
    }
    assert_eq!(out["noop"], false);
    assert_eq!(out["messages_before"], 60);
    assert!(out["messages_after"].as_u64().unwrap() < 20, "{out}");
    assert!(out["tokens_after"].as_u64().unwrap() < out["tokens_before"].as_u64().unwrap() / 2);
    assert_eq!(out["summarizer"], "extractive");
    assert_eq!(out["topic"], "parser");
    let summary = out["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(strata::compress::NOTICE.trim()),
        "the summary opens with the notice that it is background for reference only: {summary}"
    );

    let (after, prompt_after) = state(&sb, &id);
    assert_eq!(after.len() as u64, out["messages_after"].as_u64().unwrap());
    assert_ne!(after, before.0);
    assert!(
        after.last().unwrap().2.starts_with("Done 29"),
        "the tail keeps the last reply"
    );
    // The originals are archived, not deleted: the full export still has them.
    let all = sb.json(&["export", &id, "--format", "json"]);
    let all_text = all.to_string();
    assert!(all_text.contains("Request 0: fix src/mod0.rs"));
    let context = sb.json(&["context", &id, "--json"]);
    assert_eq!(
        context["compression"]["last_compaction"]["id"],
        out["compaction_id"]
    );
    assert!(!prompt_after.is_empty());

    let undone = sb.json(&["undo-compress", &id, "--json"]);
    assert_eq!(undone["compaction_id"], out["compaction_id"]);
    assert_eq!(
        state(&sb, &id),
        before,
        "undo restores the exact messages and prompt bytes"
    );
    assert_eq!(compactions(&sb), 0);

    let again = sb.run(&["undo-compress", &id]);
    assert_eq!(again.status.code(), Some(1));
    let err = common::one_line_error(&again);
    assert!(err.contains("no compression to undo"), "{err}");
    assert_eq!(integrity(&sb), "ok");
}

#[test]
fn a_secret_in_the_topic_is_redacted_everywhere() {
    let sb = Sandbox::new();
    let id = sb.import(&history(20, 300));
    let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef";
    let out = sb.json(&["compress", &id, "--topic", &format!("parser {key}"), "--json"]);
    let topic = out["topic"].as_str().unwrap();
    assert!(topic.starts_with("parser [REDACTED"), "{topic}");
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let dump: Vec<String> = conn
        .prepare("SELECT coalesce(topic, '') FROM compactions")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!dump.concat().contains(key));
    assert!(!out.to_string().contains(key));
}

#[test]
fn a_long_topic_is_refused_and_a_multi_line_one_is_put_on_one_line() {
    let sb = Sandbox::new();
    let id = sb.import(&history(20, 300));
    let long = "parser ".repeat(40);
    let out = sb.run(&["compress", &id, "--topic", &long, "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = common::one_line_error(&out);
    assert!(err.contains("at most 200 characters"), "{err}");
    assert_eq!(compactions(&sb), 0);
    let out = sb.run(&[
        "compress",
        &id,
        "--topic",
        "the\nparser\n\n  tables",
        "--summarizer",
        "extractive",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(
        line.lines()
            .next()
            .unwrap()
            .contains("topic \"the parser tables\""),
        "{line}"
    );
    // Escape sequences in a topic never reach the terminal or the record.
    sb.json(&["undo-compress", &id, "--json"]);
    let out = sb.json(&[
        "compress",
        &id,
        "--topic",
        "wid\u{1b}]0;PWNED\u{7}gets\u{1b}[2J \u{202e}x",
        "--json",
    ]);
    assert_eq!(out["topic"], "wid]0;PWNEDgets[2J x");
    assert!(!out.to_string().contains('\u{1b}'));
}

#[test]
fn the_summary_field_holds_the_summary_alone_when_it_was_merged() {
    let sb = Sandbox::new();
    let id = sb.import(&history(30, 600));
    let out = sb.json(&["compress", &id, "--summarizer", "extractive", "--json"]);
    let summary = out["summary"].as_str().unwrap();
    let shown = sb.json(&["show", &id, "--json"]);
    let merged = shown.to_string().contains("[End of the condensed earlier conversation. The messages below continue the session as it happened.]\\n\\nRequest");
    assert!(
        merged,
        "this history merges the summary into the next request: {shown}"
    );
    assert!(summary.trim_end().ends_with("as it happened.]"), "{summary}");
}

#[test]
fn a_short_history_is_nothing_to_compress() {
    let sb = Sandbox::new();
    let id = sb.import(&history(1, 100));
    let out = sb.json(&["compress", &id, "--json"]);
    assert_eq!(out["noop"], true);
    assert!(out["reason"].as_str().unwrap().contains("Nothing to compress"));
    assert_eq!(compactions(&sb), 0);
}

/// Scenario 8: the trigger's estimate, the tail walk's counts and
/// `strata context` come from one function and agree, with large tool-call
/// arguments in the history.
#[test]
fn context_and_compression_estimates_agree_with_large_tool_arguments() {
    let sb = Sandbox::new();
    let big = "x\"y\\z\n€".repeat(2_000);
    let args = json!({"path": "src/lib.rs", "content": big}).to_string();
    let mut messages = Vec::new();
    for i in 0..6 {
        messages.push(json!({"role": "user", "content": format!("write file {i}")}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{i}"), "type": "function", "function": {"name": "write_file", "arguments": args}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": "ok"}));
        messages.push(json!({"role": "assistant", "content": format!("wrote file {i}")}));
    }
    let id = sb.import(&serde_json::to_string(&messages).unwrap());
    let context = sb.json(&["context", &id, "--json"]);
    let dry = sb.json(&["compress", &id, "--dry-run", "--json"]);
    assert_eq!(dry["noop"], false);
    // The compression counts the stored history; the gauge shows what is sent.
    assert_eq!(context["stored_tokens"], dry["tokens_before"]);
    assert_eq!(context["input_tokens"], context["prepared_tokens"]);
    let stored = context["stored_tokens"].as_u64().unwrap();
    assert!(stored > 20_000, "the arguments are counted: {stored}");
    // What is sent: the categories add up to the prepared request.
    let categories = context["categories"].as_object().unwrap();
    let sent: u64 = ["stable", "context", "volatile", "tools", "history"]
        .iter()
        .map(|c| categories[*c]["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(sent), context["prepared_tokens"].as_u64());
}

/// Scenario 7 at the command line: the summariser's connection fails or
/// its key is refused: nothing changes and the error is reported; it
/// answers with nothing: a labelled fallback summary and a warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summariser_failures_abort_or_fall_back() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(20, 400));
    let before = state(&sb, &id);

    // Nothing listens on port 9 (discard): the connection is refused.
    let out = run(openai(
        &sb,
        "http://127.0.0.1:9",
        &["compress", &id, "--summarizer", "model"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = last_line(&out);
    assert!(
        err.contains("nothing changed") && err.contains("cannot reach"),
        "{err}"
    );
    assert_eq!(state(&sb, &id), before);

    let refused = Server::start(vec![Reply::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )])
    .await;
    let out = run(openai(
        &sb,
        &refused.base_url(),
        &["compress", &id, "--summarizer", "model"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(last_line(&out).contains("nothing changed"));
    assert_eq!(state(&sb, &id), before);
    assert_eq!(compactions(&sb), 0);

    let empty = Server::start(vec![Reply::sse("data: [DONE]\n\n")]).await;
    let out = run(openai(
        &sb,
        &empty.base_url(),
        &["compress", &id, "--summarizer", "model", "--json"],
    ))
    .await;
    let out = json_of(&out);
    assert_eq!(out["summarizer"], "fallback");
    assert!(!out["warnings"].as_array().unwrap().is_empty());
    assert!(
        out["summary"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("fallback")
    );
    assert_eq!(compactions(&sb), 1);
    assert_eq!(integrity(&sb), "ok");
}

/// A model summary is requested from the session's model with the summary
/// prompt, and stored between the notice and the end marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_summary_is_stored_with_notice_and_end_marker() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(20, 400));
    let server = Server::start(vec![Reply::sse(sse(
        "## Completed work\n- Fixed src/mod0.rs to src/mod13.rs.",
        None,
    ))])
    .await;
    let out = run(openai(
        &sb,
        &server.base_url(),
        &["compress", &id, "--topic", "tests", "--json"],
    ))
    .await;
    let out = json_of(&out);
    assert_eq!(out["summarizer"], "gpt-4o");
    let summary = out["summary"].as_str().unwrap();
    assert!(summary.contains("Fixed src/mod0.rs to src/mod13.rs."));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    let prompt = body["messages"].to_string();
    assert!(
        prompt.contains("Request 5: fix src/mod5.rs"),
        "the middle is in the summary input"
    );
    assert!(prompt.contains("tests"), "the topic is in the summary input");
}

/// Scenario 12: HTTP 400 `context_length_exceeded` in `strata chat`:
/// compress and retry once, then succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_compresses_and_retries_once_after_an_overflow_error() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(30, 600));
    let overflow = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    let server = Server::start(vec![
        Reply::json(400, overflow),
        Reply::sse(sse("## Completed work\n- Requests 0 to 23 were done.", None)),
        Reply::sse(sse("Here is the answer.", Some(900))),
    ])
    .await;
    let out = run(openai(
        &sb,
        &server.base_url(),
        &["chat", "--session", &id, "--json", "and", "now", "request", "30"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let compressed = events
        .iter()
        .find(|e| e["type"] == "compressed")
        .expect("a compressed event");
    assert_eq!(compressed["noop"], false);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "delta" && e["text"] == "Here is the answer.")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "the request, the summary, the retry");
    let first = requests[0].json()["messages"].as_array().unwrap().len();
    let retry = requests[2].json();
    let retry_messages = retry["messages"].as_array().unwrap();
    assert!(retry_messages.len() < first, "{} < {first}", retry_messages.len());
    assert!(retry.to_string().contains("Requests 0 to 23 were done."));
    assert_eq!(retry_messages.last().unwrap()["content"], "and now request 30");
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let trigger: String = conn
        .query_row("SELECT trigger FROM compactions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(trigger, "overflow");
    let show = sb.json(&["show", &id, "--json"]);
    let last = show["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"], "Here is the answer.");
    assert_eq!(last["status"], "complete");
}

/// Scenario 12, compression disabled: the clear error, nothing compressed,
/// no retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_compression_disabled_an_overflow_is_a_clear_error_and_nothing_changes() {
    let sb = Sandbox::new();
    write_config(&sb, "[compression]\nenabled = false\n");
    let id = import_openai(&sb, &history(10, 200));
    let overflow = r#"{"error":{"message":"maximum context length exceeded","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    let server = Server::start(vec![Reply::json(400, overflow)]).await;
    let out = run(openai(
        &sb,
        &server.base_url(),
        &["chat", "--session", &id, "hello"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("too long for the model's context window"), "{err}");
    assert!(
        err.contains("/compress") && err.contains("/new") && err.contains("larger window"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
    assert_eq!(compactions(&sb), 0);
    let context = sb.json(&["context", &id, "--json"]);
    assert!(
        context["compression"]["blocked"]
            .as_str()
            .unwrap()
            .contains("off")
    );
}

/// Scenario 4: a history that the protected head and tail cover is not
/// worth an automatic compression: none is tried, and it is no strike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_inside_the_protected_head_and_tail_is_neither_compressed_nor_a_strike() {
    let sb = Sandbox::new();
    // Window 16,000, reserve 4,096: the threshold is 85 % of 11,904. A
    // short first exchange (the protected start), then a message of about
    // 10,500 tokens: the request being made stays whole in the protected
    // end whatever its size, so the request is over the threshold with
    // nothing between them to summarise.
    write_config(&sb, "[model]\ncontext_window = 16000\nmax_tokens = 4096\n");
    let id = import_openai(&sb, &history(1, 200));
    let server = Server::start(vec![Reply::sse(sse("one", None))]).await;
    let long: String = serde_json::from_str::<Vec<Value>>(&history(1, 46_000)).unwrap()[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = run(openai(
        &sb,
        &server.base_url(),
        &["chat", "--session", &id, "--json", &long],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("\"compressed\""),
        "nothing to compress: {stdout}"
    );
    let sent = server.requests()[0].json()["messages"].to_string();
    assert!(sent.contains("[0]") && sent.len() > 40_000, "sent whole");
    let context = sb.json(&["context", &id, "--json"]);
    assert!(
        context["prelimit_tokens"].as_u64().unwrap() >= context["threshold"]["effective"].as_u64().unwrap(),
        "over the threshold: {context}"
    );
    assert_eq!(context["compression"]["strikes"], 0);
    assert!(context["compression"]["blocked"].is_null(), "{context}");
}

/// Scenario 4 at the command line: when almost nothing may be summarised
/// (every turn but one holds a pinned message; imported system messages
/// are pinned), no automatic compression is tried — it would save under
/// 10 % — so none is a strike and nothing pauses; the request leaves older
/// turns out and says so; a manual compression with a topic still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_turns_are_not_tried_automatically_and_manual_still_runs() {
    let sb = Sandbox::new();
    write_config(&sb, "[model]\ncontext_window = 16000\nmax_tokens = 4096\n");
    let mut messages: Vec<serde_json::Value> = serde_json::from_str(&history(12, 2_400)).unwrap();
    // Every turn but one holds a pinned message: an automatic compression
    // could summarise only that turn, too little to be worth it.
    for i in (0..messages.len()).step_by(2).rev().filter(|&i| i != 6) {
        messages.insert(
            i + 1,
            json!({"role": "system", "content": format!("Note {i}: keep it short.")}),
        );
    }
    let id = import_openai(&sb, &serde_json::to_string(&messages).unwrap());
    let server = Server::start(vec![Reply::sse(sse("one", None)), Reply::sse(sse("two", None))]).await;
    for word in ["first", "second"] {
        let out = run(openai(
            &sb,
            &server.base_url(),
            &["chat", "--session", &id, "--json", word],
        ))
        .await;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains("\"compressed\""),
            "nothing worth trying: {stdout}"
        );
        assert!(stdout.contains("were left out of this request"), "{stdout}");
    }
    assert_eq!(compactions(&sb), 0);
    let context = sb.json(&["context", &id, "--json"]);
    assert_eq!(context["compression"]["strikes"], 0);
    assert!(context["compression"]["blocked"].is_null(), "{context}");

    let manual = sb.json(&[
        "compress",
        &id,
        "--topic",
        "parser",
        "--summarizer",
        "extractive",
        "--json",
    ]);
    assert_eq!(manual["noop"], false, "{manual}");
    assert_eq!(compactions(&sb), 1);
}

/// A lockout an older strata stored as its sentence (naming both clients'
/// commands) still loads: its strikes hold, and `strata context --json`
/// says why in the command line's words.
#[test]
fn a_lockout_stored_as_an_older_sentence_loads_and_is_worded_for_the_command_line() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(4, 200));
    let old = json!({
        "status": {
            "strikes": 2,
            "fallbacks_in_row": 0,
            "locked": "Automatic compression is paused: compressions in a row made no progress; start a new session (/new, or `strata chat --new`) or compress by hand (/compress <topic>, or `strata compress ID --topic T`).",
            "cooldown_until_ms": null
        },
        "last_reading": {"prompt_tokens": 90000, "estimate": 88000},
        "compacted_since_reading": false,
        "overflow_retry_used": false
    });
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    conn.execute(
        "INSERT INTO compression_state (session_id, state, updated_at) VALUES (?1, ?2, 0)",
        rusqlite::params![id, old.to_string()],
    )
    .unwrap();
    drop(conn);
    let context = sb.json(&["context", &id, "--json"]);
    assert_eq!(context["compression"]["strikes"], 2, "{context}");
    assert_eq!(
        context["compression"]["blocked"],
        "Automatic compression is paused: compressions in a row made no progress; start a new session (`strata chat --new`) or compress by hand (`strata compress ID --topic T`)."
    );
}

/// Scenario 11: the system prompt and the output reserve alone exceed the
/// window: a clear error, no compression loop, nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_too_small_for_the_fixed_part_is_a_clear_error_without_compressing() {
    let sb = Sandbox::new();
    write_config(&sb, "[model]\ncontext_window = 3000\nmax_tokens = 2500\n");
    std::fs::write(
        sb.ws().join("AGENTS.md"),
        "Always write tests first. ".repeat(200),
    )
    .unwrap();
    let id = import_openai(&sb, &history(10, 400));
    let server = Server::start(vec![Reply::sse(sse("never", None))]).await;
    let out = run(openai(
        &sb,
        &server.base_url(),
        &["chat", "--session", &id, "hello"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("too small"), "{err}");
    assert!(server.requests().is_empty());
    assert_eq!(compactions(&sb), 0);
}

/// `kill -9` while the summariser is still answering: the session is left
/// exactly as it was, and the database is sound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_compaction_leaves_the_old_state() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(20, 400));
    let before = state(&sb, &id);
    let (_server, mut child) = stalled_summariser(&sb, &["compress", &id, "--summarizer", "model"]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(integrity(&sb), "ok");
    assert_eq!(state(&sb, &id), before);
    assert_eq!(compactions(&sb), 0);
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let archived: i64 = conn
        .query_row(
            "SELECT count(*) FROM messages WHERE archived_by IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(archived, 0, "no half-archived range");
}

/// `kill -9` while `strata chat` compresses before its request: the message
/// the user typed is already stored, the session is otherwise unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_preflight_compression_keeps_the_typed_message() {
    let sb = Sandbox::new();
    // Over the threshold, with a summary request that fits the window.
    write_config(&sb, "[model]\ncontext_window = 8000\nmax_tokens = 500\n");
    let id = import_openai(&sb, &history(24, 600));
    let before = state(&sb, &id).0.len();
    let (server, mut child) =
        stalled_summariser(&sb, &["chat", "--session", &id, "IMPORTANT user text 42"]).await;
    let summary_request = server.requests()[0].json().to_string();
    assert!(
        summary_request.contains("Request 5"),
        "the first request is the summariser's"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(integrity(&sb), "ok");
    assert_eq!(compactions(&sb), 0);
    let (after, _) = state(&sb, &id);
    assert!(
        after
            .iter()
            .any(|m| m.1 == "user" && m.2 == "IMPORTANT user text 42")
    );
    assert!(after.len() > before);
}
