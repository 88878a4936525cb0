//! A workspace's `.mcp.json` is used only after the user accepted it, end
//! to end: `strata chat` against the local SSE server, with the real
//! `mcp-server-time` (installed by `scripts/install-mcp-servers.sh`; missing,
//! it fails in CI) named only in the workspace's `.mcp.json`. Before
//! `strata mcp accept` its tools are not offered and stderr says how to
//! accept; after, they are and answer the model; once the file's bytes
//! change it waits for acceptance again; a declined file stays quiet.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::agent;
use crate::support::common;
use crate::support::mcp as mcp_support;
use crate::support::server;
use crate::support::tool_sse;

use agent::{events, of_type, openai, run};
use common::Sandbox;
use serde_json::Value;
use server::{Reply, Server};
use std::process::Output;
use tool_sse::{openai_calls, openai_text};

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One `strata chat` turn answered "ok"; returns its output and the tool
/// names of its request.
async fn chat_once(sb: &Sandbox) -> (Output, Vec<String>) {
    let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
    let out = run(openai(sb, &server, &["chat", "--json", "--new", "hi"])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    (out, tool_names(&requests[0].json()))
}

fn time_tools(names: &[String]) -> Vec<&str> {
    names
        .iter()
        .filter(|n| n.starts_with("time__"))
        .map(String::as_str)
        .collect()
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn a_workspace_mcp_json_server_is_used_only_after_it_was_accepted() {
    mcp_support::run(async {
        let [time, _, _] = mcp_support::real_servers();
        let sb = Sandbox::new();
        // No server in config.toml: the time server is only in .mcp.json.
        std::fs::write(sb.home.path().join("config.toml"), "[tools]\nenabled = true\n").unwrap();
        let file = sb.ws().join(".mcp.json");
        let text = serde_json::json!({"mcpServers": {"time": {"command": time, "args": []}}}).to_string();
        std::fs::write(&file, &text).unwrap();

        // Not accepted: no time tools, and stderr says how to accept, once.
        let (out, names) = chat_once(&sb).await;
        assert!(time_tools(&names).is_empty(), "{names:?}");
        let err = stderr(&out);
        assert_eq!(err.matches("strata mcp accept").count(), 1, "{err}");
        assert!(err.contains("`/mcp accept` in the app"), "{err}");
        assert!(
            err.contains(&format!("names the MCP servers time ({})", time.display())),
            "{err}"
        );
        let listing = sb.json(&["mcp", "list", "--json"]);
        assert_eq!(listing["servers"], serde_json::json!([]), "nothing of it starts");
        assert_eq!(listing["pending_mcp_json"]["servers"][0]["name"], "time");
        assert_eq!(listing["pending_mcp_json"]["changed"], false);

        // Accepted: it says what, and the next chat offers and calls them.
        let said = sb.ok(&["mcp", "accept"]);
        assert!(said.starts_with("Accepted "), "{said}");
        assert!(said.contains(&format!("time ({})", time.display())), "{said}");
        let server = Server::with(|n| match n {
            0 => Reply::sse(openai_calls(&[(
                "t",
                "time__get_current_time",
                r#"{"timezone":"Asia/Tokyo"}"#,
            )])),
            _ => Reply::sse(openai_text("done")),
        })
        .await;
        let out = run(openai(
            &sb,
            &server,
            &["chat", "--json", "--new", "--approve", "all", "time?"],
        ))
        .await;
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!stderr(&out).contains("mcp accept"), "{}", stderr(&out));
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let names = tool_names(&requests[0].json());
        assert_eq!(
            time_tools(&names),
            ["time__convert_time", "time__get_current_time"]
        );
        let body = requests[1].json();
        let answer = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["tool_call_id"] == "t")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .unwrap();
        // The real server's answer: the zone asked for and its time.
        assert!(
            answer.contains("Asia/Tokyo") && answer.contains("datetime"),
            "{answer}"
        );
        let statuses: Vec<Value> = of_type(&events(&out), "tool_result")
            .iter()
            .map(|r| r["status"].clone())
            .collect();
        assert_eq!(statuses, ["ok"]);
        let listing = sb.json(&["mcp", "list", "--json"]);
        assert_eq!(listing["servers"][0]["name"], "time");
        assert_eq!(listing["servers"][0]["source"], ".mcp.json");
        assert_eq!(listing["servers"][0]["status"], "ready");
        assert_eq!(listing["pending_mcp_json"], Value::Null);

        // The bytes change: pending again, nothing of it starts.
        std::fs::write(&file, format!("{text}\n")).unwrap();
        let (out, names) = chat_once(&sb).await;
        assert!(time_tools(&names).is_empty(), "{names:?}");
        let err = stderr(&out);
        assert!(err.contains("changed since it was accepted"), "{err}");
        assert_eq!(err.matches("strata mcp accept").count(), 1, "{err}");
        let listing = sb.json(&["mcp", "list", "--json"]);
        assert_eq!(listing["pending_mcp_json"]["changed"], true);

        // Declined: quiet, and still nothing of it starts.
        let said = sb.ok(&["mcp", "decline"]);
        assert!(said.starts_with("Declined "), "{said}");
        let (out, names) = chat_once(&sb).await;
        assert!(time_tools(&names).is_empty(), "{names:?}");
        assert!(!stderr(&out).contains(".mcp.json"), "{}", stderr(&out));
    });
}

#[test]
fn accept_without_a_file_is_one_sentence_and_a_broken_file_a_warning() {
    let sb = Sandbox::new();
    let out = sb.run(&["mcp", "accept"]);
    assert_eq!(out.status.code(), Some(2));
    let err = common::one_line_error(&out);
    assert!(
        err.contains("There is no .mcp.json in ") && err.contains("nothing to accept"),
        "{err}"
    );
    std::fs::write(sb.ws().join(".mcp.json"), "{\"mcpServers\": ").unwrap();
    let out = sb.run(&["mcp", "decline"]);
    assert_eq!(out.status.code(), Some(2));
    let err = common::one_line_error(&out);
    assert!(
        err.contains("it is not valid JSON") && err.ends_with("nothing was declined."),
        "{err}"
    );
    let out = sb.run(&["mcp", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("none of its servers is started"), "{err}");
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listing["pending_mcp_json"], Value::Null);
}
