//! MCP tools in a chat turn, end to end: `strata chat` against the local
//! SSE server with scripted calls to the real servers' tools (installed by
//! `scripts/install-mcp-servers.sh`; missing ones fail in CI). Their tools
//! come after the built-in ones, their calls go through the same approval
//! and output path, and their answers reach the model. One test at a time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::agent;
use crate::support::common;
use crate::support::mcp as mcp_support;
use crate::support::server;
use crate::support::tool_sse;

use agent::{events, of_type, openai, run};
use common::Sandbox;
use server::{Reply, Server};
use tool_sse::{openai_calls, openai_text};

fn names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn config(sb: &Sandbox) {
    config_with(sb, "", "")
}

/// The three real servers; `model` goes in `[model]`, `time` in
/// `[mcp.servers.time]`.
fn config_with(sb: &Sandbox, model: &str, time_extra: &str) {
    let [time, everything, filesystem] = mcp_support::real_servers();
    let allowed = sb.ws().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\n{model}\n[tools]\nenabled = true\n\n[mcp.servers.time]\ncommand = {:?}\n{time_extra}\n\n[mcp.servers.everything]\ncommand = {:?}\n\n[mcp.servers.filesystem]\ncommand = {:?}\nargs = [{:?}]\n",
            time.to_str().unwrap(),
            everything.to_str().unwrap(),
            filesystem.to_str().unwrap(),
            allowed.to_str().unwrap()
        ),
    )
    .unwrap();
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn the_real_servers_tools_are_offered_after_the_built_ins_and_answer_the_model() {
    mcp_support::run(async {
        let server = Server::with(|n| match n {
            0 => Reply::sse(openai_calls(&[
                ("t", "time__get_current_time", r#"{"timezone":"Asia/Tokyo"}"#),
                ("e", "everything__echo", r#"{"message":"こんにちは 世界"}"#),
                (
                    "w",
                    "filesystem__write_file",
                    r#"{"path":"/etc/strata-test-outside","content":"x"}"#,
                ),
            ])),
            _ => Reply::sse(openai_text("done")),
        })
        .await;
        let sb = Sandbox::new();
        config(&sb);
        let out = run(openai(
            &sb,
            &server,
            &["chat", "--json", "--new", "--approve", "all", "what", "time?"],
        ))
        .await;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let first = names(&requests[0].json());
        assert_eq!(
            &first[..4],
            ["read_file", "list_dir", "glob", "grep"],
            "built-ins first"
        );
        let time: Vec<&String> = first.iter().filter(|n| n.starts_with("time__")).collect();
        assert_eq!(
            time,
            ["time__convert_time", "time__get_current_time"],
            "per server, sorted"
        );
        assert!(first.iter().any(|n| n == "everything__echo"));
        assert!(first.iter().any(|n| n.starts_with("filesystem__")));
        let builtins = first.iter().position(|n| n.contains("__")).unwrap();
        assert_eq!(builtins, 10, "the built-in prefix is unchanged");
        assert_eq!(
            requests[1].json()["tools"],
            requests[0].json()["tools"],
            "stable between rounds"
        );

        let body = requests[1].json();
        let m = body["messages"].as_array().unwrap();
        let result = |id: &str| {
            m.iter()
                .find(|x| x["tool_call_id"] == id)
                .map(|x| x["content"].as_str().unwrap().to_owned())
                .unwrap()
        };
        assert!(result("t").contains("Asia/Tokyo"), "{}", result("t"));
        assert!(result("e").contains("こんにちは 世界"), "{}", result("e"));
        let refused = result("w");
        assert!(!std::path::Path::new("/etc/strata-test-outside").exists());
        assert!(
            refused.to_lowercase().contains("denied") || refused.to_lowercase().contains("outside"),
            "{refused}"
        );
        let ev = events(&out);
        let statuses: Vec<&str> = of_type(&ev, "tool_result")
            .iter()
            .map(|r| r["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses[..2], ["ok", "ok"]);
        assert_eq!(statuses[2], "error", "the server's refusal is an error result");
    });
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn a_write_tool_the_server_does_not_mark_read_only_is_denied_headless() {
    mcp_support::run(async {
        let sb = Sandbox::new();
        let target = sb.ws().join("allowed/note.txt");
        let write = serde_json::json!({"path": target, "content": "x"}).to_string();
        let server = Server::with(move |n| match n {
            0 => Reply::sse(openai_calls(&[("w", "filesystem__write_file", &write)])),
            _ => Reply::sse(openai_text("done")),
        })
        .await;
        config(&sb);
        let out = run(openai(&sb, &server, &["chat", "--json", "--new", "write"])).await;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let ev = events(&out);
        let result = of_type(&ev, "tool_result")[0].clone();
        assert_eq!(result["status"], "denied", "{ev:?}");
        assert!(!target.exists(), "nothing written");
    });
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn deferred_tools_leave_the_array_and_are_found_described_and_called_through_the_bridges() {
    mcp_support::run(async {
        let server = Server::answering(|n, _| match n {
            0 => Reply::sse(openai_calls(&[("s", "tool_search", r#"{"query":"time zone"}"#)])),
            1 => Reply::sse(openai_calls(&[(
                "d",
                "tool_describe",
                r#"{"name":"time__get_current_time"}"#,
            )])),
            2 => Reply::sse(openai_calls(&[(
                "c",
                "tool_call",
                r#"{"name":"time__get_current_time","arguments":{"timezone":"Europe/Paris"}}"#,
            )])),
            _ => Reply::sse(openai_text("done")),
        })
        .await;
        let sb = Sandbox::new();
        config_with(&sb, "", "deferred = \"always\"");
        let out = run(openai(
            &sb,
            &server,
            &["chat", "--json", "--new", "--approve", "all", "time?"],
        ))
        .await;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let requests = server.requests();
        assert_eq!(requests.len(), 4);
        let first = names(&requests[0].json());
        assert!(
            !first.iter().any(|n| n.starts_with("time__")),
            "time's tools are deferred: {first:?}"
        );
        assert!(
            first.iter().any(|n| n == "everything__echo"),
            "the others stay direct (auto at 128k)"
        );
        assert_eq!(
            &first[first.len() - 3..],
            ["tool_search", "tool_describe", "tool_call"]
        );
        let last = |i: usize| {
            let body = requests[i].json();
            body["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let found = last(1);
        let convert = found.find("time__convert_time").expect(&found);
        let current = found.find("time__get_current_time").expect(&found);
        assert!(
            convert.max(current) < found.len() / 2 + 200,
            "both near the top: {found}"
        );
        assert!(last(2).contains("timezone"), "the full schema: {}", last(2));
        assert!(last(3).contains("Europe/Paris"), "the call ran: {}", last(3));
    });
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn auto_keeps_the_servers_direct_at_128k_and_defers_them_at_16k() {
    mcp_support::run(async {
        for (window, deferred) in [(128_000, false), (16_000, true)] {
            let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
            let sb = Sandbox::new();
            config_with(&sb, &format!("context_window = {window}\nmax_tokens = 1024"), "");
            let out = run(openai(&sb, &server, &["chat", "--json", "--new", "hi"])).await;
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let body = server.requests()[0].json();
            let first = names(&body);
            let mcp = first.iter().filter(|n| n.contains("__")).count();
            let bridges = first.iter().filter(|n| n.starts_with("tool_")).count();
            if deferred {
                assert_eq!((mcp, bridges), (0, 3), "window {window}: {first:?}");
            } else {
                assert_eq!((mcp, bridges), (29, 0), "window {window}: {first:?}");
            }
            let counter = strata::tokens::TiktokenCounter::new(strata::tokens::Encoding::O200kBase, true);
            let tokens = strata::tokens::tool_schema_tokens(&counter, body["tools"].as_array().unwrap());
            eprintln!(
                "window {window}: tools array {tokens} tokens ({} tools)",
                first.len()
            );
            // `strata context --json` shows what each server costs.
            let session = events(&out)[0]["session_id"].as_str().unwrap().to_owned();
            let out = run(openai(&sb, &server, &["context", &session, "--json"])).await;
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let tools = &report["categories"]["tools"];
            assert_eq!(
                u64::from(tokens),
                tools["tokens"].as_u64().unwrap(),
                "the request's array"
            );
            let servers = tools["servers"].as_array().unwrap();
            let names: Vec<&str> = servers.iter().map(|s| s["name"].as_str().unwrap()).collect();
            assert_eq!(names, ["builtin", "everything", "filesystem", "time"]);
            let mut direct = 0;
            for server in servers {
                let rows = server["tools"].as_array().unwrap();
                let sum: u64 = rows.iter().map(|t| t["tokens"].as_u64().unwrap()).sum();
                assert_eq!(server["tokens"].as_u64().unwrap(), sum, "{server}");
                for row in rows {
                    let is_mcp = row["name"].as_str().unwrap().contains("__");
                    assert_eq!(row["deferred"].as_bool().unwrap(), deferred && is_mcp, "{row}");
                    if !row["deferred"].as_bool().unwrap() {
                        direct += row["tokens"].as_u64().unwrap();
                    }
                }
            }
            let counts: Vec<usize> = servers
                .iter()
                .map(|s| s["tools"].as_array().unwrap().len())
                .collect();
            assert_eq!(&counts[1..], [13, 14, 2], "{counts:?}");
            assert_eq!(
                direct,
                tools["tokens"].as_u64().unwrap(),
                "the direct rows are the array"
            );
            let saving = tools["deferred_saving_tokens"].as_i64().unwrap();
            if deferred {
                let all: u64 = servers.iter().map(|s| s["tokens"].as_u64().unwrap()).sum();
                let bridges: u64 = servers[0]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|t| t["name"].as_str().unwrap().starts_with("tool_"))
                    .map(|t| t["tokens"].as_u64().unwrap())
                    .sum();
                // Everything direct (no bridges) against the request's array.
                let expected = i64::try_from(all - bridges).unwrap() - i64::try_from(direct).unwrap();
                assert_eq!(saving, expected, "{tools}");
                assert!(saving > 0, "{saving}");
                eprintln!("window {window}: deferral saves {saving} tokens per request");
            } else {
                assert_eq!(saving, 0);
            }
        }
    });
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn kill_9_of_a_chat_during_an_mcp_call_leaves_no_server_behind() {
    mcp_support::run(async {
        let server = Server::with(|n| match n {
            0 => Reply::sse(openai_calls(&[(
                "long",
                "everything__trigger-long-running-operation",
                r#"{"duration":60,"steps":6}"#,
            )])),
            _ => Reply::sse(openai_text("unused")),
        })
        .await;
        let sb = Sandbox::new();
        config(&sb);
        let unique = sb.ws().join("allowed");
        let mut child = openai(
            &sb,
            &server,
            &["chat", "--json", "--new", "--approve", "all", "wait"],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
        let supervised = format!("--parent\u{0}{}\u{0}", child.id());
        assert!(
            mcp_support::eventually(30.0, || server.requests().len() == 1
                && mcp_support::processes_with(&supervised).len() == 3),
            "the three servers never ran"
        );
        // The call is under way (the server answers after 60 s).
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert!(!mcp_support::processes_with(unique.to_str().unwrap()).is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            mcp_support::eventually(10.0, || mcp_support::processes_with(&supervised).is_empty()
                && mcp_support::processes_with(unique.to_str().unwrap()).is_empty()),
            "a server outlived strata"
        );
    });
}
