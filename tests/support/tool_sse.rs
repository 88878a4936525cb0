//! Scripted replies with tool calls, in the OpenAI chat-completions and
//! the Anthropic messages SSE shapes, for the local test server.

#![allow(dead_code)]

use serde_json::json;

/// An OpenAI stream whose reply calls `calls` (id, name, arguments text),
/// each call's arguments split in two deltas, ending with
/// `finish_reason: "tool_calls"` and usage.
pub fn openai_calls(calls: &[(&str, &str, &str)]) -> String {
    let mut body = String::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let (a, b) = args.split_at(args.len() / 2);
        let first = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": a}}
        ]}, "finish_reason": null}]});
        let second = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "function": {"arguments": b}}
        ]}, "finish_reason": null}]});
        body.push_str(&format!("data: {first}\n\ndata: {second}\n\n"));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n");
    body.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":20}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body
}

/// An OpenAI stream whose reply is `text`.
pub fn openai_text(text: &str) -> String {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
         data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":950,\"completion_tokens\":5}}}}\n\ndata: [DONE]\n\n"
    )
}

fn event(name: &str, data: &serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn anthropic_start() -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 800, "output_tokens": 1}}}),
    )
}

fn anthropic_end(stop_reason: &str) -> String {
    event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 12}}),
    ) + &event("message_stop", &json!({"type": "message_stop"}))
}

/// An Anthropic stream whose reply says a few words and calls `calls`
/// (`tool_use` blocks with `input_json_delta` pieces), `stop_reason: tool_use`.
pub fn anthropic_calls(calls: &[(&str, &str, &str)]) -> String {
    let mut body = anthropic_start();
    body += &event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    body += &event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me look."}}),
    );
    body += &event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    );
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let index = i + 1;
        body += &event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        let (a, b) = args.split_at(args.len() / 2);
        for piece in [a, b] {
            body += &event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        body += &event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        );
    }
    body + &anthropic_end("tool_use")
}

/// An Anthropic stream whose reply is `text`.
pub fn anthropic_text(text: &str) -> String {
    let mut body = anthropic_start();
    body += &event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    body += &event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
    );
    body += &event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    );
    body + &anthropic_end("end_turn")
}
