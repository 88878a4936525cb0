//! Shared by the command-line compression tests: histories, the binary
//! against a local OpenAI-compatible server, and the store's state.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::support::common::Sandbox;
use crate::support::server::{Reply, Server};
use serde_json::{Value, json};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub const KEY: &str = "sk-test-compress-1234";

/// `pairs` user/assistant turns, each message about `chars` long, with a
/// file path and a command in every request.
pub fn history(pairs: usize, chars: usize) -> String {
    let filler = "The parser keeps its state in a small table and the tests cover it. ";
    let body = |n: usize| filler.repeat(chars / filler.len() + 1)[..chars].to_owned() + &format!(" [{n}]");
    let mut messages = Vec::new();
    for i in 0..pairs {
        messages.push(json!({"role": "user", "content": format!("Request {i}: fix src/mod{i}.rs and run `cargo test -p m{i}`. {}", body(i))}));
        messages.push(
            json!({"role": "assistant", "content": format!("Done {i}: edited src/mod{i}.rs. {}", body(i))}),
        );
    }
    serde_json::to_string(&messages).unwrap()
}

pub fn sse(text: &str, prompt_tokens: Option<u64>) -> String {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let mut body = format!("data: {chunk}\n\n");
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    if let Some(p) = prompt_tokens {
        let u = json!({"choices": [], "usage": {"prompt_tokens": p, "completion_tokens": 3}});
        body.push_str(&format!("data: {u}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// `strata ARGS` talking to `base_url` as an OpenAI-compatible server.
pub fn openai(sb: &Sandbox, base_url: &str, args: &[&str]) -> Command {
    let mut c = sb.cmd(args);
    c.env("OPENAI_BASE_URL", format!("{base_url}/v1"))
        .env("OPENAI_API_KEY", KEY);
    c
}

/// Imports `text` as a session of the OpenAI provider; returns its id.
pub fn import_openai(sb: &Sandbox, text: &str) -> String {
    let file = sb.home.path().join("history.json");
    std::fs::write(&file, text).unwrap();
    let out = openai(sb, "http://127.0.0.1:9", &["import", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // `import` prints the short id; the tests read the store by the full one.
    let short = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    sb.json(&["show", &short, "--json"])["session"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn run(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

pub fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The active messages (id, role, content) and the current prompt bytes.
pub fn state(sb: &Sandbox, id: &str) -> (Vec<(String, String, String)>, String) {
    let show = sb.json(&["show", id, "--json"]);
    let messages = show["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (
        messages,
        show["system_prompt"]["text"].as_str().unwrap().to_owned(),
    )
}

/// The last line on stderr (progress lines come before it).
pub fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .trim()
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

pub fn compactions(sb: &Sandbox) -> i64 {
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    conn.query_row(
        "SELECT count(*) FROM compactions WHERE undone_at IS NULL",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

pub fn integrity(sb: &Sandbox) -> String {
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

/// Spawns `strata ARGS` against a server whose first reply starts a summary
/// and then stalls; returns once that request has arrived.
pub async fn stalled_summariser(sb: &Sandbox, args: &[&str]) -> (Server, std::process::Child) {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": "## Completed work\n"}, "finish_reason": null}]});
    let server = Server::start(vec![Reply::sse_hold(format!("data: {chunk}\n\n"))]).await;
    let child = openai(sb, &server.base_url(), args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while server.requests().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the summary request never came"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (server, child)
}

pub fn write_config(sb: &Sandbox, toml: &str) {
    std::fs::write(sb.home.path().join("config.toml"), toml).unwrap();
}

/// A SHA-256 over every row of every table of the store (virtual tables
/// left out; their shadow tables are included), in table and row order:
/// equal before and after a command that changes nothing.
pub fn store_checksum(sb: &Sandbox) -> String {
    use sha2::{Digest, Sha256};
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table'
              AND coalesce(sql, '') NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut hash = Sha256::new();
    for table in tables {
        hash.update(table.as_bytes());
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..columns {
                hash.update(format!("{:?}\u{1f}", row.get_ref(i).unwrap()).as_bytes());
            }
            hash.update(b"\x1e");
        }
    }
    format!("{:x}", hash.finalize())
}

/// The active messages as `show --json` prints them: (id, role, kind, content).
pub fn active(sb: &Sandbox, id: &str) -> Vec<(String, String, String, String)> {
    sb.json(&["show", id, "--json"])["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["role"].as_str().unwrap().to_owned(),
                m["kind"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}
