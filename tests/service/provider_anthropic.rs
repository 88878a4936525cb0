//! The Anthropic Messages provider against a local HTTP server replaying
//! handwritten streams in the documented event format, with checks on every
//! request body it sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::events;
use crate::support::server;

use events::{collect, fast_retry, finish_reason, text, timeouts, tool_calls, usages};
use serde_json::{Value, json};
use server::{Recorded, Reply, Server};
use strata::domain::{
    ChatRequest, FinishReason, ProviderUsage, RequestMessage, RequestSystem, Role, StreamEvent, ToolCall,
};
use strata::provider::{AnthropicProvider, HttpProviderConfig, Provider, ProviderError, Wire};

const TEXT_WITH_PING: &str = include_str!("../fixtures/sse/anthropic-text-with-ping.sse");
const TOOL_USE: &str = include_str!("../fixtures/sse/anthropic-tool-use.sse");
const KEY: &str = "sk-ant-test-93b1e0";
const FROZEN: &str =
    "# strata\nYou are a careful assistant. Ünïcode: 世界 🎉\n## Workspace\nsrc/main.rs changed";

fn provider_for(server: &Server, key: Option<&str>) -> AnthropicProvider {
    AnthropicProvider::new(HttpProviderConfig {
        base_url: format!("{}/", server.base_url()),
        api_key: key.map(str::to_owned),
        key_env: Wire::Anthropic.key_env().to_owned(),
        retry: fast_retry(),
        timeouts: timeouts(),
    })
    .unwrap()
}

fn msg(role: Role, content: &str) -> RequestMessage {
    RequestMessage {
        role,
        content: content.to_owned(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn request(messages: Vec<RequestMessage>) -> ChatRequest {
    ChatRequest {
        model: "claude-sonnet-4-5".to_owned(),
        system: RequestSystem {
            text: FROZEN.to_owned(),
            boundary_offset: FROZEN.find("## Workspace"),
        },
        messages,
        max_tokens: 1024,
        tools: Vec::new(),
        temperature: None,
    }
}

fn simple() -> ChatRequest {
    request(vec![msg(Role::User, "Hello")])
}

/// A conversation with imported system text, tool calls and their results.
fn with_tools() -> ChatRequest {
    let mut assistant = msg(Role::Assistant, "Reading both.");
    assistant.tool_calls = vec![
        ToolCall {
            id: "toolu_a".to_owned(),
            name: "read".to_owned(),
            arguments: r#"{"path":"a.rs"}"#.to_owned(),
        },
        ToolCall {
            id: "toolu_b".to_owned(),
            name: "read".to_owned(),
            arguments: "{\"path\": \"b.r".to_owned(),
        },
    ];
    let result = |id: &str| RequestMessage {
        role: Role::Tool,
        content: format!("contents of {id}"),
        tool_calls: Vec::new(),
        tool_call_id: Some(id.to_owned()),
    };
    let mut req = request(vec![
        msg(Role::System, "Imported: be brief."),
        msg(Role::User, "Read a.rs and b.rs."),
        assistant,
        result("toolu_a"),
        result("toolu_b"),
        msg(Role::User, "Compare them."),
        msg(Role::Assistant, "They differ."),
        msg(Role::User, "How?"),
    ]);
    req.tools = vec![
        json!({"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}),
    ];
    req
}

fn count_markers(value: &Value) -> usize {
    match value {
        Value::Object(map) => {
            usize::from(map.contains_key("cache_control")) + map.values().map(count_markers).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_markers).sum(),
        _ => 0,
    }
}

/// The invariants every request body must hold.
fn check_body(recorded: &Recorded, frozen: &str) -> Value {
    let body = recorded.json();
    assert!(count_markers(&body) <= 4, "at most four cache_control markers");
    let system = body["system"].as_array().unwrap();
    let marked: Vec<&Value> = system
        .iter()
        .filter(|b| b.get("cache_control").is_some())
        .collect();
    let joined: String = marked.iter().map(|b| b["text"].as_str().unwrap()).collect();
    assert_eq!(
        joined, frozen,
        "the marked system blocks are the frozen prompt, byte for byte"
    );
    let messages = body["messages"].as_array().unwrap();
    for (i, message) in messages.iter().enumerate() {
        let expected = if i % 2 == 0 { "user" } else { "assistant" };
        assert_eq!(message["role"], expected, "roles alternate, starting with user");
        let blocks = message["content"].as_array().unwrap();
        for block in blocks.iter().filter(|b| b["type"] == "tool_use") {
            assert!(block["input"].is_object());
            let answered = messages.get(i + 1).is_some_and(|next| {
                next["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == block["id"])
            });
            assert!(
                answered,
                "tool_use {} is answered in the next message",
                block["id"]
            );
        }
        for block in blocks.iter().filter(|b| b["type"] == "tool_result") {
            let asked = i > 0
                && messages[i - 1]["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b["type"] == "tool_use" && b["id"] == block["tool_use_id"]);
            assert!(
                asked,
                "tool_result {} answers the previous message",
                block["tool_use_id"]
            );
        }
    }
    body
}

#[tokio::test]
async fn text_stream_with_pings_gives_text_cache_usage_and_done() {
    let server = Server::start(vec![Reply::sse(TEXT_WITH_PING)]).await;
    let (events, error) = collect(provider_for(&server, Some(KEY)).stream(simple())).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "Grüße aus 東京 🗼!");
    assert_eq!(
        usages(&events),
        vec![ProviderUsage {
            prompt_tokens: Some(25 + 1200 + 3400),
            completion_tokens: Some(15),
            cache_read_tokens: Some(3400),
            cache_write_tokens: Some(1200),
            reasoning_tokens: None,
        }]
    );
    assert_eq!(finish_reason(&events), Some(FinishReason::Stop));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn stream_split_at_every_byte_gives_the_same_events() {
    let bytes = TEXT_WITH_PING.as_bytes().to_vec();
    assert!(
        bytes.len() > TEXT_WITH_PING.chars().count(),
        "the stream has multi-byte characters"
    );
    let pieces = bytes.clone();
    let server =
        Server::with(move |k| Reply::sse_pieces(vec![pieces[..k].to_vec(), pieces[k..].to_vec()])).await;
    let provider = provider_for(&server, Some(KEY));
    let (whole, error) = collect(provider.stream(simple())).await;
    assert_eq!(error, None);
    for k in 1..=bytes.len() {
        let (events, error) = collect(provider.stream(simple())).await;
        assert_eq!(error, None, "split at byte {k}");
        assert_eq!(events, whole, "split at byte {k}");
    }
}

#[tokio::test]
async fn tool_use_stream_assembles_the_call_and_reasoning() {
    let server = Server::start(vec![Reply::sse(TOOL_USE)]).await;
    let (events, error) = collect(provider_for(&server, Some(KEY)).stream(simple())).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "Let me check.");
    assert!(events.contains(&StreamEvent::ReasoningDelta {
        text: "The user wants the weather.".to_owned()
    }));
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(calls[0].name, "get_weather");
    let input: Value = serde_json::from_str(&calls[0].arguments).unwrap();
    assert_eq!(input, json!({"location": "San Francisco, CA"}));
    assert_eq!(finish_reason(&events), Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn overloaded_error_mid_stream_keeps_the_text_and_is_not_retried() {
    let cut = TEXT_WITH_PING.find("event: content_block_stop").unwrap();
    let body = format!(
        "{}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n",
        &TEXT_WITH_PING[..cut]
    );
    let server = Server::start(vec![Reply::sse(body), Reply::sse(TEXT_WITH_PING)]).await;
    let (events, error) = collect(provider_for(&server, Some(KEY)).stream(simple())).await;
    assert_eq!(text(&events), "Grüße aus 東京 🗼!");
    assert_eq!(
        error,
        Some(ProviderError::Overloaded {
            retry_after: None,
            message: "Overloaded".to_owned()
        })
    );
    assert_eq!(server.requests().len(), 1, "output was shown, so no retry");
}

#[tokio::test]
async fn overloaded_error_before_any_output_is_retried() {
    let body = format!(
        "{}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n",
        &TEXT_WITH_PING[..TEXT_WITH_PING.find("event: content_block_start").unwrap()]
    );
    let server = Server::start(vec![Reply::sse(body), Reply::sse(TEXT_WITH_PING)]).await;
    let (events, error) = collect(provider_for(&server, Some(KEY)).stream(simple())).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "Grüße aus 東京 🗼!");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn http_529_overloaded_is_retried_then_succeeds() {
    let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = Server::start(vec![Reply::json(529, overloaded), Reply::sse(TEXT_WITH_PING)]).await;
    let (events, error) = collect(provider_for(&server, Some(KEY)).stream(simple())).await;
    assert_eq!(error, None);
    assert_eq!(finish_reason(&events), Some(FinishReason::Stop));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_names_the_variable() {
    let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let server = Server::start(vec![Reply::json(401, body), Reply::sse(TEXT_WITH_PING)]).await;
    let provider = provider_for(&server, Some(KEY));
    let (_, error) = collect(provider.stream(simple())).await;
    let error = error.unwrap();
    assert!(matches!(error, ProviderError::Auth { .. }), "{error:?}");
    assert!(error.to_string().contains("ANTHROPIC_API_KEY"), "{error}");
    assert!(!error.to_string().contains(KEY));
    assert!(!format!("{provider:?}").contains(KEY));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn prompt_too_long_is_an_overflow() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
    let server = Server::start(vec![Reply::json(400, body)]).await;
    let (_, error) = collect(provider_for(&server, Some(KEY)).stream(simple())).await;
    assert!(error.unwrap().is_overflow());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn stream_cut_before_message_stop_is_an_error_after_the_text() {
    let cut = TEXT_WITH_PING.find("event: content_block_stop").unwrap();
    let server = Server::start(vec![Reply::sse_cut(&TEXT_WITH_PING[..cut])]).await;
    let (events, error) = collect(provider_for(&server, Some(KEY)).stream(simple())).await;
    assert_eq!(text(&events), "Grüße aus 東京 🗼!");
    assert!(matches!(error, Some(ProviderError::Broken { .. })), "{error:?}");
}

#[tokio::test]
async fn stream_ending_after_the_stop_reason_without_message_stop_is_complete() {
    let cut = TEXT_WITH_PING.find("event: message_stop").unwrap();
    let server = Server::start(vec![Reply::sse(&TEXT_WITH_PING[..cut])]).await;
    let (events, error) = collect(provider_for(&server, Some(KEY)).stream(simple())).await;
    assert_eq!(error, None);
    assert_eq!(finish_reason(&events), Some(FinishReason::Stop));
}

#[tokio::test]
async fn request_body_has_the_cache_layout_and_paired_tools() {
    let server = Server::start(vec![Reply::sse(TEXT_WITH_PING)]).await;
    let (_, error) = collect(provider_for(&server, Some(KEY)).stream(with_tools())).await;
    assert_eq!(error, None);
    let body = check_body(&server.requests()[0], FROZEN);
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 1024);
    assert_eq!(count_markers(&body), 4);
    let system = body["system"].as_array().unwrap();
    let boundary = FROZEN.find("## Workspace").unwrap();
    assert_eq!(system[0]["text"], &FROZEN[..boundary]);
    assert_eq!(system[1]["text"], &FROZEN[boundary..]);
    assert_eq!(system[2], json!({"type": "text", "text": "Imported: be brief."}));
    let messages = body["messages"].as_array().unwrap();
    let last_two_marked = messages.iter().rev().take(2).all(|m| {
        m["content"].as_array().unwrap().last().unwrap()["cache_control"] == json!({"type": "ephemeral"})
    });
    assert!(last_two_marked);
    let calls = messages[1]["content"].as_array().unwrap();
    assert_eq!(
        calls[2]["input"],
        json!({}),
        "invalid JSON arguments become an empty object"
    );
    assert_eq!(body["tools"][0]["name"], "read");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
}

#[tokio::test]
async fn frozen_system_blocks_are_identical_across_turns_and_providers() {
    let server = Server::start(vec![Reply::sse(TEXT_WITH_PING)]).await;
    let first = provider_for(&server, Some(KEY));
    collect(first.stream(simple())).await;
    collect(first.stream(with_tools())).await;
    let restarted = provider_for(&server, Some(KEY));
    let mut third = with_tools();
    third.messages.retain(|m| m.role != Role::System);
    third.messages.push(msg(Role::Assistant, "Like this."));
    third.messages.push(msg(Role::User, "Thanks."));
    collect(restarted.stream(third)).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let frozen_blocks = |r: &Recorded| {
        let body = check_body(r, FROZEN);
        body["system"].as_array().unwrap()[..2].to_vec()
    };
    let reference = frozen_blocks(&requests[0]);
    assert_eq!(reference.len(), 2);
    for recorded in &requests[1..] {
        assert_eq!(frozen_blocks(recorded), reference);
    }
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let second_text = TEXT_WITH_PING[..TEXT_WITH_PING.find("東京").unwrap()]
        .rfind("event:")
        .unwrap();
    let server = Server::start(vec![Reply::sse_hold(&TEXT_WITH_PING[..second_text])]).await;
    let mut stream = provider_for(&server, Some(KEY)).stream(simple());
    let connected = futures::StreamExt::next(&mut stream).await.unwrap().unwrap();
    assert_eq!(connected, StreamEvent::Connected);
    let first = futures::StreamExt::next(&mut stream).await.unwrap().unwrap();
    assert_eq!(
        first,
        StreamEvent::TextDelta {
            text: "Grüße aus ".to_owned()
        }
    );
    drop(stream);
    assert!(server.saw_disconnect().await, "the server saw the client leave");
}

#[test]
fn config_reads_the_variables_the_sdks_read() {
    let env = |name: &str| match name {
        "ANTHROPIC_API_KEY" => Some(KEY.to_owned()),
        "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:4000".to_owned()),
        _ => None,
    };
    let config = HttpProviderConfig::from_env(Wire::Anthropic, Wire::Anthropic.key_env(), env);
    assert_eq!(config.api_key.as_deref(), Some(KEY));
    assert!(!format!("{config:?}").contains(KEY));
    let provider = AnthropicProvider::new(config).unwrap();
    assert_eq!(provider.url(), "http://127.0.0.1:4000/v1/messages");
    assert_eq!(provider.name(), "anthropic");
    let default = HttpProviderConfig::from_env(Wire::Anthropic, "ORG_ANTHROPIC_KEY", |_| None);
    assert_eq!(default.base_url, Wire::Anthropic.default_base_url());
    assert_eq!(default.key_env, "ORG_ANTHROPIC_KEY");
}
