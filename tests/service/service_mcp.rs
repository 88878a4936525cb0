#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The session service and its MCP servers: they start when the session
//! opens (before anything is sent), the first request waits for them and
//! the client's skip signal sends it without them, and a server that
//! changes its tool list between turns has the new list offered with the
//! next request. Against the local server and the misbehaving stdio
//! server of `tests/fixtures/mcp`.

use crate::support::server;
use crate::support::tool_sse;

use crate::support::mcp as mcp_support;
use crate::support::service as service_support;

use mcp_support::PATIENCE;
use server::{Reply, Server};
use service_support::{Dirs, history, recorder};
use std::time::{Duration, Instant};
use strata::config::Config;
use strata::conversation::Phase;
use strata::runtime::service::{Command, McpAction, ServiceEvent};
use tool_sse::{openai_calls, openai_text};

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn config(server: &Server, mcp: &str) -> Config {
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n[tools]\napproval = \"all\"\n\n{mcp}",
        server.base_url()
    );
    Config::parse(&text).unwrap().config
}

/// A service opened, interactive or not, on a stored two-exchange session
/// under `config`, with the events it sent.
fn session(
    dirs: &Dirs,
    config: Config,
    interactive: bool,
) -> (
    strata::runtime::service::SessionService,
    std::sync::Arc<std::sync::Mutex<Vec<ServiceEvent>>>,
) {
    let id = service_support::import(dirs, &config, &history(2, "hello"));
    let (sink, events) = recorder();
    (service_support::open(dirs, config, id, interactive, sink), events)
}

/// `[mcp.servers.bad]`: the misbehaving server, writing its pid to `pids`.
fn misbehaving(pids: &std::path::Path) -> String {
    format!(
        "[mcp.servers.bad]\ncommand = {:?}\nargs = [{:?}, \"--pid-file\", {:?}]\nstartup_timeout_s = 20\n",
        mcp_support::python().to_string_lossy(),
        mcp_support::misbehaving().to_string_lossy(),
        pids.to_string_lossy()
    )
}

/// Waits until the misbehaving server's `--ready-file` `listed` says it
/// has answered the whole `tools/list` with `tools` tools.
async fn until_listed(listed: &std::path::Path, tools: usize) {
    let line = format!("listed {tools} tools");
    let deadline = Instant::now() + PATIENCE;
    while !std::fs::read_to_string(listed).is_ok_and(|l| l.lines().any(|l| l == line)) {
        assert!(Instant::now() < deadline, "the server never {line}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A shell line that waits for `gate` to exist, then runs the misbehaving
/// server with `--ready-file listed`: a server that is ready only after the
/// test opens the gate.
fn late_server(gate: &std::path::Path, listed: &std::path::Path) -> String {
    format!(
        "while [ ! -e {} ]; do sleep 0.05; done; exec {} {} --ready-file {}",
        gate.display(),
        mcp_support::python().display(),
        mcp_support::misbehaving().display(),
        listed.display()
    )
}

/// Gives the skip signal every 50 ms until aborted: it counts only while
/// a request waits for the servers, whenever that begins.
fn keep_skipping(skip: std::sync::Arc<tokio::sync::Notify>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            skip.notify_waiters();
        }
    })
}

#[test]
fn the_servers_start_when_the_session_opens_before_anything_is_sent() {
    mcp_support::run(async {
        let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
        let dirs = Dirs::new();
        let pids = dirs.ws.path().join("pids");
        let config = config(&server, &misbehaving(&pids));
        let (service, _events) = session(&dirs, config, true);
        // Nothing was sent, and the server runs already.
        let started = mcp_support::eventually(PATIENCE.as_secs_f64(), || {
            std::fs::read_to_string(&pids).is_ok_and(|p| !p.trim().is_empty())
        });
        assert!(started, "the server was not started when the session opened");
        assert!(server.requests().is_empty());
        drop(service);
    });
}

#[test]
fn the_skip_signal_sends_the_first_request_without_the_servers_still_starting() {
    mcp_support::run(async {
        let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
        let dirs = Dirs::new();
        // A server that never answers `initialize`, with a long timeout.
        let config = config(
            &server,
            "[mcp.servers.hang]\ncommand = \"/bin/sleep\"\nargs = [\"1000\"]\nstartup_timeout_s = 60\n",
        );
        let (mut service, events) = session(&dirs, config, true);
        let skip = service.skip_signal();
        // A skip while nothing waits is dropped; the one during the wait counts.
        skip.notify_waiters();
        let skipper = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(600)).await;
            skip.notify_waiters();
        });
        let started = Instant::now();
        service
            .send("hello?".into(), std::future::pending())
            .await
            .unwrap();
        skipper.await.unwrap();
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(500),
            "it did not wait: {waited:?}"
        );
        assert!(waited < Duration::from_secs(10), "{waited:?}");
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "the request went out");
        let names = tool_names(&requests[0].json());
        assert!(names.contains(&"read_file".to_owned()), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with("hang__")), "{names:?}");
        let events = events.lock().unwrap();
        assert!(events.iter().any(|e| matches!(
            e,
            ServiceEvent::Phase(Phase::StartingServers { ready: 0, total: 1 })
        )));
        assert!(events.iter().any(|e| matches!(
            e,
            ServiceEvent::Notice(n) if n.starts_with("sent without the MCP servers still starting")
        )));
    });
}

#[test]
fn a_tool_list_changed_between_turns_is_offered_with_the_next_request() {
    mcp_support::run(async {
        // Turn one: the model calls `bad__add_tool`, which adds `extra` and
        // sends `notifications/tools/list_changed`; then it answers.
        let server = Server::with(|n| match n {
            0 => Reply::sse(openai_calls(&[("call_1", "bad__add_tool", "{}")])),
            _ => Reply::sse(openai_text("ok")),
        })
        .await;
        let dirs = Dirs::new();
        let pids = dirs.ws.path().join("pids");
        let listed = dirs.ws.path().join("listed");
        let bad = misbehaving(&pids).replace(
            "]\nstartup_timeout_s",
            &format!(
                ", \"--ready-file\", {:?}]\nstartup_timeout_s",
                listed.to_string_lossy()
            ),
        );
        let config = config(&server, &bad);
        let (mut service, events) = session(&dirs, config, false);
        service
            .send("add one".into(), std::future::pending())
            .await
            .unwrap();
        let first = tool_names(&server.requests()[0].json());
        assert!(first.contains(&"bad__add_tool".to_owned()), "{first:?}");
        assert!(!first.contains(&"bad__extra".to_owned()), "{first:?}");
        // The notification arrives on its own time (the hub lists the
        // tools again); the next turn takes it.
        until_listed(&listed, 13).await;
        // The hub reads the answer on a task of its own: a turn that starts
        // before it has goes with the old list, and the next one takes it.
        let deadline = Instant::now() + PATIENCE;
        let last = loop {
            service
                .send("again".into(), std::future::pending())
                .await
                .unwrap();
            let requests = server.requests();
            let last = tool_names(&requests.last().unwrap().json());
            if last.contains(&"bad__extra".to_owned()) || Instant::now() > deadline {
                break last;
            }
        };
        assert!(last.contains(&"bad__extra".to_owned()), "{last:?}");
        // The built-in prefix keeps its place and bytes.
        assert_eq!(first[0], last[0]);
        let events = events.lock().unwrap();
        assert!(events.iter().any(|e| matches!(
            e,
            ServiceEvent::Notice(n) if n.starts_with("MCP server bad changed its tools")
        )));
    });
}

/// Every answer to `/mcp` so far, oldest first.
fn mcp_lists(events: &std::sync::Mutex<Vec<ServiceEvent>>) -> Vec<strata::runtime::service::Listing> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ServiceEvent::McpList(l) => Some(l.clone()),
            _ => None,
        })
        .collect()
}

fn notices(events: &std::sync::Mutex<Vec<ServiceEvent>>) -> Vec<String> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ServiceEvent::Notice(n) => Some(n.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn mcp_lists_the_servers_and_switches_one_off_for_the_session_even_after_a_restart() {
    mcp_support::run(async {
        let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
        let dirs = Dirs::new();
        let pids = dirs.ws.path().join("pids");
        let config = config(&server, &format!("{}deferred = \"always\"\n", misbehaving(&pids)));
        let id = service_support::import(&dirs, &config, &history(2, "hello"));
        let (sink, events) = recorder();
        let mut service = service_support::open(&dirs, config.clone(), id, true, sink);
        service.send("one".into(), std::future::pending()).await.unwrap();
        let first = tool_names(&server.requests()[0].json());
        assert!(first.contains(&"tool_search".to_owned()), "deferred: {first:?}");
        service.run(Command::Mcp(McpAction::List)).await.unwrap();
        service.run(Command::Tools).await.unwrap();
        let listing = mcp_lists(&events).into_iter().next().unwrap();
        assert!(listing.head.starts_with("MCP servers"), "{listing:?}");
        let items: Vec<&str> = listing.rows.iter().map(String::as_str).collect();
        assert!(items[0].starts_with("builtin  builtin  "), "{items:?}");
        let bad = items.iter().find(|i| i.starts_with("bad  ready  ")).unwrap();
        assert!(bad.contains("deferred"), "{bad}");
        assert!(
            items
                .iter()
                .any(|i| i.trim().starts_with("bad__add_tool") && i.ends_with("deferred"))
        );
        assert!(items.iter().any(|i| i.starts_with("deferral saves")), "{items:?}");
        // `/tools` says which tools are deferred rather than listing them as sent.
        let tools = events
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match e {
                ServiceEvent::ToolList(l) => Some(l.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(tools.head, "tools (schema tokens)");
        assert!(
            tools.rows.iter().any(|r| r.starts_with("tool_search ")),
            "{tools:?}"
        );
        assert!(
            tools
                .rows
                .iter()
                .any(|r| r.starts_with("bad__add_tool ") && r.ends_with(" deferred")),
            "{tools:?}"
        );
        service
            .run(Command::Mcp(McpAction::Switch {
                server: "bad".into(),
                on: false,
            }))
            .await
            .unwrap();
        assert!(
            notices(&events)
                .iter()
                .any(|n| n.starts_with("MCP server bad is off for this session"))
        );
        service.send("two".into(), std::future::pending()).await.unwrap();
        let off = tool_names(&server.requests()[1].json());
        assert!(
            !off.iter()
                .any(|n| n.starts_with("bad__") || n.starts_with("tool_")),
            "{off:?}"
        );
        let unknown = service
            .run(Command::Mcp(McpAction::Switch {
                server: "nope".into(),
                on: false,
            }))
            .await
            .unwrap_err();
        assert!(unknown.to_string().contains("the servers are: bad"), "{unknown}");
        drop(service);
        // A new process on the same session: still off, until switched on.
        let (sink, _events) = recorder();
        let mut service = service_support::open(&dirs, config, id, true, sink);
        service
            .send("three".into(), std::future::pending())
            .await
            .unwrap();
        let again = tool_names(&server.requests()[2].json());
        assert_eq!(
            again, off,
            "the server stays off when the session is opened again"
        );
        service
            .run(Command::Mcp(McpAction::Switch {
                server: "bad".into(),
                on: true,
            }))
            .await
            .unwrap();
        service.send("four".into(), std::future::pending()).await.unwrap();
        let on = tool_names(&server.requests()[3].json());
        assert_eq!(on, first, "on again: the same array as before");
    });
}

#[test]
fn a_workspace_mcp_json_is_announced_and_started_once_accepted_in_the_app() {
    mcp_support::run(async {
        let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
        let dirs = Dirs::new();
        let pids = dirs.ws.path().join("pids");
        std::fs::write(
            dirs.ws.path().join(".mcp.json"),
            serde_json::json!({"mcpServers": {"bad": {
                "command": mcp_support::python(),
                "args": [mcp_support::misbehaving(), "--pid-file", pids],
            }}})
            .to_string(),
        )
        .unwrap();
        let config = config(&server, "");
        let (mut service, events) = session(&dirs, config, true);
        let said = notices(&events);
        assert!(
            said.iter()
                .any(|n| n.contains(".mcp.json") && n.contains("/mcp accept")),
            "{said:?}"
        );
        service.send("one".into(), std::future::pending()).await.unwrap();
        let before = tool_names(&server.requests()[0].json());
        assert!(!before.iter().any(|n| n.starts_with("bad__")), "{before:?}");
        assert!(!pids.exists(), "nothing of the file was started");
        service.run(Command::Mcp(McpAction::Accept)).await.unwrap();
        assert!(notices(&events).iter().any(|n| n.starts_with("Accepted ")));
        service.send("two".into(), std::future::pending()).await.unwrap();
        let after = tool_names(&server.requests()[1].json());
        assert!(after.contains(&"bad__add_tool".to_owned()), "{after:?}");
        // Declined again: the server stops and its tools leave the array.
        let pid: u32 = std::fs::read_to_string(&pids)
            .unwrap()
            .trim()
            .lines()
            .last()
            .unwrap()
            .parse()
            .unwrap();
        service.run(Command::Mcp(McpAction::Decline)).await.unwrap();
        service
            .send("three".into(), std::future::pending())
            .await
            .unwrap();
        let declined = tool_names(&server.requests()[2].json());
        assert_eq!(declined, before, "back to the built-in tools");
        assert!(mcp_support::gone(&[pid]), "the declined server stopped");
    });
}

#[test]
fn an_allow_tools_name_the_server_does_not_list_is_a_warning_not_silence() {
    mcp_support::run(async {
        let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
        let dirs = Dirs::new();
        let pids = dirs.ws.path().join("pids");
        let config = config(
            &server,
            &format!(
                "{}allow_tools = [\"bad__add_tool\", \"add_tool\"]\n",
                misbehaving(&pids)
            ),
        );
        let (mut service, events) = session(&dirs, config, true);
        service.send("one".into(), std::future::pending()).await.unwrap();
        let names = tool_names(&server.requests()[0].json());
        let mcp: Vec<&String> = names.iter().filter(|n| n.contains("__")).collect();
        assert_eq!(mcp, ["bad__add_tool"]);
        let said = notices(&events);
        assert!(
            said.iter().any(|n| n.starts_with(
                "warning: [mcp.servers.bad] allow_tools names `bad__add_tool`, which the server does not list"
            )),
            "{said:?}"
        );
    });
}

#[test]
fn a_tool_its_server_does_not_mark_read_only_asks_for_approval_and_runs_once_allowed() {
    use strata::conversation::Approval;
    use strata::runtime::ApprovalAnswer;
    mcp_support::run(async {
        let server = Server::with(|n| match n {
            0 => Reply::sse(openai_calls(&[("call_1", "bad__add_tool", "{}")])),
            _ => Reply::sse(openai_text("ok")),
        })
        .await;
        let dirs = Dirs::new();
        let pids = dirs.ws.path().join("pids");
        // `approval = "ask"`, the default.
        let text = format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n\n{}",
            server.base_url(),
            misbehaving(&pids)
        );
        let config = Config::parse(&text).unwrap().config;
        let id = service_support::import(&dirs, &config, &history(2, "hello"));
        let answers: std::sync::Arc<
            std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedSender<ApprovalAnswer>>>,
        > = std::sync::Arc::default();
        let asked: std::sync::Arc<std::sync::Mutex<Vec<String>>> = std::sync::Arc::default();
        let (slot, seen) = (std::sync::Arc::clone(&answers), std::sync::Arc::clone(&asked));
        let sink: strata::runtime::service::Sink = std::sync::Arc::new(move |e| {
            if let ServiceEvent::Tool(strata::runtime::service::ToolEvent::ApprovalNeeded(request)) = e {
                seen.lock().unwrap().push(request.call.name.clone());
                if let Some(tx) = slot.lock().unwrap().as_ref() {
                    let _ = tx.send(ApprovalAnswer {
                        tool_call_id: request.call.id.clone(),
                        approval: Approval::Once,
                    });
                }
            }
        });
        let mut service = service_support::open(&dirs, config, id, true, sink);
        *answers.lock().unwrap() = Some(service.approvals());
        service
            .send("add one".into(), std::future::pending())
            .await
            .unwrap();
        assert_eq!(*asked.lock().unwrap(), ["bad__add_tool"]);
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let result = requests[1].json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .cloned()
            .unwrap();
        assert_eq!(result["tool_call_id"], "call_1");
        assert!(
            !result["content"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("denied"),
            "{result}"
        );
    });
}

#[test]
fn a_server_the_first_request_went_without_stays_out_when_it_is_ready_later() {
    mcp_support::run(async {
        let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
        let dirs = Dirs::new();
        // The misbehaving server, started once `gate` exists.
        let (gate, listed) = (dirs.ws.path().join("gate"), dirs.ws.path().join("listed"));
        let late = format!(
            "[mcp.servers.late]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"{}\"]\nstartup_timeout_s = 30\n",
            late_server(&gate, &listed)
        );
        let config = config(&server, &late);
        let (mut service, events) = session(&dirs, config, true);
        let skipper = keep_skipping(service.skip_signal());
        service.send("one".into(), std::future::pending()).await.unwrap();
        skipper.abort();
        std::fs::write(&gate, "").unwrap();
        until_listed(&listed, 12).await;
        service.send("two".into(), std::future::pending()).await.unwrap();
        for request in server.requests() {
            let names = tool_names(&request.json());
            assert!(!names.iter().any(|n| n.starts_with("late__")), "{names:?}");
        }
        assert!(!notices(&events).iter().any(|n| n.contains("changed its tools")));
    });
}

#[test]
fn a_cancel_while_servers_start_for_a_new_session_stores_no_session() {
    mcp_support::run(async {
        let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
        let dirs = Dirs::new();
        let config = config(
            &server,
            "[mcp.servers.hang]\ncommand = \"/bin/sleep\"\nargs = [\"1000\"]\nstartup_timeout_s = 60\n",
        );
        let (sink, events) = recorder();
        let mut service = service_support::open_new(&dirs, config, true, sink);
        let cancel = tokio::time::sleep(Duration::from_millis(400));
        let err = service.send("hello?".into(), cancel).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "cancelled while the MCP servers started; nothing was sent"
        );
        assert!(server.requests().is_empty());
        let store = strata::store::Store::open(dirs.paths().database()).unwrap();
        assert!(
            store
                .list_sessions(&strata::store::SessionQuery::default())
                .unwrap()
                .is_empty(),
            "no empty session was stored"
        );
        let events = events.lock().unwrap();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, ServiceEvent::Unsent(t) if t == "hello?"))
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, ServiceEvent::Notice(n) if n.contains("interrupted")))
        );
    });
}

#[test]
fn servers_started_again_by_an_accept_join_once_ready_even_after_esc() {
    mcp_support::run(async {
        let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
        let dirs = Dirs::new();
        let pids = dirs.ws.path().join("pids");
        // A `.mcp.json` server started once `gate` exists.
        let (gate, listed) = (dirs.ws.path().join("gate"), dirs.ws.path().join("listed"));
        std::fs::write(
            dirs.ws.path().join(".mcp.json"),
            serde_json::json!({"mcpServers": {"late": {
                "command": "/bin/sh",
                "args": ["-c", late_server(&gate, &listed)],
            }}})
            .to_string(),
        )
        .unwrap();
        let config = config(&server, &misbehaving(&pids));
        let (mut service, events) = session(&dirs, config, true);
        service.send("one".into(), std::future::pending()).await.unwrap();
        assert!(tool_names(&server.requests()[0].json()).contains(&"bad__add_tool".to_owned()));
        service.run(Command::Mcp(McpAction::Accept)).await.unwrap();
        let skipper = keep_skipping(service.skip_signal());
        service.send("two".into(), std::future::pending()).await.unwrap();
        skipper.abort();
        let second = tool_names(&server.requests()[1].json());
        assert!(
            !second.iter().any(|n| n.starts_with("late__")),
            "sent without it: {second:?}"
        );
        std::fs::write(&gate, "").unwrap();
        // `/mcp` says when both are ready (the skipped one not yet offered).
        let deadline = Instant::now() + PATIENCE;
        loop {
            service.run(Command::Mcp(McpAction::List)).await.unwrap();
            let listing = mcp_lists(&events).pop().unwrap();
            let ready = |name: &str| {
                listing
                    .rows
                    .iter()
                    .any(|r| r.starts_with(&format!("{name}  ready  ")))
            };
            if ready("bad") && ready("late") {
                break;
            }
            assert!(Instant::now() < deadline, "not both ready: {listing:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        service
            .send("three".into(), std::future::pending())
            .await
            .unwrap();
        let third = tool_names(&server.requests()[2].json());
        assert!(
            third.contains(&"bad__add_tool".to_owned()),
            "the config's server is not lost: {third:?}"
        );
        assert!(
            third.contains(&"late__add_tool".to_owned()),
            "the accepted one joined: {third:?}"
        );
    });
}

/// Each offered tool's description by name.
fn described(body: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["function"]["name"].as_str().unwrap().to_owned(),
                t["function"]["description"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A server adds `add.tool` next to `add_tool` (both `bad__add_tool` once
/// sanitised; `add.tool` sorts first). The session named `add_tool` first,
/// so it keeps `bad__add_tool` and the newcomer gets the suffix — after
/// `tools/list_changed`, and after the session is resumed by a new service
/// whose server lists both from the start. A session new to both names
/// them afresh.
#[test]
fn a_tool_keeps_its_name_when_a_colliding_tool_appears_and_after_a_resume() {
    mcp_support::run(async {
        let server = Server::with(|n| match n {
            0 => Reply::sse(openai_calls(&[("call_1", "bad__add_tool", "{}")])),
            _ => Reply::sse(openai_text("ok")),
        })
        .await;
        let dirs = Dirs::new();
        let pids = dirs.ws.path().join("pids");
        let listed = dirs.ws.path().join("listed");
        let with = |flags: &str| {
            misbehaving(&pids).replace(
                "]\nstartup_timeout_s",
                &format!(
                    ", \"--ready-file\", {:?}, \"--adds\", \"add.tool\"{flags}]\nstartup_timeout_s",
                    listed.to_string_lossy()
                ),
            )
        };
        let config_now = config(&server, &with(""));
        let id = service_support::import(&dirs, &config_now, &history(2, "hello"));
        let (sink, _events) = recorder();
        let mut service = service_support::open(&dirs, config_now, id, false, sink);
        service
            .send("add one".into(), std::future::pending())
            .await
            .unwrap();
        until_listed(&listed, 13).await;
        let deadline = Instant::now() + PATIENCE;
        let tools = loop {
            service
                .send("again".into(), std::future::pending())
                .await
                .unwrap();
            let tools = described(&server.requests().last().unwrap().json());
            if tools.contains_key("bad__add_tool_2") || Instant::now() > deadline {
                break tools;
            }
        };
        assert_eq!(
            tools["bad__add_tool"], "Add a tool and say the list changed.",
            "{tools:?}"
        );
        assert_eq!(tools["bad__add_tool_2"], "Added later.", "{tools:?}");
        drop(service);

        // Resumed: the server lists both from the start.
        let config_later = config(&server, &with(", \"--also\", \"add.tool\""));
        let (sink, _events) = recorder();
        let mut service = service_support::open(&dirs, config_later.clone(), id, false, sink);
        service
            .send("resumed".into(), std::future::pending())
            .await
            .unwrap();
        let tools = described(&server.requests().last().unwrap().json());
        assert_eq!(
            tools["bad__add_tool"], "Add a tool and say the list changed.",
            "{tools:?}"
        );
        assert_eq!(tools["bad__add_tool_2"], "Listed from the start.", "{tools:?}");
        drop(service);

        // A session that never named them: `add.tool` sorts first.
        let (mut service, _events) = session(&dirs, config_later, false);
        service
            .send("fresh".into(), std::future::pending())
            .await
            .unwrap();
        let tools = described(&server.requests().last().unwrap().json());
        assert_eq!(tools["bad__add_tool"], "Listed from the start.", "{tools:?}");
        assert_eq!(
            tools["bad__add_tool_2"], "Add a tool and say the list changed.",
            "{tools:?}"
        );
    });
}
