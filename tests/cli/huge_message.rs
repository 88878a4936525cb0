//! One huge message does not defeat the context engine, at the command
//! line against the loopback server serving an 8,192-token window (as a
//! llama.cpp server says it): the paste is stored whole and sent cut with
//! a notice; later requests hold the first exchange or a summary of it;
//! automatic compression runs once the pre-limit estimate passes the
//! threshold; `compress --dry-run` never answers "Nothing to compress"
//! while messages are left out.

use crate::support::common;
use crate::support::compress_cli as compress_cli_support;
use crate::support::server;

use common::Sandbox;
use compress_cli_support::*;
use serde_json::Value;
use server::{Reply, Server};
use std::io::Write;

/// A llama.cpp server's `/v1/models` answer with an 8,192-token window.
fn models_8k() -> String {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/served_window/llama_cpp_models.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    text.replace("\"n_ctx\":3072", "\"n_ctx\":8192")
}

/// `strata chat --json` with `message` (`-` reads `stdin`); the events.
async fn chat(
    sb: &Sandbox,
    server: &Server,
    session: Option<&str>,
    message: &str,
    stdin: Option<String>,
) -> Vec<Value> {
    let mut args = vec!["chat", "--json", "--tools", "off"];
    if let Some(id) = session {
        args.extend(["--session", id]);
    }
    args.push(message);
    let mut cmd = openai(sb, &server.base_url(), &args);
    let out = tokio::task::spawn_blocking(move || {
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        let text = stdin.unwrap_or_default();
        let writer = std::thread::spawn(move || input.write_all(text.as_bytes()));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        out
    })
    .await
    .unwrap();
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

fn notices(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect()
}

fn left_out(context: &Value) -> usize {
    context["report"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "dropped")
        .count()
}

/// The session the events of a `chat --json` name.
fn session_of(events: &[Value]) -> String {
    events
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned()
}

/// `strata ARGS` against `server`, its JSON.
async fn strata_json(sb: &Sandbox, server: &Server, args: &[&str]) -> Value {
    json_of(&run(openai(sb, &server.base_url(), args)).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_paste_is_sent_cut_and_the_history_around_it_is_kept_or_summarised() {
    let sb = Sandbox::new();
    write_config(&sb, "[compression]\nsummarizer = \"extractive\"\n");
    let server = Server::with(|_| Reply::sse(sse("Noted; here is what I see.", None))).await;
    server.answer_discovery("/v1/models", Reply::json(200, &models_8k()));

    let first = chat(&sb, &server, None, "what does the lexer do with tabs?", None).await;
    let id = session_of(&first);

    // About 120k tokens of log.
    let paste: String = (0..3_000)
        .map(|i| {
            format!(
                "2026-12-06T02:{:02}:{:02} worker-{i} handled request {i} in {i} ms with status 200\n",
                i % 60,
                i % 60
            )
        })
        .collect();
    let events = chat(&sb, &server, Some(&id), "-", Some(paste.clone())).await;
    let said = notices(&events);
    let cut = said
        .iter()
        .find(|n| n.contains("goes cut to"))
        .unwrap_or_else(|| panic!("no cut notice: {said:?}"));
    assert!(
        cut.contains("8,192-token window") && cut.contains("the whole message is stored"),
        "{cut}"
    );
    let store = strata::store::Store::open(sb.home.path().join("data/strata.db")).unwrap();
    let sid: strata::domain::SessionId = id.parse().unwrap();
    assert!(
        store
            .messages(sid, true)
            .unwrap()
            .iter()
            .any(|m| m.content == paste),
        "the paste is stored whole"
    );
    let sent = server.requests().last().unwrap().json()["messages"].to_string();
    assert!(sent.len() < paste.len() / 4, "sent cut: {} bytes", sent.len());

    // The next request counts the paste at its cut size, before fitting
    // too: it costs the window what it is sent as.
    let context = strata_json(&sb, &server, &["context", &id, "--json", "--no-mcp"]).await;
    let prelimit = context["prelimit_tokens"].as_u64().unwrap();
    assert!(prelimit < 8_192, "the paste counts its cut size: {prelimit}");
    let paste_row = context["report"].as_array().unwrap()[2].clone();
    assert_eq!(paste_row["action"], "truncated", "{paste_row}");
    assert!(
        paste_row["tokens_before"].as_u64().unwrap() > 60_000,
        "{paste_row}"
    );

    // More turns: each request holds the first exchange or a summary of
    // it; the paste never pushes it out by its whole size.
    let mut compressed = false;
    for (turn, q) in [
        "which worker was slowest?",
        "and the fastest?",
        "any errors?",
        "thanks",
    ]
    .into_iter()
    .enumerate()
    {
        let events = chat(&sb, &server, Some(&id), q, None).await;
        compressed |= events.iter().any(|e| e["type"] == "compressed");
        let sent = server.requests().last().unwrap().json()["messages"].to_string();
        assert!(
            sent.contains("what does the lexer do with tabs?") || sent.contains("[Earlier conversation"),
            "turn {turn}: the first exchange is neither sent nor summarised: {sent:.400}"
        );
        let context = strata_json(&sb, &server, &["context", &id, "--json", "--no-mcp"]).await;
        let threshold = context["threshold"]["effective"].as_u64().unwrap();
        let prelimit = context["prelimit_tokens"].as_u64().unwrap();
        assert!(prelimit < 20_000, "the paste counts its cut size: {prelimit}");
        if left_out(&context) > 0 {
            let dry = strata_json(&sb, &server, &["compress", &id, "--dry-run", "--json"]).await;
            assert!(
                !dry["reason"]
                    .as_str()
                    .unwrap_or("")
                    .contains("Nothing to compress"),
                "turn {turn}: messages are left out, yet: {dry}"
            );
        }
        assert!(
            prelimit < threshold || compressed,
            "turn {turn}: over the threshold ({prelimit} > {threshold}) and never compressed"
        );
    }
    assert!(compressed, "automatic compression ran once the paste was older");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_huge_message_costs_every_later_request_its_cut_size() {
    let sb = Sandbox::new();
    // Nothing summarises it here: what the paste costs is the pipeline's.
    write_config(&sb, "[compression]\nenabled = false\n");
    let server = Server::with(|_| Reply::sse(sse("Noted.", None))).await;
    server.answer_discovery("/v1/models", Reply::json(200, &models_8k()));
    let first = chat(&sb, &server, None, "what does the lexer do with tabs?", None).await;
    let id = session_of(&first);
    let paste: String = (0..3_000)
        .map(|i| format!("worker-{i} handled request {i} in {i} ms\n"))
        .collect();
    chat(&sb, &server, Some(&id), "-", Some(paste)).await;
    chat(&sb, &server, Some(&id), "which worker was slowest?", None).await;
    let context = strata_json(&sb, &server, &["context", &id, "--json", "--no-mcp"]).await;
    let prelimit = context["prelimit_tokens"].as_u64().unwrap();
    assert!(prelimit < 2 * 8_192, "counted whole before fitting: {prelimit}");
    let paste_row = &context["report"].as_array().unwrap()[2];
    assert!(
        paste_row["tokens_before"].as_u64().unwrap() > 40_000,
        "{paste_row}"
    );
    // Sent cut in the last request, with the question after it.
    let sent = server.requests().last().unwrap().json()["messages"].to_string();
    assert!(
        sent.contains("worker-0 handled") && sent.contains("which worker was slowest?"),
        "{sent:.300}"
    );
}

/// Messages the request leaves out (here by `[history] max_messages`) are
/// never protected: a compression summarises them instead of answering
/// "Nothing to compress".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_left_out_by_the_message_cap_are_not_protected_from_compression() {
    let sb = Sandbox::new();
    write_config(
        &sb,
        "[history]\nmax_messages = 4\n[compression]\nsummarizer = \"extractive\"\n",
    );
    let server = Server::with(|_| Reply::sse(sse("Noted.", None))).await;
    let first = chat(&sb, &server, None, "Q1 remember OLIVE", None).await;
    let id = session_of(&first);
    let mut said = Vec::new();
    for q in ["Q2 hi", "Q3 hey", "Q4 yo"] {
        said.extend(notices(&chat(&sb, &server, Some(&id), q, None).await));
    }
    assert!(
        said.iter()
            .any(|n| n.contains("left out of this request to keep to [history] max_messages = 4")),
        "the cap is named, not the window: {said:?}"
    );
    let context = strata_json(&sb, &server, &["context", &id, "--json", "--no-mcp"]).await;
    assert!(left_out(&context) > 0, "{context}");
    let dry = strata_json(&sb, &server, &["compress", &id, "--dry-run", "--json"]).await;
    assert_eq!(dry["noop"], false, "{dry}");
    assert!(dry["summary"].as_str().unwrap().contains("OLIVE"), "{dry}");
}
