//! Tools end to end, the parts about what a result costs and what survives:
//! spill and paging at two windows, the tools' share of the context equal to
//! what the request carries, the tools hash of every request, a file change
//! undone, and an overflow in round two compressed and retried once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::agent;
use crate::support::common;
use crate::support::server;
use crate::support::tool_sse;

use agent::{events, openai, run};
use common::Sandbox;
use serde_json::{Value, json};
use server::{Recorded, Reply, Server};
use strata::tokens::{Encoding, TiktokenCounter, tool_schema_tokens};
use tool_sse::{openai_calls, openai_text};

fn last_content(request: &Recorded) -> String {
    request.json()["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The spill path a cut result names (`… in /…/spill/<session>/<id>.txt …`).
fn spill_path(text: &str) -> String {
    let start = text.find('/').unwrap();
    let end = start + text[start..].find(".txt").unwrap() + 4;
    text[start..end].to_owned()
}

/// Round one prints 60,000 numbered lines (348,894 characters); round two
/// pages the spill file the result names; round three answers.
async fn spill_and_page(window: u64) -> (Vec<Recorded>, Vec<Value>, Sandbox) {
    let server = Server::answering(|n, request| match n {
        0 => Reply::sse(openai_calls(&[("big", "shell", r#"{"command":"seq 1 60000"}"#)])),
        1 => {
            let path = spill_path(&last_content(request));
            let args = json!({"path": path, "offset": 30000, "limit": 3}).to_string();
            Reply::sse(openai_calls(&[("page", "read_file", &args)]))
        }
        _ => Reply::sse(openai_text("Line 30000 says 30000.")),
    })
    .await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        // Below 16,000 tokens tools are off unless asked for.
        format!("[model]\ncontext_window = {window}\nmax_tokens = 1024\n[tools]\nenabled = true\n"),
    )
    .unwrap();
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "--approve", "all", "count"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (server.requests(), events(&out), sb)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_result_is_cut_at_128k_previewed_at_8k_spilled_whole_and_paged_in_both() {
    for (window, previewed) in [(128_000, false), (8_192, true)] {
        let (requests, ev, sb) = spill_and_page(window).await;
        assert_eq!(requests.len(), 3, "window {window}");
        let result = last_content(&requests[1]);
        let chars = result.chars().count();
        if previewed {
            assert!(chars < 2_500, "window {window}: a preview, {chars} chars");
        } else {
            // 60,000 short lines: the 2,000-line limit cuts first.
            assert!(
                chars <= 51_000 && result.lines().count() <= 2_003,
                "window {window}: {chars} chars"
            );
            assert!(
                result.contains("lines") && result.contains("cut"),
                "a marker says what was cut"
            );
            assert!(result.starts_with("1\n2\n3\n"), "the head is kept");
            assert!(result.contains("60000"), "and the tail");
        }
        let path = spill_path(&result);
        assert!(path.starts_with(sb.home.path().to_str().unwrap()), "{path}");
        let whole = std::fs::read_to_string(&path).unwrap();
        assert_eq!(whole.lines().count(), 60_001, "spilled whole, with the exit line");
        assert!(whole.starts_with("1\n2\n") && whole.contains("\n60000\n"));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let paged = last_content(&requests[2]);
        assert!(
            paged.contains("30000\t30000") && paged.contains("30002\t30002"),
            "{paged}"
        );
        let results: Vec<&Value> = ev.iter().filter(|e| e["type"] == "tool_result").collect();
        assert_eq!(results[0]["spilled_to"], path.as_str());
        assert_eq!(results[0]["truncated"], true);
        assert_eq!(results[0]["previewed"], previewed);
        assert!(results[1]["spilled_to"].is_null(), "read_file is never spilled");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_share_of_the_context_is_what_the_request_carries_and_each_request_records_its_hash() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[("l", "list_dir", "{}")])),
        _ => Reply::sse(openai_text("done")),
    })
    .await;
    let sb = Sandbox::new();
    let out = run(openai(&sb, &server, &["chat", "--json", "--new", "look"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let session = events(&out)[0]["session_id"].as_str().unwrap().to_owned();
    let body = server.requests()[1].json();
    let tools = body["tools"].as_array().unwrap().clone();
    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    let carried = u64::from(tool_schema_tokens(&counter, &tools));

    let context = sb.json(&["context", &session, "--json"]);
    let category = &context["categories"]["tools"];
    assert_eq!(category["tokens"].as_u64().unwrap(), carried);
    let items = category["items"].as_array().unwrap();
    assert_eq!(items.len(), tools.len(), "one row per tool");
    assert_eq!(items[0]["name"], "read_file");
    let sum: u64 = items.iter().map(|i| i["tokens"].as_u64().unwrap()).sum();
    assert_eq!(sum, carried);
    assert!(context["tools_off"].is_null());

    // Every request of the turn recorded the same hash of its tools array.
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let hashes: Vec<Option<String>> = conn
        .prepare("SELECT tools_sha256 FROM usage ORDER BY num")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(hashes.len(), 2);
    let first = hashes[0].clone().unwrap();
    assert_eq!(first.len(), 64);
    assert_eq!(hashes[1].as_deref(), Some(first.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_made_without_tools_resumes_with_the_same_prompt_bytes_and_gains_tools() {
    let server = Server::start(vec![
        Reply::sse(openai_text("one")),
        Reply::sse(openai_text("two")),
    ])
    .await;
    let sb = Sandbox::new();
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "--tools", "off", "first"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(openai(&sb, &server, &["chat", "--json", "-c", "second"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let requests = server.requests();
    let (a, b) = (requests[0].json(), requests[1].json());
    assert_eq!(
        a["messages"][0], b["messages"][0],
        "the frozen prompt, byte for byte"
    );
    assert!(a.get("tools").is_none());
    assert!(
        b["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "tools ride in the array"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_is_undone_with_undo_edit_and_not_after_the_file_changed() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[("r", "read_file", r#"{"path":"conf.toml"}"#)])),
        1 => Reply::sse(openai_calls(&[(
            "e",
            "edit_file",
            r#"{"path":"conf.toml","old_string":"level = 1","new_string":"level = 2"}"#,
        )])),
        _ => Reply::sse(openai_text("edited")),
    })
    .await;
    let sb = Sandbox::new();
    let file = sb.ws().join("conf.toml");
    std::fs::write(&file, "level = 1\n").unwrap();
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "--approve", "all", "raise it"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "level = 2\n");
    let session = events(&out)[0]["session_id"].as_str().unwrap().to_owned();
    let said = sb.ok(&["undo-edit", &session]);
    assert!(said.contains("conf.toml"), "{said}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "level = 1\n");
    let again = sb.run(&["undo-edit", &session]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("no file change left"));
}

fn long_history(turns: usize) -> String {
    let mut messages = Vec::new();
    for t in 0..turns {
        let words: String = (0..220).map(|w| format!("topic{t} word{w} ")).collect();
        messages.push(json!({"role": "user", "content": format!("question {t}: {words}")}));
        messages.push(json!({"role": "assistant", "content": format!("answer {t}: {words}")}));
    }
    serde_json::to_string(&messages).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_in_round_two_compresses_and_retries_that_round_once() {
    let overflow = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
    let server = Server::with(move |n| match n {
        0 => Reply::sse(openai_calls(&[("l", "list_dir", "{}")])),
        1 => Reply::json(400, overflow),
        _ => Reply::sse(openai_text("fine now")),
    })
    .await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[compression]\nsummarizer = \"extractive\"\n",
    )
    .unwrap();
    let file = sb.home.path().join("history.json");
    std::fs::write(&file, long_history(20)).unwrap();
    let imported = run(openai(&sb, &server, &["import", file.to_str().unwrap()])).await;
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let id = String::from_utf8(imported.stdout).unwrap().trim().to_owned();
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--session", &id, "go on"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "round one, round two, its one retry");
    let sizes: Vec<usize> = requests
        .iter()
        .map(|r| r.json()["messages"].as_array().unwrap().len())
        .collect();
    assert!(sizes[2] < sizes[1], "the retry went out compressed: {sizes:?}");
    let retry = requests[2].json();
    let m = retry["messages"].as_array().unwrap();
    let n = m.len();
    assert_eq!(
        m[n - 1]["tool_call_id"],
        "l",
        "the round's result is still paired"
    );
    assert_eq!(m[n - 2]["tool_calls"][0]["id"], "l");
    let ev = events(&out);
    assert!(ev.iter().any(|e| e["type"] == "compressed"), "{ev:?}");
    assert_eq!(ev.last().unwrap()["status"], "complete");
}
