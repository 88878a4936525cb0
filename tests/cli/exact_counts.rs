//! Counts against a llama.cpp server come from its `POST /tokenize`, asked
//! ahead of need: exact when it answers (the counts are its own, stored
//! under `llama.cpp:<model>`), the `o200k_base` estimate with a log line
//! when it does not (an older server, an HTTP error), never an error. The
//! real binary against the local test server, which answers the window
//! question as llama.cpp does (the real `llama-server` is tested in
//! `tests/llama_server.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::compress_cli as compress_cli_support;
use crate::support::server;

use common::Sandbox;
use compress_cli_support::*;
use serde_json::Value;
use server::{Reply, Server};

/// A llama.cpp server (its `GET /v1/models` answer) whose `/tokenize`
/// answers `tokenize`, replying "Hi." with 40 prompt tokens.
async fn llama_cpp(tokenize: Option<Reply>) -> Server {
    let server = Server::start(vec![Reply::sse(sse("Hi.", Some(40)))]).await;
    let models = std::fs::read_to_string(format!(
        "{}/tests/fixtures/served_window/llama_cpp_models.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    server.answer_discovery("/v1/models", Reply::json(200, &models));
    if let Some(reply) = tokenize {
        server.answer_discovery("/tokenize", reply);
    }
    server
}

async fn chat(sb: &Sandbox, server: &Server) -> Vec<Value> {
    let args = [
        "chat",
        "--json",
        "--tools",
        "off",
        "--model",
        "smollm2",
        "hello there",
    ];
    let out = run(openai(sb, &server.base_url(), &args)).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// `strata ARGS --model smollm2` against `server`, its JSON output.
async fn json(sb: &Sandbox, server: &Server, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["--model", "smollm2"]);
    json_of(&run(openai(sb, &server.base_url(), &args)).await)
}

async fn context(sb: &Sandbox, server: &Server, id: &str) -> Value {
    json(sb, server, &["context", id, "--json", "--no-mcp"]).await
}

fn logs(sb: &Sandbox) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(sb.home.path().join("data/logs")).unwrap() {
        text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

#[tokio::test]
async fn the_server_s_counts_are_used_exactly_and_stored_under_its_tokenizer() {
    let sb = Sandbox::new();
    // Every text is three tokens to this server, which o200k_base never says
    // of "hello there" (2) or the role names (1).
    let server = llama_cpp(Some(Reply::json(200, r#"{"tokens":[1,2,3]}"#))).await;
    let events = chat(&sb, &server).await;
    assert!(of(&events, "error").is_empty(), "{events:?}");
    let usage = of(&events, "usage")[0];
    // The prompt (3) with its message framing (3 + "system" 1) and the
    // reply's priming (3), and the user's message: 3 + "user" 3 + 3.
    assert_eq!(usage["estimated_prompt_tokens"], 10 + 9, "{usage}");
    let id = events
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned();
    let asked = server.tokenize_requests().len();
    assert!(asked > 0);
    let ctx = context(&sb, &server, &id).await;
    assert_eq!(ctx["exact"], true, "{ctx}");
    assert_eq!(ctx["tokenizer"], "llama.cpp:smollm2");
    let rows = &ctx["categories"]["history"]["items"];
    assert_eq!(rows[0]["name"], "user");
    assert_eq!(rows[0]["tokens"], 9, "{rows}");
    assert_eq!(rows[1]["name"], "assistant");
    assert_eq!(rows[1]["tokens"], 9, "{rows}");
    // The user's message was counted by the first process and stored:
    // the second asks for neither it nor anything it asked before but the
    // reply and the prompt's texts.
    let again: Vec<String> = server.tokenize_requests()[asked..]
        .iter()
        .map(|r| r.json()["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(!again.iter().any(|t| t == "hello there"), "{again:?}");
    assert!(again.iter().any(|t| t == "Hi."), "{again:?}");
}

#[tokio::test]
async fn a_server_without_tokenize_keeps_the_estimate_with_a_log_line_and_no_error() {
    let sb = Sandbox::new();
    // An older llama.cpp: /tokenize is not found (the test server's 404).
    let server = llama_cpp(None).await;
    let events = chat(&sb, &server).await;
    assert!(of(&events, "error").is_empty(), "{events:?}");
    assert!(!of(&events, "delta").is_empty(), "{events:?}");
    assert!(!server.tokenize_requests().is_empty(), "it was asked");
    let id = events
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned();
    let ctx = context(&sb, &server, &id).await;
    assert_eq!(ctx["exact"], false, "{ctx}");
    assert_eq!(ctx["tokenizer"], "o200k_base");
    let log = logs(&sb);
    assert!(log.contains("/tokenize failed") && log.contains("404"), "{log}");
}

#[tokio::test]
async fn an_http_error_of_tokenize_leaves_the_context_estimated() {
    let sb = Sandbox::new();
    let server = llama_cpp(Some(Reply::json(500, r#"{"error":"boom"}"#))).await;
    let events = chat(&sb, &server).await;
    let id = events
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned();
    let ctx = context(&sb, &server, &id).await;
    assert_eq!(ctx["exact"], false, "{ctx}");
    assert_eq!(ctx["tokenizer"], "o200k_base");
    assert!(ctx["input_tokens"].as_u64().unwrap() > 0);
    assert!(logs(&sb).contains("answered HTTP 500"));
}

#[tokio::test]
async fn compress_show_and_pin_count_with_the_server_as_context_does() {
    let sb = Sandbox::new();
    let server = llama_cpp(Some(Reply::json(200, r#"{"tokens":[1,2,3]}"#))).await;
    let id = chat(&sb, &server)
        .await
        .iter()
        .find_map(|e| e["session_id"].as_str().map(str::to_owned))
        .unwrap();
    let ctx = context(&sb, &server, &id).await;
    assert_eq!(ctx["exact"], true, "{ctx}");
    let compress = json(&sb, &server, &["compress", &id, "--dry-run", "--json"]).await;
    assert_eq!(compress["exact"], true, "{compress}");
    assert_eq!(
        compress["tokens_before"], ctx["stored_tokens"],
        "{compress}\n{ctx}"
    );
    let show = json(&sb, &server, &["show", &id, "--json"]).await;
    assert_eq!(show["messages"][0]["tokens"], 9, "{show}");
    let pin = json(&sb, &server, &["pin", &id, "1", "--json"]).await;
    // "hello there" is 9 tokens to this server with its framing, 2 to o200k_base.
    assert_eq!(pin["pinned_tokens"], 9, "{pin}");
}
