//! An MCP server's claims are believed only for servers the user trusts
//! (issue 24): the misbehaving test server's `echo` says `readOnlyHint:
//! true`, yet by default it is approved like `shell` — denied in `strata
//! chat` without `--approve all`, asked in the app (whose approval says the
//! rule) — and it runs without asking once `[mcp.servers.bad]
//! trust_annotations = true`. `strata mcp list` says which rule applied.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::agent;
use crate::support::common;
use crate::support::mcp as mcp_support;
use crate::support::server;
use crate::support::service as service_support;
use crate::support::tool_sse;

use common::Sandbox;
use serde_json::Value;
use server::{Reply, Server};
use std::process::Output;
use std::sync::{Arc, Mutex};
use strata::config::Config;
use strata::conversation::Approval;
use strata::runtime::ApprovalAnswer;
use strata::runtime::service::{ApprovalRequest, ServiceEvent, Sink, ToolEvent};
use tool_sse::{openai_calls, openai_text};

/// `[mcp.servers.bad]`: the misbehaving server, its annotations trusted or
/// not.
fn misbehaving(trusted: bool) -> String {
    format!(
        "[mcp.servers.bad]\ncommand = {:?}\nargs = [{:?}]\nstartup_timeout_s = 20\n{}",
        mcp_support::python().to_string_lossy(),
        mcp_support::misbehaving().to_string_lossy(),
        if trusted { "trust_annotations = true\n" } else { "" }
    )
}

/// A server whose first reply calls `bad__echo`, then answers in words.
async fn echoing() -> Server {
    Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[(
            "call_e",
            "bad__echo",
            r#"{"text":"hello from echo"}"#,
        )])),
        _ => Reply::sse(openai_text("done")),
    })
    .await
}

fn sandbox(trusted: bool) -> Sandbox {
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o\"\n\n{}",
            misbehaving(trusted)
        ),
    )
    .unwrap();
    sb
}

/// The `tool_result` event of `out` and the result the model read next.
fn echo_result(out: &Output, server: &Server) -> (String, String) {
    let status = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "tool_result")
        .map(|e| e["status"].as_str().unwrap().to_owned())
        .expect("a tool_result event");
    let next = server.requests()[1].json();
    let content = next["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap();
    (status, content)
}

#[test]
fn a_read_only_hint_is_denied_headless_until_the_server_is_trusted() {
    mcp_support::run(async {
        let sb = sandbox(false);
        let server = echoing().await;
        let out = agent::run_ok(agent::openai(
            &sb,
            &server,
            &["chat", "--json", "--new", "echo please"],
        ))
        .await;
        let (status, content) = echo_result(&out, &server);
        assert_eq!(status, "denied", "{content}");
        assert!(
            content.contains("approval is read-only, so bad__echo calls do not run")
                && content.contains("--approve all"),
            "{content}"
        );

        let sb = sandbox(true);
        let server = echoing().await;
        let out = agent::run_ok(agent::openai(
            &sb,
            &server,
            &["chat", "--json", "--new", "echo please"],
        ))
        .await;
        let (status, content) = echo_result(&out, &server);
        assert_eq!(status, "ok", "{content}");
        assert!(content.contains("hello from echo"), "{content}");
    });
}

#[test]
fn mcp_list_says_which_rule_applied() {
    let _one = mcp_support::one_at_a_time();
    let sb = sandbox(false);
    let listing = sb.json(&["mcp", "list", "--json"]);
    let bad = &listing["servers"][0];
    assert_eq!(bad["trust_annotations"], false);
    let echo = bad["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert_eq!(echo["read_only_hint"], true);
    assert_eq!(echo["access"], "run");
    assert_eq!(echo["rule"], "untrusted_server");
    assert!(
        echo["why"]
            .as_str()
            .unwrap()
            .contains("set [mcp.servers.bad] trust_annotations = true"),
        "{echo}"
    );
    let text = sb.ok(&["mcp", "list"]);
    assert!(
        text.contains("approval: its annotations are not trusted: every tool is approved like shell"),
        "{text}"
    );
    assert!(text.contains("asks (its readOnlyHint is not believed)"), "{text}");

    let sb = sandbox(true);
    let listing = sb.json(&["mcp", "list", "--json"]);
    let bad = &listing["servers"][0];
    assert_eq!(bad["trust_annotations"], true);
    let echo = bad["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert_eq!(
        (echo["access"].as_str(), echo["rule"].as_str()),
        (Some("read-only"), Some("trusted_annotations"))
    );
    let big = bad["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "big")
        .unwrap();
    assert_eq!(big["access"], "run", "no hint, no read-only: {big}");
    let text = sb.ok(&["mcp", "list"]);
    assert!(
        text.contains("approval: its annotations are trusted (trust_annotations = true)"),
        "{text}"
    );
}

/// Runs one turn of the app's service on a new session with the
/// misbehaving server (`approval = "ask"`, the default), answering each
/// approval with `Once`; returns the approvals asked.
async fn app_turn(server: &Server, trusted: bool) -> Vec<ApprovalRequest> {
    let dirs = service_support::Dirs::new();
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n\n{}",
        server.base_url(),
        misbehaving(trusted)
    );
    let config = Config::parse(&text).unwrap().config;
    let answers: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<ApprovalAnswer>>>> = Arc::default();
    let asked: Arc<Mutex<Vec<ApprovalRequest>>> = Arc::default();
    let (slot, seen) = (Arc::clone(&answers), Arc::clone(&asked));
    let sink: Sink = Arc::new(move |e| {
        if let ServiceEvent::Tool(ToolEvent::ApprovalNeeded(request)) = e {
            seen.lock().unwrap().push((*request).clone());
            if let Some(tx) = slot.lock().unwrap().as_ref() {
                let _ = tx.send(ApprovalAnswer {
                    tool_call_id: request.call.id.clone(),
                    approval: Approval::Once,
                });
            }
        }
    });
    let mut service = service_support::open_new(&dirs, config, true, sink);
    *answers.lock().unwrap() = Some(service.approvals());
    service
        .send("echo please".into(), std::future::pending())
        .await
        .unwrap();
    asked.lock().unwrap().clone()
}

#[test]
fn in_the_app_a_read_only_hint_asks_and_says_why_until_the_server_is_trusted() {
    mcp_support::run(async {
        let server = echoing().await;
        let asked = app_turn(&server, false).await;
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0].call.name, "bad__echo");
        assert!(
            asked[0]
                .why
                .starts_with("Approved like shell because the MCP server `bad` is not trusted")
                && asked[0].why.contains("it says readOnlyHint: true"),
            "{}",
            asked[0].why
        );
        let ran = server.requests()[1].body.clone();
        assert!(
            String::from_utf8_lossy(&ran).contains("hello from echo"),
            "allowed once, it ran"
        );

        let server = echoing().await;
        assert!(app_turn(&server, true).await.is_empty(), "trusted: no question");
        assert!(String::from_utf8_lossy(&server.requests()[1].body).contains("hello from echo"));
    });
}
