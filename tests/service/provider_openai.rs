//! The OpenAI-compatible provider against a local HTTP server replaying
//! streams recorded from llama.cpp's `llama-server` and llama-cpp-python,
//! and handwritten ones for the failure cases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::events;
use crate::support::server;

use events::{collect, fast_retry, finish_reason, text, timeouts, tool_calls, usages};
use server::{Body, Reply, Server};
use std::time::{Duration, Instant};
use strata::domain::{
    ChatRequest, FinishReason, ProviderUsage, RequestMessage, RequestSystem, Role, StreamEvent, ToolCall,
};
use strata::provider::{
    HttpProviderConfig, OpenAiProvider, Provider, ProviderError, RetryPolicy, Timeouts, Wire,
};

const LLAMA_SERVER: &str = include_str!("../fixtures/sse/llamaserver-stream-include-usage.sse");
const LLAMA_CPP_PYTHON_NO_USAGE: &str =
    include_str!("../fixtures/sse/llamacpppython-stream-include-usage-ignored.sse");
const LLAMA_CPP_PYTHON_LONG: &str =
    include_str!("../fixtures/sse/llamacpppython-stream-600tok-with-ping.sse");
const LLAMA_CPP_PYTHON_TOOL: &str =
    include_str!("../fixtures/sse/llamacpppython-stream-tool-call-forced.sse");
const KEY: &str = "sk-test-5f1d0c9a7b";

fn provider_for(server: &Server, key: Option<&str>) -> OpenAiProvider {
    OpenAiProvider::new(HttpProviderConfig {
        base_url: format!("{}/v1/", server.base_url()),
        api_key: key.map(str::to_owned),
        key_env: "MY_OPENAI_KEY".to_owned(),
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

fn request() -> ChatRequest {
    ChatRequest {
        model: "smollm2".to_owned(),
        system: RequestSystem {
            text: "You are strata.\nVolatile: today".to_owned(),
            boundary_offset: Some(15),
        },
        messages: vec![msg(Role::User, "Say sorry.")],
        max_tokens: 8,
        tools: Vec::new(),
        temperature: None,
    }
}

/// The text of an OpenAI stream, read independently of strata's decoder.
fn oracle_text(sse: &str) -> String {
    sse.lines()
        .filter_map(|line| line.strip_prefix("data: {").map(|rest| format!("{{{rest}")))
        .map(|json| serde_json::from_str::<serde_json::Value>(&json).unwrap())
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

fn chunk(content: &str) -> String {
    let delta = serde_json::json!({ "choices": [{ "index": 0, "delta": { "content": content }, "finish_reason": null }] });
    format!("data: {delta}\n\n")
}

const FINISH_STOP: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";

/// A handwritten stream whose text has 2-, 3- and 4-byte characters.
fn multibyte_stream() -> String {
    let mut body = String::new();
    for piece in ["Grüße, ", "世界", " — ", "🎉👩‍👩‍👧", " ok"] {
        body.push_str(&chunk(piece));
    }
    body.push_str(FINISH_STOP);
    body.push_str("data: [DONE]\n\n");
    body
}

#[tokio::test]
async fn llama_server_stream_gives_text_cached_usage_and_done() {
    let server = Server::start(vec![Reply::sse(LLAMA_SERVER)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "I'm sorry for the mispronunci");
    assert_eq!(text(&events), oracle_text(LLAMA_SERVER));
    assert_eq!(
        usages(&events),
        vec![ProviderUsage {
            prompt_tokens: Some(26),
            completion_tokens: Some(8),
            cache_read_tokens: Some(5),
            cache_write_tokens: None,
            reasoning_tokens: None,
        }]
    );
    assert_eq!(finish_reason(&events), Some(FinishReason::Length));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), None);
}

#[tokio::test]
async fn llama_cpp_python_stream_without_usage_emits_no_usage() {
    let server = Server::start(vec![Reply::sse(LLAMA_CPP_PYTHON_NO_USAGE)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "I'm sorry for the mispronunci");
    assert!(usages(&events).is_empty());
    assert_eq!(finish_reason(&events), Some(FinishReason::Length));
}

#[tokio::test]
async fn long_recorded_stream_with_ping_comment_is_read_whole() {
    assert!(LLAMA_CPP_PYTHON_LONG.contains("\n: ping"));
    let server = Server::start(vec![Reply::sse(LLAMA_CPP_PYTHON_LONG)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    let expected = oracle_text(LLAMA_CPP_PYTHON_LONG);
    assert!(expected.len() > 2000);
    assert_eq!(text(&events), expected);
    assert_eq!(finish_reason(&events), Some(FinishReason::Length));
}

/// Serves `body` split in two at every byte, one request per split point,
/// and checks each gives exactly the events of the unsplit stream.
async fn assert_split_invariant(body: &str, expected_text: &str) {
    let bytes = body.as_bytes().to_vec();
    let pieces = bytes.clone();
    let server =
        Server::with(move |k| Reply::sse_pieces(vec![pieces[..k].to_vec(), pieces[k..].to_vec()])).await;
    let provider = provider_for(&server, None);
    let (whole, error) = collect(provider.stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text(&whole), expected_text);
    for k in 1..=bytes.len() {
        let (events, error) = collect(provider.stream(request())).await;
        assert_eq!(error, None, "split at byte {k}");
        assert_eq!(events, whole, "split at byte {k}");
    }
    assert_eq!(server.requests().len(), bytes.len() + 1);
}

#[tokio::test]
async fn recorded_stream_split_at_every_byte_gives_the_same_events() {
    assert_split_invariant(LLAMA_SERVER, "I'm sorry for the mispronunci").await;
}

#[tokio::test]
async fn multibyte_text_split_at_every_byte_gives_the_same_events() {
    let body = multibyte_stream();
    assert!(
        body.len() > body.chars().count(),
        "the stream has multi-byte characters"
    );
    assert_split_invariant(&body, "Grüße, 世界 — 🎉👩‍👩‍👧 ok").await;
}

#[tokio::test]
async fn comment_lines_and_crlf_line_endings_are_ignored() {
    let body = format!(
        ": ping - 2026-11-29 14:33:16\r\n\r\n{}: keep-alive\r\n\r\n{}{}data: [DONE]\r\n\r\n",
        chunk("Hel").replace('\n', "\r\n"),
        chunk("lo").replace('\n', "\r\n"),
        FINISH_STOP.replace('\n', "\r\n"),
    );
    let server = Server::start(vec![Reply::sse(body)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "Hello");
    assert_eq!(finish_reason(&events), Some(FinishReason::Stop));
}

#[tokio::test]
async fn stream_without_done_marker_ends_after_the_finish_reason() {
    let body = format!("{}{}", chunk("Hi"), FINISH_STOP);
    let server = Server::start(vec![Reply::sse(body)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "Hi");
    assert_eq!(finish_reason(&events), Some(FinishReason::Stop));
}

#[tokio::test]
async fn disconnect_mid_reply_keeps_the_text_and_reports_a_cut_without_retrying() {
    let server = Server::start(vec![
        Reply::sse_cut(format!("{}{}", chunk("Half a"), chunk(" reply"))),
        Reply::sse(LLAMA_SERVER),
    ])
    .await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(text(&events), "Half a reply");
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Done { .. })));
    let error = error.expect("a cut stream is an error");
    assert!(matches!(error, ProviderError::Broken { .. }), "{error:?}");
    assert!(error.to_string().contains("before the reply finished"), "{error}");
    assert_eq!(server.requests().len(), 1, "output was shown, so no retry");
}

#[tokio::test]
async fn clean_end_mid_reply_without_finish_reason_is_a_cut() {
    let server = Server::start(vec![Reply::sse(chunk("Half"))]).await;
    let provider = OpenAiProvider::new(HttpProviderConfig {
        base_url: server.base_url(),
        retry: RetryPolicy::never(),
        ..HttpProviderConfig::new(Wire::OpenAi)
    })
    .unwrap();
    let (events, error) = collect(provider.stream(request())).await;
    assert_eq!(text(&events), "Half");
    // The server was reached: the sentence says the reply broke, not that
    // the provider cannot be reached.
    let said = error.unwrap().to_string();
    assert!(
        said.contains("broke during the reply") && said.contains("closed before the reply finished"),
        "{said}"
    );
    assert!(!said.contains("cannot reach"), "{said}");
}

#[tokio::test]
async fn disconnect_before_any_text_is_retried() {
    let role_only = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    let server = Server::start(vec![Reply::sse_cut(role_only), Reply::sse(LLAMA_SERVER)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(text(&events), "I'm sorry for the mispronunci");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn empty_200_body_is_an_empty_response_error() {
    let server = Server::start(vec![Reply::sse(""), Reply::sse(LLAMA_SERVER)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert!(events.is_empty());
    assert_eq!(error, Some(ProviderError::EmptyResponse));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn empty_200_body_with_content_length_is_an_empty_response_error() {
    let empty = Reply {
        status: 200,
        headers: Vec::new(),
        body: Body::Full(Vec::new()),
    }
    .with_header("content-type", "text/event-stream");
    let server = Server::start(vec![empty]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert!(events.is_empty());
    assert_eq!(error, Some(ProviderError::EmptyResponse));
}

#[tokio::test]
async fn a_text_page_instead_of_an_event_stream_says_so_and_is_not_retried() {
    let page = Reply {
        status: 200,
        headers: Vec::new(),
        body: Body::Full(
            "<html><body>Directory listing for /v1/</body></html>"
                .repeat(60)
                .into_bytes(),
        ),
    }
    .with_header("content-type", "text/html; charset=utf-8");
    let server = Server::start(vec![page]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert!(events.is_empty());
    let text = error.unwrap().to_string();
    assert!(
        text.contains("expected an event stream (text/event-stream) but got text/html; check the base URL"),
        "{text}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_html_error_page_is_told_in_one_line() {
    let page = Reply {
        status: 501,
        headers: Vec::new(),
        body: Body::Full(
            b"<html><head><title>Error response</title></head><body><h1>Error response</h1>\n<p>Error code: 501</p>\n<p>Message: Unsupported method ('POST').</p></body></html>\n".to_vec(),
        ),
    }
    .with_header("content-type", "text/html");
    let server = Server::start(vec![page]).await;
    let (_, error) = collect(provider_for(&server, None).stream(request())).await;
    let text = error.unwrap().to_string();
    assert_eq!(
        text,
        "the provider refused the request: HTTP 501: Error response Error code: 501 Message: Unsupported \
         method ('POST'); check the base URL"
    );
    assert_eq!(server.requests().len(), 1, "not implemented: not retried");
}

#[tokio::test]
async fn json_error_body_with_status_200_is_classified() {
    let body = r#"{"error":{"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#;
    let server = Server::start(vec![Reply::json(200, body)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert!(events.is_empty());
    assert!(error.unwrap().is_overflow());
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after_then_succeeds() {
    let limited =
        r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    let server = Server::start(vec![
        Reply::json(429, limited).with_header("retry-after", "1"),
        Reply::sse(LLAMA_SERVER),
    ])
    .await;
    let started = Instant::now();
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(text(&events), "I'm sorry for the mispronunci");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_error_then_success() {
    let server = Server::start(vec![
        Reply::json(500, r#"{"detail":"Internal Server Error"}"#),
        Reply::sse(LLAMA_SERVER),
    ])
    .await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    assert_eq!(finish_reason(&events), Some(FinishReason::Length));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_give_up_after_three_retries() {
    let server = Server::start(vec![Reply::json(503, r#"{"error":{"message":"Loading model"}}"#)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert!(events.is_empty());
    assert_eq!(
        error,
        Some(ProviderError::Server {
            status: 503,
            message: "Loading model".to_owned()
        })
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn unauthorized_is_not_retried_names_the_variable_and_hides_the_key() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let server = Server::start(vec![Reply::json(401, &body), Reply::sse(LLAMA_SERVER)]).await;
    let provider = provider_for(&server, Some(KEY));
    let (events, error) = collect(provider.stream(request())).await;
    assert!(events.is_empty());
    let error = error.unwrap();
    assert!(matches!(error, ProviderError::Auth { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("MY_OPENAI_KEY"), "{message}");
    assert!(!message.contains(KEY), "{message}");
    assert!(!format!("{error:?}").contains(KEY));
    assert!(!format!("{provider:?}").contains(KEY));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn overflow_in_openai_shape_is_classified() {
    let body = r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 3000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let server = Server::start(vec![Reply::json(400, body)]).await;
    let (_, error) = collect(provider_for(&server, None).stream(request())).await;
    assert!(error.unwrap().is_overflow());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn overflow_in_llama_cpp_shape_is_classified() {
    let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":2300,"n_ctx":2048}}"#;
    let server = Server::start(vec![Reply::json(400, body)]).await;
    let (_, error) = collect(provider_for(&server, None).stream(request())).await;
    assert!(error.unwrap().is_overflow());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn error_object_inside_the_stream_is_classified() {
    let body = "data: {\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size\",\"type\":\"exceed_context_size_error\"}}\n\n";
    let server = Server::start(vec![Reply::sse(body)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert!(events.is_empty());
    assert!(error.unwrap().is_overflow());
}

#[tokio::test]
async fn repeated_tool_call_id_and_name_deltas_assemble_into_one_call() {
    let server = Server::start(vec![Reply::sse(LLAMA_CPP_PYTHON_TOOL)]).await;
    let (events, error) = collect(provider_for(&server, None).stream(request())).await;
    assert_eq!(error, None);
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].id,
        "call__0_get_weather_cmpl-6306096e-710c-493f-bcb5-54e7434747db"
    );
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].arguments, r#"{ "city": "Paris" }"#);
    let with_id = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallDelta { id: Some(_), .. }))
        .count();
    assert_eq!(with_id, 1, "the repeated id is passed on once");
    assert_eq!(finish_reason(&events), Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn request_body_is_valid_json_with_paired_tool_calls() {
    let server = Server::start(vec![Reply::sse(LLAMA_SERVER)]).await;
    let mut req = request();
    let mut assistant = msg(Role::Assistant, "");
    assistant.tool_calls = vec![
        ToolCall {
            id: "call_a".to_owned(),
            name: "read".to_owned(),
            arguments: r#"{"path":"a.rs"}"#.to_owned(),
        },
        ToolCall {
            id: "call_b".to_owned(),
            name: "read".to_owned(),
            arguments: r#"{"path":"b.rs"}"#.to_owned(),
        },
    ];
    let result = |id: &str| RequestMessage {
        role: Role::Tool,
        content: format!("contents of {id}"),
        tool_calls: Vec::new(),
        tool_call_id: Some(id.to_owned()),
    };
    req.messages = vec![
        msg(Role::System, "Imported instructions."),
        msg(Role::User, "Read both files."),
        assistant,
        result("call_a"),
        result("call_b"),
        msg(Role::User, "Now summarise."),
    ];
    req.tools = vec![
        serde_json::json!({"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}),
    ];
    let (_, error) = collect(provider_for(&server, Some(KEY)).stream(req)).await;
    assert_eq!(error, None);
    let body = server.requests()[0].json();
    assert_eq!(body["model"], "smollm2");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["max_tokens"], 8);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[0]["content"],
        "You are strata.\nVolatile: today\n\nImported instructions."
    );
    assert_eq!(messages.iter().filter(|m| m["role"] == "system").count(), 1);
    // Every tool call is answered by a later tool message, and every tool message answers a call.
    for (i, message) in messages.iter().enumerate() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let id = &call["id"];
            assert!(
                messages[i + 1..]
                    .iter()
                    .any(|m| m["role"] == "tool" && &m["tool_call_id"] == id),
                "{id}"
            );
        }
        if message["role"] == "tool" {
            let id = &message["tool_call_id"];
            assert!(messages[..i].iter().any(|m| {
                m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| &c["id"] == id)
            }));
        }
    }
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["content"], "", "content is an empty string, not null");
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let server = Server::start(vec![Reply::sse_hold(chunk("first"))]).await;
    let mut stream = provider_for(&server, None).stream(request());
    let connected = futures::StreamExt::next(&mut stream).await.unwrap().unwrap();
    assert_eq!(connected, StreamEvent::Connected);
    let first = futures::StreamExt::next(&mut stream).await.unwrap().unwrap();
    assert_eq!(
        first,
        StreamEvent::TextDelta {
            text: "first".to_owned()
        }
    );
    drop(stream);
    assert!(server.saw_disconnect().await, "the server saw the client leave");
}

#[tokio::test]
async fn silence_longer_than_the_idle_timeout_after_text_is_a_broken_reply() {
    let server = Server::start(vec![Reply::sse_hold(chunk("then nothing"))]).await;
    let provider = OpenAiProvider::new(HttpProviderConfig {
        base_url: server.base_url(),
        retry: RetryPolicy::never(),
        timeouts: Timeouts {
            connect: Duration::from_secs(5),
            idle: Duration::from_millis(300),
        },
        ..HttpProviderConfig::new(Wire::OpenAi)
    })
    .unwrap();
    let (events, error) = collect(provider.stream(request())).await;
    assert_eq!(text(&events), "then nothing");
    let error = error.unwrap();
    assert!(matches!(error, ProviderError::Broken { .. }), "{error:?}");
    assert!(error.to_string().contains("no data for 300ms"), "{error}");
}

#[tokio::test]
async fn unreachable_server_is_a_network_error_naming_the_url() {
    let provider = OpenAiProvider::new(HttpProviderConfig {
        base_url: "http://127.0.0.1:9/v1".to_owned(),
        retry: RetryPolicy::never(),
        ..HttpProviderConfig::new(Wire::OpenAi)
    })
    .unwrap();
    let (_, error) = collect(provider.stream(request())).await;
    let error = error.unwrap();
    assert!(matches!(error, ProviderError::Network { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("http://127.0.0.1:9/v1/chat/completions"),
        "{error}"
    );
}

#[test]
fn config_reads_the_variables_the_sdks_read() {
    let env = |name: &str| match name {
        "OPENAI_API_KEY" => Some(KEY.to_owned()),
        "OPENAI_BASE_URL" => Some("http://localhost:8080/v1".to_owned()),
        "OTHER_KEY" => Some(String::new()),
        _ => None,
    };
    let config = HttpProviderConfig::from_env(Wire::OpenAi, Wire::OpenAi.key_env(), env);
    assert_eq!(config.base_url, "http://localhost:8080/v1");
    assert_eq!(config.api_key.as_deref(), Some(KEY));
    assert!(!format!("{config:?}").contains(KEY));
    let other = HttpProviderConfig::from_env(Wire::OpenAi, "OTHER_KEY", |_| None);
    assert_eq!(other.base_url, Wire::OpenAi.default_base_url());
    assert_eq!(other.api_key, None);
    assert_eq!(other.key_env, "OTHER_KEY");
    let provider = OpenAiProvider::new(HttpProviderConfig::from_env(Wire::OpenAi, "OTHER_KEY", env)).unwrap();
    assert_eq!(provider.url(), "http://localhost:8080/v1/chat/completions");
    assert_eq!(provider.name(), "openai");
}

/// A retried request reports its progress before the reply: the retry
/// (which one, of how many, and why), then the open stream.
#[tokio::test]
async fn a_retried_request_reports_retrying_then_connected_before_the_reply() {
    let server = Server::start(vec![
        Reply::json(503, r#"{"error":{"message":"Loading model"}}"#),
        Reply::sse(LLAMA_SERVER),
    ])
    .await;
    let mut stream = provider_for(&server, None).stream(request());
    let mut progress = Vec::new();
    let mut first_reply = None;
    while let Some(item) = futures::StreamExt::next(&mut stream).await {
        let event = item.unwrap();
        if event.is_progress() {
            progress.push(event);
        } else {
            first_reply.get_or_insert(progress.len());
        }
    }
    assert_eq!(progress.len(), 2, "{progress:?}");
    assert!(
        matches!(&progress[0], StreamEvent::Retrying { attempt: 1, max: 3, reason, .. } if reason.contains("Loading model")),
        "{progress:?}"
    );
    assert_eq!(progress[1], StreamEvent::Connected);
    assert_eq!(first_reply, Some(2), "both come before the reply");
}
