//! A local OpenAI-compatible server's served window: asked of the server
//! (llama.cpp, Ollama, vLLM and LM Studio answers, recorded, served by the
//! local test server), remembered per base URL and model, followed by the
//! reserve and the threshold; stated by an overflow error; and the config's
//! `context_window` winning over what a server says. The real binary
//! against a temporary home.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::compress_cli as compress_cli_support;
use crate::support::server;

use common::Sandbox;
use compress_cli_support::*;
use serde_json::Value;
use server::{Reply, Server};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/served_window/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// `strata chat --json MESSAGE` against `server`; returns the events.
async fn chat(sb: &Sandbox, server: &Server, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["chat", "--json", "--tools", "off"];
    args.extend_from_slice(extra);
    args.push("hello there");
    let out = run(openai(sb, &server.base_url(), &args)).await;
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

fn session_of(events: &[Value]) -> String {
    events
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .expect("an event names the session")
        .to_owned()
}

fn notices(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| {
            e["message"]
                .as_str()
                .or_else(|| e["text"].as_str())
                .map(str::to_owned)
        })
        .collect()
}

/// `strata context ID --json` with the same server in the environment.
async fn context(sb: &Sandbox, server: &Server, id: &str) -> Value {
    json_of(
        &run(openai(
            sb,
            &server.base_url(),
            &["context", id, "--json", "--no-mcp"],
        ))
        .await,
    )
}

#[tokio::test]
async fn a_llama_cpp_window_is_discovered_once_and_sizes_reserve_and_threshold() {
    let sb = Sandbox::new();
    let server = Server::start(vec![Reply::sse(sse("Hi.", Some(40)))]).await;
    server.answer_discovery("/v1/models", Reply::json(200, &fixture("llama_cpp_models.json")));
    let events = chat(&sb, &server, &[]).await;
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.contains("3,072 tokens") && n.contains("llama.cpp")),
        "{said:?}"
    );
    let body = server.requests()[0].json();
    assert_eq!(body["max_tokens"], 768, "a quarter of the served window: {body}");
    let id = session_of(&events);
    let ctx = context(&sb, &server, &id).await;
    assert_eq!(ctx["window"], 3072, "{ctx}");
    assert_eq!(ctx["window_source"], "server");
    assert_eq!(ctx["reserved_output"], 768);
    assert!(
        ctx["threshold"]["effective"].as_u64().unwrap() < 3072 - 768,
        "{}",
        ctx["threshold"]
    );
    // The half-window rule of a pin uses the served window too.
    let pin = json_of(&run(openai(&sb, &server.base_url(), &["pin", &id, "1", "--json"])).await);
    assert_eq!(pin["pinned_limit"], (3072 - 768) / 2, "{pin}");
    // A second process asks again (the server may have been restarted
    // with another window) and, the answer being the same, says nothing.
    let asked = server.discovery_requests().len();
    let again = chat(&sb, &server, &["--session", &id]).await;
    assert_eq!(
        server.discovery_requests().len(),
        asked + 1,
        "one question: llama.cpp answers the first"
    );
    assert!(
        !notices(&again).iter().any(|n| n.contains("3,072")),
        "{:?}",
        notices(&again)
    );
}

#[tokio::test]
async fn a_window_an_overflow_stated_gives_way_to_what_the_server_says_later() {
    let sb = Sandbox::new();
    write_config(&sb, "[compression]\nsummarizer = \"extractive\"\n");
    let id = import_openai(&sb, &history(12, 3000));
    let overflowing = Server::with(|i| match i {
        0 => Reply::json(400, &fixture("llama_cpp_overflow.json")),
        _ => Reply::sse(sse("Fixed.", Some(900))),
    })
    .await;
    chat(&sb, &overflowing, &["--session", &id]).await;
    assert_eq!(
        context(&sb, &overflowing, &id).await["window_source"],
        "overflow_error"
    );
    // The same address later serves a window it states: a new process asks.
    overflowing.answer_discovery("/v1/models", Reply::json(200, &fixture("llama_cpp_models.json")));
    chat(&sb, &overflowing, &["--session", &id]).await;
    let ctx = context(&sb, &overflowing, &id).await;
    assert_eq!(
        (ctx["window"].as_u64(), ctx["window_source"].as_str()),
        (Some(3072), Some("server")),
        "{ctx}"
    );
}

#[tokio::test]
async fn ollama_says_num_ctx_through_api_show_and_its_default_when_unset() {
    for (show, window) in [("ollama_show.json", 6144), ("ollama_show_default.json", 4096)] {
        let sb = Sandbox::new();
        let server = Server::start(vec![Reply::sse(sse("Hi.", Some(40)))]).await;
        server.answer_discovery("/v1/models", Reply::json(200, &fixture("ollama_models.json")));
        server.answer_discovery("/api/show", Reply::json(200, &fixture(show)));
        let events = chat(&sb, &server, &["--model", "qwen2.5:0.5b"]).await;
        let asked = server.discovery_requests();
        let show_request = asked
            .iter()
            .find(|r| r.path == "/api/show")
            .expect("asked /api/show");
        assert_eq!(show_request.method, "POST");
        assert_eq!(show_request.json()["model"], "qwen2.5:0.5b");
        let ctx = context(&sb, &server, &session_of(&events)).await;
        assert_eq!(ctx["window"], window, "{show}: {ctx}");
        assert_eq!(ctx["window_source"], "server");
    }
}

#[tokio::test]
async fn vllm_and_lm_studio_windows_are_read_from_their_model_lists() {
    for (path, file, model, window) in [
        (
            "/v1/models",
            "vllm_models.json",
            "Qwen/Qwen2.5-1.5B-Instruct",
            12288,
        ),
        (
            "/api/v0/models",
            "lm_studio_models.json",
            "qwen2.5-7b-instruct",
            5120,
        ),
    ] {
        let sb = Sandbox::new();
        let server = Server::start(vec![Reply::sse(sse("Hi.", Some(40)))]).await;
        server.answer_discovery(path, Reply::json(200, &fixture(file)));
        let events = chat(&sb, &server, &["--model", model]).await;
        let ctx = context(&sb, &server, &session_of(&events)).await;
        assert_eq!(ctx["window"], window, "{file}: {ctx}");
        assert_eq!(ctx["window_source"], "server");
    }
}

#[tokio::test]
async fn the_config_wins_over_a_served_window_and_a_smaller_one_is_said_once() {
    let sb = Sandbox::new();
    write_config(&sb, "[model]\ncontext_window = 8000\n");
    let server = Server::start(vec![Reply::sse(sse("Hi.", Some(40)))]).await;
    server.answer_discovery("/v1/models", Reply::json(200, &fixture("llama_cpp_models.json")));
    let events = chat(&sb, &server, &[]).await;
    let said = notices(&events);
    let id = session_of(&events);
    let ctx = context(&sb, &server, &id).await;
    assert_eq!(ctx["window"], 8000, "{ctx}");
    assert_eq!(ctx["window_source"], "config");
    // The server was asked, and its smaller window is said (once a process).
    let events = chat(&sb, &server, &["--session", &id]).await;
    let again = notices(&events);
    let smaller: Vec<_> = said
        .iter()
        .chain(&again)
        .filter(|n| n.contains("3,072") || n.contains("3072"))
        .collect();
    assert!(!smaller.is_empty(), "{said:?} {again:?}");
    assert!(
        again
            .iter()
            .filter(|n| n.contains("context_window says 8000"))
            .count()
            <= 1,
        "{again:?}"
    );
}

#[tokio::test]
async fn an_overflow_error_states_the_window_which_then_wins_and_is_remembered() {
    let sb = Sandbox::new();
    write_config(&sb, "[compression]\nsummarizer = \"extractive\"\n");
    // About 9,000 tokens of history: more than the 3,072 the server serves.
    let id = import_openai(&sb, &history(12, 3000));
    let server = Server::with(|i| match i {
        0 => Reply::json(400, &fixture("llama_cpp_overflow.json")),
        _ => Reply::sse(sse("Fixed.", Some(900))),
    })
    .await;
    let events = chat(&sb, &server, &["--session", &id]).await;
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.contains("3,072 tokens") && n.contains("from now on")),
        "{said:?}"
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the overflow, then the retry after compressing"
    );
    let retry = requests[1].json();
    assert!(
        retry["max_tokens"].as_u64().unwrap() <= 768,
        "{}",
        retry["max_tokens"]
    );
    let ctx = context(&sb, &server, &id).await;
    assert_eq!(ctx["window"], 3072, "{ctx}");
    assert_eq!(ctx["window_source"], "overflow_error");
}

#[tokio::test]
async fn an_overflow_under_a_configured_window_says_the_config_wins_again_next_run() {
    let sb = Sandbox::new();
    write_config(
        &sb,
        "[model]\ncontext_window = 8000\n[compression]\nsummarizer = \"extractive\"\n",
    );
    let id = import_openai(&sb, &history(12, 3000));
    let server = Server::with(|i| match i {
        0 => Reply::json(400, &fixture("llama_cpp_overflow.json")),
        _ => Reply::sse(sse("Fixed.", Some(900))),
    })
    .await;
    let events = chat(&sb, &server, &["--session", &id]).await;
    let said = notices(&events);
    assert!(
        said.iter().any(|n| n.contains("3,072 tokens")
            && n.contains("for the rest of this run; set [model] context_window = 3072")),
        "{said:?}"
    );
    assert!(!said.iter().any(|n| n.contains("from now on")), "{said:?}");
}

#[tokio::test]
async fn a_summary_request_too_big_for_the_served_window_is_not_sent_and_the_extractive_summariser_writes_it()
{
    let sb = Sandbox::new();
    // About 9,000 tokens of history, the session's own model as summariser
    // (the default `auto`), and a server serving 3,072 tokens.
    let id = import_openai(&sb, &history(12, 3000));
    let server = Server::start(vec![Reply::sse(sse("Fixed.", Some(900)))]).await;
    server.answer_discovery("/v1/models", Reply::json(200, &fixture("llama_cpp_models.json")));
    let events = chat(&sb, &server, &["--session", &id]).await;
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.contains("does not fit the model's 3,072-token window")
                && n.contains("extractive summariser")),
        "{said:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "only the turn's request reached the server");
    let ctx = context(&sb, &server, &id).await;
    assert_eq!(
        ctx["compression"]["last_compaction"]["summarizer"], "extractive",
        "{}",
        ctx["compression"]
    );
}

#[tokio::test]
async fn older_messages_left_out_to_fit_the_served_window_are_said_once() {
    let sb = Sandbox::new();
    // Compression off: about 9,000 tokens of history on a 3,072-token server.
    write_config(&sb, "[compression]\nenabled = false\n");
    let id = import_openai(&sb, &history(12, 3000));
    let server = Server::start(vec![Reply::sse(sse("Fine.", Some(900)))]).await;
    server.answer_discovery("/v1/models", Reply::json(200, &fixture("llama_cpp_models.json")));
    let events = chat(&sb, &server, &["--session", &id]).await;
    let said: Vec<String> = notices(&events)
        .into_iter()
        .filter(|n| n.contains("left out of this request"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("older messages (~")
            && said[0]
                .contains("to fit the 3,072-token window; `strata compress ID` summarises them instead"),
        "{said:?}"
    );
    let sent = server.requests()[0].json();
    assert!(sent["messages"].as_array().unwrap().len() < 25, "{sent}");
}
