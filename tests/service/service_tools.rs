#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What the session service keeps about tools while the conversation is
//! rebuilt (another model, a reload): a tool switched off stays off, and a
//! server's refusal of tools is not asked again. Against the local server.

use crate::support::server;
use crate::support::tool_sse;

use crate::support::service as service_support;

use server::{Reply, Server};
use service_support::{Dirs, history, recorder};
use strata::config::Config;
use strata::domain::ToolStatus;
use strata::runtime::service::{Command, ServiceEvent, ToolEvent};
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

fn config(server: &Server) -> Config {
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    );
    Config::parse(&text).unwrap().config
}

async fn service(server: &Server, dirs: &Dirs) -> strata::runtime::service::SessionService {
    let config = config(server);
    let id = service_support::import(dirs, &config, &history(4, "hello"));
    let (sink, _events) = recorder();
    service_support::open(dirs, config, id, true, sink)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_switched_off_stays_off_when_the_conversation_is_rebuilt() {
    let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
    let dirs = Dirs::new();
    let config = config(&server);
    let id = service_support::import(&dirs, &config, &history(4, "hello"));
    let (sink, events) = recorder();
    let mut service = service_support::open(&dirs, config, id, true, sink);
    service.send("one".into(), std::future::pending()).await.unwrap();
    service
        .run(Command::ToggleTool {
            name: "shell".into(),
            on: false,
        })
        .await
        .unwrap();
    service.run(Command::Tools).await.unwrap();
    let listed = events.lock().unwrap().iter().rev().find_map(|e| match e {
        strata::runtime::service::ServiceEvent::ToolList(l) => Some(l.clone()),
        _ => None,
    });
    let listed = listed.expect("the tools listing");
    assert_eq!(listed.head, "tools (schema tokens)");
    assert!(
        listed.rows.iter().any(|r| r == "shell off")
            && listed.rows.iter().any(|r| r.starts_with("read_file ")),
        "{listed:?}"
    );
    service.send("two".into(), std::future::pending()).await.unwrap();
    // Another model: a new prompt version and a new conversation.
    service.run(Command::Model("gpt-4.1-mini".into())).await.unwrap();
    service
        .send("three".into(), std::future::pending())
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(tool_names(&requests[0].json()).contains(&"shell".to_owned()));
    for r in &requests[1..] {
        let names = tool_names(&r.json());
        assert!(
            !names.is_empty() && !names.contains(&"shell".to_owned()),
            "{names:?}"
        );
    }
    assert_eq!(requests[2].json()["model"], "gpt-4.1-mini");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refused_tools_is_not_offered_them_again() {
    let server = Server::with(|n| match n {
        0 => Reply::json(
            400,
            r#"{"error":{"message":"tools param requires --jinja flag","type":"invalid_request_error"}}"#,
        ),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let dirs = Dirs::new();
    let mut service = service(&server, &dirs).await;
    service.send("one".into(), std::future::pending()).await.unwrap();
    service.run(Command::Model("gpt-4.1-mini".into())).await.unwrap();
    service.send("two".into(), std::future::pending()).await.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "refused, sent again without tools, the next turn"
    );
    assert!(!tool_names(&requests[0].json()).is_empty());
    assert!(tool_names(&requests[1].json()).is_empty());
    assert!(tool_names(&requests[2].json()).is_empty(), "not offered again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_settings_hold_when_the_session_is_opened_again() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_text("ok")),
        1 => Reply::json(
            400,
            r#"{"error":{"message":"model does not support tools","type":"invalid_request_error"}}"#,
        ),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let dirs = Dirs::new();
    let config = config(&server);
    let id = service_support::import(&dirs, &config, &history(4, "hello"));
    let (sink, _events) = recorder();
    let mut first = service_support::open(&dirs, config.clone(), id, true, sink.clone());
    first.send("one".into(), std::future::pending()).await.unwrap();
    first
        .run(Command::ToggleTool {
            name: "grep".into(),
            on: false,
        })
        .await
        .unwrap();
    drop(first);
    // Another process: grep stays off.
    let mut second = service_support::open(&dirs, config.clone(), id, true, sink.clone());
    second.send("two".into(), std::future::pending()).await.unwrap();
    drop(second);
    // That request was refused and sent again without tools; a third
    // process does not offer them again.
    let mut third = service_support::open(&dirs, config, id, true, sink);
    third.send("three".into(), std::future::pending()).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(tool_names(&requests[0].json()).contains(&"grep".to_owned()));
    let names = tool_names(&requests[1].json());
    assert!(
        !names.is_empty() && !names.contains(&"grep".to_owned()),
        "{names:?}"
    );
    assert!(tool_names(&requests[2].json()).is_empty());
    assert!(tool_names(&requests[3].json()).is_empty(), "the refusal holds");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_undo_edit_the_model_is_told_with_the_next_message() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[("r", "read_file", r#"{"path":"a.txt"}"#)])),
        1 => Reply::sse(openai_calls(&[(
            "e",
            "edit_file",
            r#"{"path":"a.txt","old_string":"one","new_string":"two"}"#,
        )])),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let dirs = Dirs::new();
    std::fs::write(dirs.ws.path().join("a.txt"), "one\n").unwrap();
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n[tools]\napproval = \"all\"\n",
        server.base_url()
    );
    let config = Config::parse(&text).unwrap().config;
    let id = service_support::import(&dirs, &config, &history(2, "hello"));
    let (sink, _events) = recorder();
    let mut service = service_support::open(&dirs, config, id, true, sink);
    service
        .send("change it".into(), std::future::pending())
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(dirs.ws.path().join("a.txt")).unwrap(),
        "two\n"
    );
    service.run(Command::UndoEdit).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(dirs.ws.path().join("a.txt")).unwrap(),
        "one\n"
    );
    service
        .send("and now?".into(), std::future::pending())
        .await
        .unwrap();
    let body = server.requests().last().unwrap().json();
    let said = body["messages"].to_string();
    assert!(said.contains("undid the model's last file change"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_mcp_servers_start_stops_the_wait_and_sends_nothing() {
    let server = Server::with(|_| Reply::sse(openai_text("ok"))).await;
    let dirs = Dirs::new();
    // A server that never answers `initialize`.
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n\n[mcp.servers.hang]\ncommand = \"/bin/sleep\"\nargs = [\"1000\"]\n",
        server.base_url()
    );
    let config = Config::parse(&text).unwrap().config;
    let id = service_support::import(&dirs, &config, &history(2, "hello"));
    let (sink, events) = recorder();
    let mut service = service_support::open(&dirs, config, id, true, sink);
    let started = std::time::Instant::now();
    let cancel = tokio::time::sleep(std::time::Duration::from_millis(400));
    let err = service.send("hello?".into(), cancel).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "cancelled while the MCP servers started; nothing was sent"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(server.requests().is_empty(), "nothing was sent");
    let events = events.lock().unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, strata::runtime::service::ServiceEvent::Unsent(t) if t == "hello?"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_would_fail_is_answered_with_its_error_not_offered_for_approval() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[("r", "read_file", r#"{"path":"a.txt"}"#)])),
        1 => Reply::sse(openai_calls(&[(
            "e",
            "edit_file",
            r#"{"path":"a.txt","old_string":"three","new_string":"four"}"#,
        )])),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let dirs = Dirs::new();
    std::fs::write(dirs.ws.path().join("a.txt"), "one\n").unwrap();
    let config = config(&server);
    let id = service_support::import(&dirs, &config, &history(2, "hello"));
    let (sink, events) = recorder();
    let mut service = service_support::open(&dirs, config, id, true, sink);
    // Nobody answers approvals here: a call offered for one would wait.
    tokio::time::timeout(
        std::time::Duration::from_secs(20),
        service.send("change it".into(), std::future::pending()),
    )
    .await
    .expect("the turn went on without asking")
    .unwrap();
    let events = events.lock().unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ServiceEvent::Tool(ToolEvent::ApprovalNeeded(_)))),
        "a call that would fail is not offered"
    );
    assert!(
        events.iter().any(|e| matches!(
            e,
            ServiceEvent::Tool(ToolEvent::Answered { tool_call_id, status: ToolStatus::Error })
                if tool_call_id == "e"
        )),
        "its block says it failed before the round ends"
    );
    let body = server.requests().last().unwrap().json();
    let result = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "e")
        .unwrap()["content"]
        .to_string();
    assert!(
        result.contains("`old_string` does not occur in `a.txt`"),
        "the model gets the error: {result}"
    );
    assert_eq!(
        std::fs::read_to_string(dirs.ws.path().join("a.txt")).unwrap(),
        "one\n"
    );
}
