//! `strata pin|unpin|exclude|include ID MSG`, `strata show` positions and
//! `strata context ID --list`, with the next request checked at a local
//! OpenAI-compatible server: an excluded tool call and its results are not
//! in it, and including them again gives back the very same bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::server;

use common::{Sandbox, one_line_error};
use serde_json::{Value, json};
use server::{Reply, Server};
use std::process::{Command, Output};

const KEY: &str = "sk-test-control-5678";

fn sse(text: &str) -> String {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

/// `strata ARGS` talking to `server` (or to nothing) as the OpenAI provider.
fn cmd(sb: &Sandbox, server: Option<&Server>, args: &[&str]) -> Command {
    let base = server.map_or_else(|| "http://127.0.0.1:9".to_owned(), Server::base_url);
    let mut c = sb.cmd(args);
    c.env("OPENAI_BASE_URL", format!("{base}/v1"))
        .env("OPENAI_API_KEY", KEY);
    c
}

async fn run(mut c: Command) -> Output {
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}

/// user, a call of read_file and grep, both results, a reply.
fn history() -> String {
    json!([
        {"role": "user", "content": "Where is the parser?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_r", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/parser.rs\"}"}},
            {"id": "call_g", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"fn parse\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_r", "content": format!("PARSER-SOURCE {}", "fn parse() {}\n".repeat(200))},
        {"role": "tool", "tool_call_id": "call_g", "content": "src/parser.rs:1: fn parse"},
        {"role": "assistant", "content": "It is in src/parser.rs."}
    ])
    .to_string()
}

/// Imports `text` with no system prompt (so two sessions send the same
/// bytes); returns the session id.
fn import(sb: &Sandbox, text: &str, name: &str) -> String {
    let file = sb.home.path().join(name);
    std::fs::write(&file, text).unwrap();
    let out = cmd(
        sb,
        None,
        &["--prompt-mode", "none", "import", file.to_str().unwrap()],
    )
    .output()
    .unwrap();
    ok(&out).trim().to_owned()
}

async fn chat(sb: &Sandbox, server: &Server, id: &str) {
    let out = run(cmd(
        sb,
        Some(server),
        &["chat", "--session", id, "--tools", "off", "Now fix it."],
    ))
    .await;
    ok(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_excluded_tool_call_is_not_sent_and_including_it_restores_the_same_bytes() {
    let server = Server::with(|_| Reply::sse(sse("Done."))).await;
    let sb = Sandbox::new();
    let plain = import(&sb, &history(), "a.json");
    let toggled = import(&sb, &history(), "b.json");
    let excluded = import(&sb, &history(), "c.json");

    // Positions count the active messages from 1.
    let show = sb.json(&["show", &excluded, "--json"]);
    let pos: Vec<Value> = show["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["pos"].clone())
        .collect();
    assert_eq!(pos, [json!(1), json!(2), json!(3), json!(4), json!(5)]);
    let text = sb.ok(&["show", &excluded]);
    assert!(text.contains("## 3 · Tool result (`call_r`)"), "{text}");

    // Excluding the read_file result leaves out that call only.
    let out = json_of(&run(cmd(&sb, None, &["exclude", &excluded, "3", "--json"])).await);
    assert_eq!(out["action"], "exclude");
    assert_eq!(out["target"]["pos"], 3);
    assert_eq!(out["target"]["tools"], json!(["read_file"]));
    assert!(out["tokens"].as_u64().unwrap() > 500, "{out}");
    let line = ok(&run(cmd(&sb, None, &["exclude", &toggled, "2"])).await);
    assert!(
        line.starts_with("Excluded message 2 (calls read_file, grep, −"),
        "{line}"
    );
    let line = ok(&run(cmd(&sb, None, &["include", &toggled, "2"])).await);
    assert!(
        line.starts_with("Included message 2 (calls read_file, grep, +"),
        "{line}"
    );

    for id in [&plain, &toggled, &excluded] {
        chat(&sb, &server, id).await;
    }
    let bodies: Vec<Vec<u8>> = server.requests().iter().map(|r| r.body.clone()).collect();
    assert_eq!(bodies.len(), 3);
    assert_eq!(
        String::from_utf8_lossy(&bodies[1]),
        String::from_utf8_lossy(&bodies[0]),
        "include gives back the very same request"
    );
    let sent: Value = serde_json::from_slice(&bodies[2]).unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let text = sent.to_string();
    assert!(
        !text.contains("PARSER-SOURCE") && !text.contains("call_r"),
        "{text}"
    );
    let calls: Vec<&Value> = messages
        .iter()
        .filter(|m| m.get("tool_calls").is_some())
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["tool_calls"].as_array().unwrap().len(), 1);
    assert_eq!(calls[0]["tool_calls"][0]["id"], "call_g");
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["tool_call_id"], "call_g");
    let full: Value = serde_json::from_slice(&bodies[0]).unwrap();
    assert!(full.to_string().contains("PARSER-SOURCE"));

    // The context list says so, sorted by cost and filtered to tool outputs.
    let rows = sb.json(&["context", &excluded, "--list", "--json"]);
    let states: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        ["kept", "kept", "excluded", "kept", "kept", "kept", "kept"]
    );
    assert_eq!(rows[2]["excluded"], true);
    assert_eq!(rows[2]["tokens_sent"], 0);
    let by_cost = sb.json(&["context", &excluded, "--list", "--by-cost", "--tools", "--json"]);
    let tools: Vec<(i64, String)> = by_cost
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["pos"].as_i64().unwrap(),
                r["tools"][0].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(tools, [(3, "read_file".to_owned()), (4, "grep".to_owned())]);
    let table = sb.ok(&["context", &excluded, "--list"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("pos  role"), "{table}");
    assert!(
        lines[3].contains("tool read_file") && lines[3].contains("excluded"),
        "{table}"
    );
    assert_eq!(lines.len(), 8, "{table}");

    // Export and import carry the flag.
    let export = sb.ok(&["export", &excluded, "--format", "json"]);
    let copy = import(&sb, &export, "copy.json");
    let shown = sb.json(&["show", &copy, "--json"]);
    let flags: Vec<bool> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["excluded"].as_bool().unwrap())
        .collect();
    assert_eq!(flags, [false, false, true, false, false, false, false]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_bad_positions_are_one_sentence_and_change_nothing() {
    let sb = Sandbox::new();
    let big = "a line of the specification that must stay exactly as written\n".repeat(10_000);
    let text = json!([
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": big},
        {"role": "assistant", "content": "read it"},
        {"role": "user", "content": "last"}
    ])
    .to_string();
    let id = import(&sb, &text, "big.json");
    let before = common::file_digest(&sb.db());

    let out = run(cmd(&sb, None, &["exclude", &id, "5"])).await;
    assert_eq!(out.status.code(), Some(1));
    let err = one_line_error(&out);
    assert!(err.contains("message 5 is the last user message"), "{err}");

    let out = run(cmd(&sb, None, &["pin", &id, "3", "--json"])).await;
    assert_eq!(out.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err["type"], "error");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("more than half of the effective window"),
        "{message}"
    );

    let out = run(cmd(&sb, None, &["include", &id, "9"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line_error(&out).contains("the session has 5 active messages (positions 1 to 5)"));
    let out = run(cmd(&sb, None, &["pin", &id, "zz"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(common::file_digest(&sb.db()), before, "nothing was written");

    // A pin that fits is taken, and pinning again changes nothing.
    let line = ok(&run(cmd(&sb, None, &["pin", &id, "1"])).await);
    assert!(line.starts_with("Pinned message 1 (user, "), "{line}");
    let line = ok(&run(cmd(&sb, None, &["pin", &id, "1"])).await);
    assert_eq!(
        line.trim(),
        "Message 1 (user) is already pinned; nothing changed."
    );
    let out = run(cmd(&sb, None, &["exclude", &id, "1"])).await;
    assert!(one_line_error(&out).contains("unpin message 1 first"));
    ok(&run(cmd(&sb, None, &["unpin", &id, "1"])).await);
    ok(&run(cmd(&sb, None, &["exclude", &id, "1"])).await);
    let rows = sb.json(&["context", &id, "--list", "--json"]);
    assert_eq!(rows[0]["state"], "excluded");
}
