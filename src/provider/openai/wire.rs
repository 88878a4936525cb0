//! The JSON body of an OpenAI chat-completions request, built from a
//! [`ChatRequest`]. Pure: no I/O.
//!
//! Invariants: exactly one system message, first (strata's frozen prompt
//! byte for byte, then imported `system` messages appended after a blank
//! line); an assistant message's `content` is a string, never `null`
//! (llama-cpp-python rejects `null`); tool calls and `tool_call_id`s are
//! passed through unchanged.

use crate::domain::{ChatRequest, RequestMessage, Role};
use serde_json::{Value, json};

/// Separator between strata's system prompt and an imported system message.
const SYSTEM_JOIN: &str = "\n\n";

/// The request body for `POST {base_url}/chat/completions` with streaming
/// and usage reporting on (`stream_options.include_usage`).
pub fn request_body(request: &ChatRequest) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let system = system_text(request);
    if !system.is_empty() {
        messages.push(json!({ "role": "system", "content": system }));
    }
    messages.extend(
        request
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(message),
    );

    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.clone());
        body["tool_choice"] = json!("auto");
    }
    body
}

/// strata's system prompt followed by any imported system messages.
fn system_text(request: &ChatRequest) -> String {
    let mut text = request.system.text.clone();
    for imported in request.messages.iter().filter(|m| m.role == Role::System) {
        if imported.content.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push_str(SYSTEM_JOIN);
        }
        text.push_str(&imported.content);
    }
    text
}

fn message(message: &RequestMessage) -> Value {
    let mut value = json!({ "role": message.role.as_str(), "content": message.content });
    if message.role == Role::Assistant && !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": { "name": call.name, "arguments": call.arguments },
                })
            })
            .collect();
        value["tool_calls"] = Value::Array(calls);
    }
    if message.role == Role::Tool {
        value["tool_call_id"] = json!(message.tool_call_id.clone().unwrap_or_default());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{RequestSystem, ToolCall};

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
            model: "m".to_owned(),
            system: RequestSystem {
                text: "You are strata.\n---\nvolatile".to_owned(),
                boundary_offset: Some(16),
            },
            messages,
            max_tokens: 256,
            tools: Vec::new(),
            temperature: None,
        }
    }

    #[test]
    fn imported_system_messages_merge_after_the_frozen_prompt() {
        let body = request_body(&request(vec![
            msg(Role::System, "Imported rules."),
            msg(Role::User, "hi"),
            msg(Role::System, "More rules."),
        ]));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(
            messages[0]["content"],
            "You are strata.\n---\nvolatile\n\nImported rules.\n\nMore rules."
        );
        assert_eq!(messages[1]["role"], "user");
    }

    #[test]
    fn assistant_tool_calls_send_empty_string_content() {
        let mut assistant = msg(Role::Assistant, "");
        assistant.tool_calls = vec![ToolCall {
            id: "call_1".to_owned(),
            name: "read".to_owned(),
            arguments: "{\"p\":1}".to_owned(),
        }];
        let mut tool = msg(Role::Tool, "file text");
        tool.tool_call_id = Some("call_1".to_owned());
        let body = request_body(&request(vec![msg(Role::User, "go"), assistant, tool]));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[2]["content"], "");
        assert_eq!(messages[2]["tool_calls"][0]["function"]["arguments"], "{\"p\":1}");
        assert_eq!(messages[2]["tool_calls"][0]["type"], "function");
        assert_eq!(messages[3]["tool_call_id"], "call_1");
        assert!(messages[1].get("tool_calls").is_none());
    }

    #[test]
    fn streaming_options_and_limits_are_set() {
        let mut req = request(vec![msg(Role::User, "hi")]);
        req.temperature = Some(0.5);
        req.tools = vec![json!({"type": "function", "function": {"name": "f", "parameters": {}}})];
        let body = request_body(&req);
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 256);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["tools"][0]["function"]["name"], "f");
        assert_eq!(body["tool_choice"], "auto");
        let plain = request_body(&request(vec![msg(Role::User, "hi")]));
        assert!(plain.get("tools").is_none() && plain.get("temperature").is_none());
    }

    #[test]
    fn no_system_message_when_there_is_no_system_text() {
        let mut req = request(vec![msg(Role::User, "hi")]);
        req.system.text.clear();
        let body = request_body(&req);
        assert_eq!(body["messages"][0]["role"], "user");
    }
}
