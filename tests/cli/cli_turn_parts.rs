//! What a turn adds to the user's message in `strata chat`: the per-turn
//! `<system-reminder>` from `prompt.turn_reminder_cmd` (sent for one turn,
//! then pruned, the system prompt untouched), `@path` attachments (embedded
//! once per content), and the `history.max_messages` cap.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::server;

use common::Sandbox;
use serde_json::{Value, json};
use server::{Reply, Server};
use std::process::{Command, Output};

fn sse(text: &str) -> String {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

fn chat(sb: &Sandbox, server: &Server, args: &[&str]) -> Command {
    let mut c = sb.cmd(args);
    c.env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", "sk-test-parts");
    c
}

async fn run(mut cmd: Command) -> Output {
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn user_contents(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

fn system_of(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_rides_one_turn_and_the_system_prompt_never_changes() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[prompt]\nturn_reminder_cmd = \"echo status-$((40 + 2))\"\n",
    )
    .unwrap();
    let server = Server::start(vec![Reply::sse(sse("one")), Reply::sse(sse("two"))]).await;
    run(chat(&sb, &server, &["chat", "--new", "first question"])).await;
    run(chat(&sb, &server, &["chat", "-c", "second question"])).await;
    let requests = server.requests();
    let (a, b) = (requests[0].json(), requests[1].json());
    assert_eq!(system_of(&a), system_of(&b), "the cached prefix never changes");
    assert!(!system_of(&a).contains("status-42"));
    let users_a = user_contents(&a);
    assert_eq!(
        users_a,
        vec!["first question\n\n<system-reminder>\nstatus-42\n</system-reminder>"]
    );
    let users_b = user_contents(&b);
    assert_eq!(users_b[0], "first question", "the old reminder is pruned");
    assert_eq!(
        users_b[1],
        "second question\n\n<system-reminder>\nstatus-42\n</system-reminder>"
    );
    let id = sb.json(&["sessions", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let report = sb.json(&["context", &id, "--json"])["report"].clone();
    let actions: Vec<&str> = report
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    // The first reminder's turn is over; the latest one still belongs to the
    // last turn until the next user message arrives.
    assert_eq!(actions, vec!["kept", "pruned", "kept", "kept", "merged", "kept"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_file_is_embedded_once_and_a_missing_one_is_reported() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws().join("notes")).unwrap();
    std::fs::write(sb.ws().join("notes/plan.md"), "Step 1: parse.\nStep 2: print.\n").unwrap();
    let server = Server::start(vec![Reply::sse(sse("one")), Reply::sse(sse("two"))]).await;
    run(chat(
        &sb,
        &server,
        &["chat", "--new", "read @notes/plan.md please"],
    ))
    .await;
    let out = run(chat(
        &sb,
        &server,
        &["chat", "-c", "again @notes/plan.md and @notes/none.md"],
    ))
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("@notes/none.md was not attached (no such file)"),
        "{stderr}"
    );
    let requests = server.requests();
    let first = user_contents(&requests[0].json());
    assert!(first[0].starts_with("read @notes/plan.md please\n\n<attachment path=\"notes/plan.md\""));
    assert!(first[0].contains("Step 1: parse.\nStep 2: print."));
    let second = user_contents(&requests[1].json());
    assert_eq!(second[0], first[0], "earlier turns are sent byte-identical");
    let last = &second[1];
    assert!(last.contains("unchanged=\"true\""), "{last}");
    assert_eq!(last.matches("Step 1: parse.").count(), 0, "not embedded twice");
    assert!(last.contains("<attachment path=\"notes/none.md\" embedded=\"false\"/> (no such file)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_messages_caps_the_request_by_whole_turns() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[history]\nmax_messages = 3\n",
    )
    .unwrap();
    let replies: Vec<Reply> = (0..4).map(|i| Reply::sse(sse(&format!("reply {i}")))).collect();
    let server = Server::start(replies).await;
    run(chat(&sb, &server, &["chat", "--new", "q0"])).await;
    for q in ["q1", "q2", "q3"] {
        run(chat(&sb, &server, &["chat", "-c", q])).await;
    }
    let last = server.requests()[3].json();
    let messages = last["messages"].as_array().unwrap();
    let sent: Vec<&str> = messages[1..]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(sent, vec!["q2", "reply 2", "q3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_attachment_says_how_much_was_left_out_and_a_failing_reminder_names_its_setting() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[prompt]\nturn_reminder_cmd = \"echo partial; exit 3\"\n",
    )
    .unwrap();
    let big: String = (0..30_000).map(|i| format!("line {i:05}\n")).collect();
    std::fs::write(sb.ws().join("big.txt"), &big).unwrap();
    let server = Server::start(vec![Reply::sse(sse("ok"))]).await;
    let out = run(chat(&sb, &server, &["chat", "--new", "see @big.txt"])).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("prompt.turn_reminder_cmd `echo partial; exit 3` exited with status 3"),
        "{stderr}"
    );
    let sent = user_contents(&server.requests()[0].json()).concat();
    assert!(
        sent.contains("line 00000") && sent.contains("line 29999"),
        "head and tail kept"
    );
    let size = big.len();
    // An attachment is measured in characters (this file is ASCII, so as
    // many as its bytes).
    assert!(
        sent.contains(&format!("characters of this {size}-character file left out ...]")),
        "the marker names the real size"
    );
    assert!(sent.contains("<system-reminder>\npartial\n</system-reminder>"));
}
