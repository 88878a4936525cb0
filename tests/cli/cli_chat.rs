//! `strata chat` against a local OpenAI-compatible server on 127.0.0.1:
//! streaming, persistence, the frozen prompt across processes, crash
//! safety under `kill -9`, and keys never stored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::server;

use common::Sandbox;
use server::{Reply, Server};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const KEY: &str = "sk-test-PLANTED-9f8e7d6c5b4a";

fn sse(deltas: &[&str], usage: Option<(u64, u64, u64)>) -> String {
    let mut body = String::new();
    for d in deltas {
        let chunk =
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": d}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    if let Some((p, c, cached)) = usage {
        let u = serde_json::json!({"choices": [], "usage": {"prompt_tokens": p, "completion_tokens": c,
            "prompt_tokens_details": {"cached_tokens": cached}}});
        body.push_str(&format!("data: {u}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// `strata ARGS` in the sandbox, talking to `server` with a planted key.
fn chat_cmd(sb: &Sandbox, server: &Server, args: &[&str]) -> Command {
    let mut c = sb.cmd(args);
    c.env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", KEY);
    c
}

async fn run(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_persists_and_records_usage() {
    let server = Server::start(vec![Reply::sse(sse(
        &["Hel", "lo ", "wörld"],
        Some((120, 3, 100)),
    ))])
    .await;
    let sb = Sandbox::new();
    // Without tools, so the estimate stays near the scripted count.
    let out = run(chat_cmd(
        &sb,
        &server,
        &["chat", "--json", "--tools", "off", "say", "hello"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = lines(&out);
    assert_eq!(events[0]["type"], "start");
    let session = events[0]["session_id"].as_str().unwrap().to_owned();
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello wörld");
    let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
    assert_eq!(usage["prompt_tokens"], 120);
    assert_eq!(usage["cache_read_tokens"], 100);
    assert!(usage["estimated_prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(events.last().unwrap()["type"], "done");
    assert_eq!(events.last().unwrap()["status"], "complete");

    // Counted as the turn ends: the listing shows the session's size.
    let listed = sb.json(&["sessions", "--json"]);
    assert!(listed[0]["tokens"].as_u64().unwrap() > 0, "{listed}");

    let show = sb.json(&["show", &session, "--json"]);
    let messages = show["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    // `show` counts what was not counted yet: nothing, the reply included.
    let relisted = sb.json(&["sessions", "--json"]);
    assert_eq!(
        relisted[0]["tokens"], listed[0]["tokens"],
        "the reply was counted as the turn ended"
    );
    assert_eq!(
        (messages[0]["role"].as_str(), messages[0]["content"].as_str()),
        (Some("user"), Some("say hello"))
    );
    assert_eq!(
        (messages[1]["content"].as_str(), messages[1]["status"].as_str()),
        (Some("Hello wörld"), Some("complete"))
    );

    // The provider's count calibrates later estimates.
    let estimate = usage["estimated_prompt_tokens"].as_f64().unwrap();
    let context = sb.json(&["context", &session, "--json"]);
    let ratio = context["calibration_ratio"].as_f64().unwrap();
    assert!(
        (ratio - 120.0 / estimate).abs() < 1e-9,
        "ratio {ratio}, estimate {estimate}"
    );
    let input = context["input_tokens"].as_f64().unwrap();
    assert_eq!(
        context["calibrated_input_tokens"].as_f64().unwrap(),
        (input * ratio).round()
    );

    // The request carried the frozen prompt as its system message.
    let body = server.requests()[0].json();
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], show["system_prompt"]["text"]);
    assert_eq!(body["stream"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_prompt_bytes_are_identical_across_turns_and_processes() {
    let server = Server::start(vec![
        Reply::sse(sse(&["one"], None)),
        Reply::sse(sse(&["two"], None)),
    ])
    .await;
    let sb = Sandbox::new();
    std::fs::write(sb.ws().join("AGENTS.md"), "Prefer small commits.\n").unwrap();
    let first = run(chat_cmd(&sb, &server, &["chat", "--new", "first"])).await;
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&first.stdout), "one\n");
    std::fs::write(sb.ws().join("AGENTS.md"), "Prefer large commits.\n").unwrap();
    let second = run(chat_cmd(&sb, &server, &["chat", "-c", "second"])).await;
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let (a, b) = (requests[0].json(), requests[1].json());
    assert_eq!(
        a["messages"][0]["content"], b["messages"][0]["content"],
        "system prompt bytes changed"
    );
    assert!(
        a["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Prefer small commits.")
    );
    // The second turn continued the same session: its history holds the first turn.
    let roles: Vec<&str> = b["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(b["messages"][2]["content"], "one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_stream_keeps_the_partial_reply_marked_interrupted() {
    let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial answ\"}}]}\n\n";
    let server = Server::start(vec![Reply::sse_hold(partial)]).await;
    let sb = Sandbox::new();
    let mut child = chat_cmd(&sb, &server, &["chat", "tell me a long story"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the partial reply is in the database (a concurrent reader
    // must not mark a live stream interrupted).
    let deadline = Instant::now() + Duration::from_secs(20);
    let session = loop {
        assert!(
            Instant::now() < deadline,
            "the partial reply never reached the database"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let list = sb.run(&["sessions", "--json"]);
        let Ok(list) = serde_json::from_slice::<serde_json::Value>(&list.stdout) else {
            continue;
        };
        let Some(id) = list.get(0).and_then(|s| s["id"].as_str()).map(str::to_owned) else {
            continue;
        };
        let show = sb.json(&["show", &id, "--json"]);
        let m = &show["messages"];
        if m.get(1).is_some_and(|r| r["content"] == "partial answ") {
            assert_eq!(m[1]["status"], "streaming", "a live stream must stay streaming");
            break id;
        }
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let show = sb.json(&["show", &session, "--json"]);
    let m = show["messages"].as_array().unwrap();
    assert_eq!(m[0]["content"], "tell me a long story");
    assert_eq!(m[1]["content"], "partial answ");
    assert_eq!(m[1]["status"], "interrupted");
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_never_reaches_the_database_or_output() {
    let server = Server::start(vec![
        Reply::sse(sse(&["fine"], Some((10, 1, 0)))),
        Reply::json(401, &format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","type":"invalid_request_error","code":"invalid_api_key"}}}}"#)),
    ])
    .await;
    let sb = Sandbox::new();
    let ok = run(chat_cmd(&sb, &server, &["chat", "--json", "hi"])).await;
    assert!(ok.status.success());
    let denied = run(chat_cmd(&sb, &server, &["chat", "-c", "again"])).await;
    assert_eq!(denied.status.code(), Some(1));
    let err = String::from_utf8_lossy(&denied.stderr);
    assert!(err.contains("OPENAI_API_KEY"), "{err}");
    let id = lines(&ok)[0]["session_id"].as_str().unwrap().to_owned();
    let mut seen = Vec::new();
    for out in [&ok, &denied] {
        seen.extend_from_slice(&out.stdout);
        seen.extend_from_slice(&out.stderr);
    }
    seen.extend(sb.ok(&["show", &id, "--json"]).into_bytes());
    seen.extend(sb.ok(&["export", &id, "--format", "json"]).into_bytes());
    seen.extend(sb.ok(&["export", &id, "--format", "md"]).into_bytes());
    for entry in walk(sb.home.path()) {
        seen.extend(std::fs::read(entry).unwrap_or_default());
    }
    let needle = KEY.as_bytes();
    assert!(
        !seen.windows(needle.len()).any(|w| w == needle),
        "the API key leaked"
    );
    // The server did receive it, so the test would see a leak.
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_reply_is_an_error_and_the_message_is_kept() {
    let server = Server::start(vec![Reply::sse("")]).await;
    let sb = Sandbox::new();
    let out = run(chat_cmd(&sb, &server, &["chat", "anyone there?"])).await;
    assert_eq!(out.status.code(), Some(1));
    common::one_line_error(&out);
    let list = sb.json(&["sessions", "--json"]);
    let show = sb.json(&["show", list[0]["id"].as_str().unwrap(), "--json"]);
    assert_eq!(show["messages"][0]["content"], "anyone there?");
    assert_eq!(show["messages"][1]["status"], "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_message_refused_or_unpreparable_leaves_no_session() {
    // The provider refuses the key.
    let server = Server::start(vec![Reply::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
    )])
    .await;
    let sb = Sandbox::new();
    let out = run(chat_cmd(&sb, &server, &["chat", "anyone there?"])).await;
    assert_eq!(out.status.code(), Some(1));
    let err = common::one_line_error(&out);
    assert!(err.ends_with("; no session was kept"), "{err}");
    assert_eq!(sb.json(&["sessions", "--json"]), serde_json::json!([]));

    // The request cannot be prepared: the message alone is over the window.
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[model]\nname = \"tiny-window\"\ncontext_window = 400\nmax_tokens = 100\n",
    )
    .unwrap();
    let long = "words that will not fit ".repeat(200);
    let out = run(chat_cmd(&sb, &server, &["chat", &long])).await;
    assert_eq!(out.status.code(), Some(1));
    let err = common::one_line_error(&out);
    assert!(err.ends_with("; no session was kept"), "{err}");
    assert_eq!(sb.json(&["sessions", "--json"]), serde_json::json!([]));
    assert_eq!(server.requests().len(), 1, "the second was never sent");

    // A session that exists keeps its failed turn.
    std::fs::remove_file(sb.home.path().join("config.toml")).unwrap();
    let ok = Server::start(vec![Reply::sse(sse(&["hello"], None))]).await;
    let first = run(chat_cmd(&sb, &ok, &["chat", "hi"])).await;
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let out = run(chat_cmd(&sb, &server, &["chat", "-c", "again?"])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no session was kept"));
    let list = sb.json(&["sessions", "--json"]);
    assert_eq!(list[0]["messages"], 4, "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_stopped_at_the_output_limit_says_so_on_stderr() {
    let body = sse(&["Once upon a time there was a"], Some((40, 20, 0)))
        .replace("\"finish_reason\":\"stop\"", "\"finish_reason\":\"length\"");
    let server = Server::start(vec![Reply::sse(body)]).await;
    let sb = Sandbox::new();
    // The 20 completion tokens reached the request's max_tokens.
    std::fs::write(sb.home.path().join("config.toml"), "[model]\nmax_tokens = 20\n").unwrap();
    let out = run(chat_cmd(&sb, &server, &["chat", "tell me a long story"])).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "Once upon a time there was a"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("strata: the reply stopped at the output limit (20 tokens)"),
        "{stderr}"
    );
    // Stopped short of max_tokens: the server's window filled first.
    let body = sse(&["Once upon a time"], Some((1_342, 12, 0)))
        .replace("\"finish_reason\":\"stop\"", "\"finish_reason\":\"length\"");
    let server = Server::start(vec![Reply::sse(body)]).await;
    let out = run(chat_cmd(&sb, &server, &["chat", "-c", "tell me more"])).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the reply stopped after 12 tokens because the server's context window filled (1,342 prompt + 12 reply tokens)"),
        "{stderr}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_imported_message_is_truncated_in_the_request_not_refused() {
    let server = Server::start(vec![Reply::sse(sse(&["ok"], None))]).await;
    let sb = Sandbox::new();
    // ~600k tokens of code in one imported tool-free message, in a 128k window.
    let code = (0..60_000)
        .map(|i| format!("let value_{i} = compute({i});"))
        .collect::<Vec<_>>()
        .join("\n");
    let huge = format!("Please review:\n```rust\n{code}\n```\nThanks.");
    let id = sb.import(&serde_json::to_string(&serde_json::json!([{"role": "user", "content": huge}, {"role": "assistant", "content": "Reviewed."}])).unwrap());
    let out = run(chat_cmd(
        &sb,
        &server,
        &[
            "chat",
            "--session",
            &id,
            "--provider",
            "openai",
            "--model",
            "gpt-4o",
            "and now?",
        ],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let body = server.requests()[0].json();
    let sent = body["messages"][1]["content"].as_str().unwrap();
    assert!(sent.len() < huge.len() / 2, "the huge message was sent whole");
    assert!(sent.starts_with("Please review:"));
    assert_eq!(
        body["messages"].as_array().unwrap().last().unwrap()["content"],
        "and now?"
    );
}

/// A reply another live strata is still streaming into the session is not
/// history yet: a second chat on the session does not send the partial.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_still_streaming_in_another_process_is_not_sent_as_history() {
    let server = Server::start(vec![
        Reply::sse(sse(&["one"], None)),
        Reply::sse(sse(&["two"], None)),
    ])
    .await;
    let sb = Sandbox::new();
    let first = run(chat_cmd(&sb, &server, &["chat", "--new", "first"])).await;
    assert!(first.status.success());
    let id = sb.json(&["sessions", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    {
        // This test process plays the other strata: alive, mid-reply.
        let mut store = strata::store::Store::open(sb.db()).unwrap();
        let session = store.find_session(&id).unwrap();
        let mut user =
            strata::domain::Message::new(session.id, strata::domain::Role::User, "other question", 1);
        store.append_message(&mut user).unwrap();
        let mut partial = strata::domain::Message::new(session.id, strata::domain::Role::Assistant, "", 2);
        partial.status = strata::domain::MessageStatus::Streaming;
        store.append_message(&mut partial).unwrap();
        store
            .update_message(
                partial.id,
                "half of a rep",
                &[],
                strata::domain::MessageStatus::Streaming,
            )
            .unwrap();
    }
    let second = run(chat_cmd(&sb, &server, &["chat", "--session", &id, "second"])).await;
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let sent = server.requests()[1].json().to_string();
    assert!(!sent.contains("half of a rep"), "{sent}");
    assert!(sent.contains("other question"));
}

/// `chat --json` says a failure once, in the event stream, before `done`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_is_one_error_event_in_the_json_stream() {
    let server = Server::start(vec![Reply::sse("")]).await;
    let sb = Sandbox::new();
    let out = run(chat_cmd(&sb, &server, &["chat", "--json", "anyone there?"])).await;
    assert_eq!(out.status.code(), Some(1));
    let events = lines(&out);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "error").count(), 1, "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"done"), "{kinds:?}");
    assert_eq!(events.last().unwrap()["status"], "error");
}

/// The full-screen app without a terminal (a script, a pipe) says so in one
/// sentence instead of an operating-system error.
#[test]
fn the_app_without_a_terminal_says_what_to_use_instead() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&["--provider", "openai"])
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = common::one_line_error(&out);
    assert!(
        err.contains("needs a terminal") && err.contains("strata chat"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_starts_a_new_session_and_c_continues_the_latest() {
    let server = Server::start(vec![
        Reply::sse(sse(&["one"], None)),
        Reply::sse(sse(&["two"], None)),
        Reply::sse(sse(&["three"], None)),
        Reply::sse(sse(&["four"], None)),
    ])
    .await;
    // -c with nothing to continue starts a new session, and says so.
    let empty = Sandbox::new();
    let out = run(chat_cmd(&empty, &server, &["chat", "-c", "first via -c"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().next().unwrap().starts_with("strata: new session "),
        "{stderr}"
    );
    let sb = Sandbox::new();
    let first = run(chat_cmd(&sb, &server, &["chat", "--json", "what is a monad"])).await;
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let start = &lines(&first)[0];
    assert_eq!(start["type"], "start");
    assert_eq!(start["title"], "what is a monad");
    // A plain question starts fresh: the first turn is not in its history.
    let second = run(chat_cmd(&sb, &server, &["chat", "an unrelated question"])).await;
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let requests = server.requests();
    let roles = |i: usize| -> Vec<String> {
        requests[i].json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(roles(2), ["system", "user"]);
    let list = sb.json(&["sessions", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 2);
    let newest = list[0]["id"].as_str().unwrap().to_owned();
    let short = &newest[newest.len() - 8..];
    // The first line on stderr names the session: short id and title.
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(
        stderr.lines().next().unwrap(),
        format!("strata: new session {short} \"an unrelated question\""),
        "{stderr}"
    );
    // -c continues the workspace's latest session.
    let third = run(chat_cmd(&sb, &server, &["chat", "-c", "and more"])).await;
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    let stderr = String::from_utf8_lossy(&third.stderr);
    assert_eq!(
        stderr.lines().next().unwrap(),
        format!("strata: continuing session {short} \"an unrelated question\""),
        "{stderr}"
    );
    let requests = server.requests();
    let body = requests[3].json();
    assert_eq!(body["messages"][1]["content"], "an unrelated question");
    assert_eq!(body["messages"][2]["content"], "three");
    assert_eq!(sb.json(&["sessions", "--json"]).as_array().unwrap().len(), 2);
    // --new (the default) and -c contradict each other.
    let new = run(chat_cmd(&sb, &server, &["chat", "--new", "-c", "x"])).await;
    assert_eq!(new.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stdout_stops_the_reply_and_keeps_it_interrupted() {
    // The server would stream forever; only the closed pipe ends the turn.
    let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial answ\"}}]}\n\n";
    let server = Server::start(vec![Reply::sse_hold(partial)]).await;
    let sb = Sandbox::new();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader); // `| head` that has already gone
    let mut child = chat_cmd(&sb, &server, &["chat", "tell me a long story"])
        .stdout(writer)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // A guard, not a measure: without the fix the process never ends.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("strata kept generating after stdout was closed");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status.code(), Some(0));
    assert!(server.saw_disconnect().await, "the request was dropped");
    let list = sb.json(&["sessions", "--json"]);
    let show = sb.json(&["show", list[0]["id"].as_str().unwrap(), "--json"]);
    let m = show["messages"].as_array().unwrap();
    assert_eq!(m[1]["content"], "partial answ");
    assert_eq!(m[1]["status"], "interrupted");
}

/// `cmd` run on a pseudo-terminal (Python's `pty`): its exit status, and
/// every byte the terminal received (stdout and stderr both).
fn on_terminal(cmd: &Command) -> Output {
    let script = "import os, pty, sys\nsys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))";
    common::wrapped(&crate::support::mcp::python(), &["-c", script], cmd)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The model's reply is untrusted: on a terminal its escape sequences are
/// shown, not acted on (a title change, a cursor-position query whose
/// answer would land in the shell's input); a pipe gets the bytes as
/// they came. `export --raw` refuses a terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_s_escape_sequences_are_shown_on_a_terminal_and_kept_for_a_pipe() {
    let hostile = "hi\u{1b}]0;owned\u{7}\u{1b}[6n\u{202e}there";
    let server = Server::with(move |_| Reply::sse(sse(&[hostile], None))).await;
    let sb = Sandbox::new();
    let cmd = chat_cmd(&sb, &server, &["chat", "hello"]);
    let shown = tokio::task::spawn_blocking(move || on_terminal(&cmd))
        .await
        .unwrap();
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
    let terminal = String::from_utf8_lossy(&shown.stdout);
    assert!(!terminal.contains('\u{1b}'), "{terminal:?}");
    assert!(
        terminal.contains("hi^[]0;owned^G^[[6n\\u{202e}there"),
        "{terminal:?}"
    );
    let piped = run(chat_cmd(&sb, &server, &["chat", "-c", "again"])).await;
    assert!(piped.status.success());
    assert_eq!(String::from_utf8_lossy(&piped.stdout), format!("{hostile}\n"));

    let listed: serde_json::Value = serde_json::from_slice(&sb.run(&["sessions", "--json"]).stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    let export = sb.cmd(&["export", &id, "--raw"]);
    let refused = tokio::task::spawn_blocking(move || on_terminal(&export))
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let said = String::from_utf8_lossy(&refused.stdout);
    assert!(
        said.contains("--raw writes escape sequences as they were stored"),
        "{said}"
    );
    assert!(!said.contains('\u{1b}'), "{said:?}");
    let to_file = sb.run(&["export", &id, "--raw"]);
    assert!(to_file.status.success());
    assert!(String::from_utf8_lossy(&to_file.stdout).contains(hostile));
}

/// A lease on `session` held by process `pid` on this machine.
fn lease_held_by(sb: &Sandbox, session: &str, pid: u32) {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    let lease = strata::store::Lease {
        holder: "another strata".into(),
        pid,
        host,
        acquired_at: 1_764_400_000_000,
        renewed_at: 1_764_400_000_000,
    };
    let mut store = strata::store::Store::open(sb.db()).unwrap();
    let id = session.parse().unwrap();
    let claim = store.claim_lease(id, &lease, true, |_| true).unwrap();
    assert!(matches!(claim, strata::store::Claim::Held { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_open_in_another_strata_is_refused_unless_taken_over() {
    let server = Server::start(vec![Reply::sse(sse(&["fine"], None))]).await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n",
    )
    .unwrap();
    let id = sb.import(r#"[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]"#);
    // This test's own process stands for the app that has it open.
    lease_held_by(&sb, &id, std::process::id());
    let out = run(chat_cmd(&sb, &server, &["chat", "--session", &id, "more"])).await;
    assert_eq!(out.status.code(), Some(1));
    let said = common::one_line_error(&out);
    assert!(
        said.contains("open in another strata (process ") && said.contains("--take-over"),
        "{said}"
    );
    assert!(server.requests().is_empty(), "nothing sent");
    let shown = sb.json(&["show", &id, "--json"]);
    assert_eq!(shown["messages"].as_array().unwrap().len(), 2, "nothing stored");
    // Nor do the command line's other writers change it.
    for args in [
        &["pin", &id, "1"][..],
        &["exclude", &id, "2"],
        &["undo-compress", &id],
    ] {
        let out = sb.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let said = common::one_line_error(&out);
        assert!(said.contains("open in another strata"), "{args:?}: {said}");
    }
    let shown = sb.json(&["show", &id, "--json"]);
    assert!(
        shown["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["pinned"] != true && m["excluded"] != true),
        "{shown}"
    );

    let out = run(chat_cmd(
        &sb,
        &server,
        &["chat", "--session", &id, "--take-over", "more"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "fine");

    // A lease of a process that is gone is taken without a word.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    lease_held_by(&sb, &id, pid);
    let out = run(chat_cmd(&sb, &server, &["chat", "-c", "and more"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_breaks_is_a_failure_in_json_too() {
    let partial = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half a rep\"}}]}\n\n";
    let server = Server::start(vec![Reply::sse_cut(partial)]).await;
    let sb = Sandbox::new();
    let out = run(chat_cmd(&sb, &server, &["chat", "--json", "tell me"])).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = lines(&out);
    let done = events.iter().find(|e| e["type"] == "done").unwrap();
    assert_eq!(done["status"], "error", "{done}");
    assert_eq!(done["interruption"], "failed", "{done}");
    assert!(
        events.iter().any(
            |e| e["type"] == "error" && e["message"].as_str().unwrap().contains("broke during the reply")
        ),
        "{events:?}"
    );
}
