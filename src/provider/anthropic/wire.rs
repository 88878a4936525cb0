//! The JSON body of an Anthropic Messages request, built from a
//! [`ChatRequest`]. Pure: no I/O.
//!
//! Invariants (DESIGN §8):
//! - the frozen system prompt is sent as two text blocks split exactly at
//!   the cache boundary (`text[..offset]`, `text[offset..]`), each with
//!   `cache_control: {type: ephemeral}`, or as one marked block when there
//!   is no usable boundary; imported `system` messages follow as one
//!   unmarked block. Concatenating the marked blocks gives the frozen bytes.
//! - the last block of each of the last two messages carries a marker too,
//!   and never more than [`MAX_CACHE_MARKERS`] markers are sent in total.
//! - tool definitions come first in Anthropic's cache order (tools, system,
//!   messages), so the system prompt's first marker caches them with it;
//!   only when there is no system prompt does the last tool get a marker of
//!   its own.
//! - messages alternate `user` / `assistant`: consecutive messages of the
//!   same role are merged; tool calls become `tool_use` blocks (arguments
//!   that are not a JSON object become `{}`), tool results become
//!   `tool_result` blocks at the start of a user message.

use crate::domain::{ChatRequest, RequestMessage, Role};
use serde_json::{Value, json};

/// Anthropic's limit on `cache_control` breakpoints per request.
pub(crate) const MAX_CACHE_MARKERS: usize = 4;

/// Messages at the end of the conversation that get a cache marker.
const MESSAGE_MARKERS: usize = 2;

/// Separator between imported system messages.
const SYSTEM_JOIN: &str = "\n\n";

/// The request body for `POST {base_url}/v1/messages` with streaming on.
pub fn request_body(request: &ChatRequest) -> Value {
    let system = system_blocks(request);
    let mut tools: Vec<Value> = request.tools.iter().map(tool).collect();
    let mut system_markers = system.iter().filter(|b| b.get("cache_control").is_some()).count();
    if system_markers == 0
        && let Some(last) = tools.last_mut()
    {
        last["cache_control"] = ephemeral();
        system_markers = 1;
    }
    let mut turns = turns(&request.messages);
    let message_markers = MESSAGE_MARKERS.min(MAX_CACHE_MARKERS.saturating_sub(system_markers));
    let marked = turns.len().saturating_sub(message_markers);
    for turn in &mut turns[marked..] {
        if let Some(last) = turn.blocks.last_mut() {
            last["cache_control"] = ephemeral();
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|t| json!({ "role": t.role, "content": t.blocks }))
        .collect();

    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "stream": true,
        "messages": messages,
    });
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!({ "type": "auto" });
    }
    body
}

fn ephemeral() -> Value {
    json!({ "type": "ephemeral" })
}

fn text_block(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

fn has_text(text: &str) -> bool {
    !text.trim().is_empty()
}

/// The system prompt blocks: frozen prompt (split at the boundary when both
/// halves have text), then imported system messages.
fn system_blocks(request: &ChatRequest) -> Vec<Value> {
    let text = request.system.text.as_str();
    let mut blocks = Vec::new();
    let split = request
        .system
        .boundary_offset
        .filter(|&at| text.is_char_boundary(at))
        .map(|at| text.split_at(at))
        .filter(|(stable, rest)| has_text(stable) && has_text(rest));
    match split {
        Some((stable, rest)) => blocks.extend([text_block(stable), text_block(rest)]),
        None if has_text(text) => blocks.push(text_block(text)),
        None => {}
    }
    for block in &mut blocks {
        block["cache_control"] = ephemeral();
    }
    let imported: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System && has_text(&m.content))
        .map(|m| m.content.as_str())
        .collect();
    if !imported.is_empty() {
        blocks.push(text_block(&imported.join(SYSTEM_JOIN)));
    }
    blocks
}

/// One Anthropic message under construction.
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

/// The conversation as alternating user/assistant turns.
fn turns(messages: &[RequestMessage]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => ("user", text_blocks(&message.content)),
            Role::Assistant => {
                let mut blocks = text_blocks(&message.content);
                blocks.extend(message.tool_calls.iter().map(|call| {
                    json!({ "type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(&call.arguments) })
                }));
                ("assistant", blocks)
            }
            Role::Tool => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                });
                if !message.content.is_empty() {
                    block["content"] = json!(message.content);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => turns.push(Turn { role, blocks }),
        }
    }
    for turn in turns.iter_mut().filter(|t| t.role == "user") {
        // Anthropic wants tool results before any text in a user message.
        let (mut results, rest): (Vec<Value>, Vec<Value>) =
            turn.blocks.drain(..).partition(|b| b["type"] == "tool_result");
        results.extend(rest);
        turn.blocks = results;
    }
    turns
}

fn text_blocks(content: &str) -> Vec<Value> {
    if has_text(content) {
        vec![text_block(content)]
    } else {
        Vec::new()
    }
}

/// Tool-call arguments as the `input` object Anthropic requires; anything
/// that is not a JSON object (including invalid JSON) becomes `{}`.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({}),
    }
}

/// A tool schema in Anthropic's form (`name`, `description`,
/// `input_schema`), from OpenAI's `{type: function, function: {...}}`;
/// a schema already in Anthropic's form passes through.
fn tool(schema: &Value) -> Value {
    let Some(function) = schema.get("function") else {
        return schema.clone();
    };
    let mut tool = json!({
        "name": function.get("name").cloned().unwrap_or(Value::Null),
        "input_schema": function
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({ "type": "object", "properties": {} })),
    });
    if let Some(description) = function.get("description") {
        tool["description"] = description.clone();
    }
    tool
}

/// Number of `cache_control` keys anywhere in `value`.
pub(crate) fn count_markers(value: &Value) -> usize {
    match value {
        Value::Object(map) => {
            usize::from(map.contains_key("cache_control")) + map.values().map(count_markers).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_markers).sum(),
        _ => 0,
    }
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

    fn request(text: &str, boundary: Option<usize>, messages: Vec<RequestMessage>) -> ChatRequest {
        ChatRequest {
            model: "claude".to_owned(),
            system: RequestSystem {
                text: text.to_owned(),
                boundary_offset: boundary,
            },
            messages,
            max_tokens: 100,
            tools: Vec::new(),
            temperature: None,
        }
    }

    fn many_messages() -> Vec<RequestMessage> {
        (0..6)
            .map(|i| {
                msg(
                    if i % 2 == 0 { Role::User } else { Role::Assistant },
                    &format!("m{i}"),
                )
            })
            .collect()
    }

    #[test]
    fn system_splits_exactly_at_the_boundary() {
        let text = "stable ünïcode 世界\nvolatile part";
        let at = text.find('\n').unwrap();
        let body = request_body(&request(text, Some(at), many_messages()));
        let system = body["system"].as_array().unwrap();
        assert_eq!(system.len(), 2);
        assert_eq!(system[0]["text"], &text[..at]);
        assert_eq!(system[1]["text"], &text[at..]);
        assert!(system.iter().all(|b| b["cache_control"]["type"] == "ephemeral"));
        assert_eq!(count_markers(&body), 4);
    }

    #[test]
    fn unusable_boundaries_give_one_marked_block() {
        let text = "héllo";
        for boundary in [None, Some(0), Some(text.len()), Some(2), Some(99)] {
            let body = request_body(&request(text, boundary, many_messages()));
            let system = body["system"].as_array().unwrap();
            assert_eq!(system.len(), 1, "{boundary:?}");
            assert_eq!(system[0]["text"], text);
            assert_eq!(count_markers(&body), 3);
        }
    }

    #[test]
    fn imported_system_text_is_an_unmarked_extra_block() {
        let mut messages = many_messages();
        messages.insert(0, msg(Role::System, "imported"));
        let body = request_body(&request("ab", Some(1), messages));
        let system = body["system"].as_array().unwrap();
        assert_eq!(system.len(), 3);
        assert_eq!(system[2]["text"], "imported");
        assert!(system[2].get("cache_control").is_none());
        assert_eq!(count_markers(&body), 4);
        assert!(
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .all(|m| m["role"] != "system")
        );
    }

    #[test]
    fn markers_go_on_the_last_block_of_the_last_two_messages() {
        let body = request_body(&request("ab", Some(1), many_messages()));
        let messages = body["messages"].as_array().unwrap();
        let marked: Vec<usize> = (0..messages.len())
            .filter(|&i| count_markers(&messages[i]) > 0)
            .collect();
        assert_eq!(marked, vec![4, 5]);
        let one = request_body(&request("ab", Some(1), vec![msg(Role::User, "hi")]));
        assert_eq!(count_markers(&one), 3);
    }

    #[test]
    fn tool_calls_and_results_pair_up_in_alternating_turns() {
        let mut assistant = msg(Role::Assistant, "let me look");
        assistant.tool_calls = vec![
            ToolCall {
                id: "t1".to_owned(),
                name: "read".to_owned(),
                arguments: r#"{"path":"a"}"#.to_owned(),
            },
            ToolCall {
                id: "t2".to_owned(),
                name: "read".to_owned(),
                arguments: "{broken".to_owned(),
            },
        ];
        let mut r1 = msg(Role::Tool, "A");
        r1.tool_call_id = Some("t1".to_owned());
        let mut r2 = msg(Role::Tool, "");
        r2.tool_call_id = Some("t2".to_owned());
        let body = request_body(&request(
            "s",
            None,
            vec![
                msg(Role::User, "q"),
                msg(Role::User, "q2"),
                assistant,
                r1,
                r2,
                msg(Role::User, "thanks"),
            ],
        ));
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(messages[0]["content"].as_array().unwrap().len(), 2);
        let calls = messages[1]["content"].as_array().unwrap();
        assert_eq!(calls[1]["input"], json!({"path": "a"}));
        assert_eq!(calls[2]["input"], json!({}));
        let results = messages[2]["content"].as_array().unwrap();
        assert_eq!(results[0]["tool_use_id"], "t1");
        assert_eq!(results[0]["content"], "A");
        assert_eq!(results[1]["tool_use_id"], "t2");
        assert!(results[1].get("content").is_none());
        assert_eq!(results[2]["type"], "text");
    }

    #[test]
    fn openai_tool_schemas_are_converted() {
        let mut req = request("s", None, vec![msg(Role::User, "q")]);
        req.tools = vec![
            json!({"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}),
        ];
        let body = request_body(&req);
        assert_eq!(
            body["tools"][0],
            json!({"name": "f", "description": "d", "input_schema": {"type": "object"}})
        );
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    }

    #[test]
    fn tools_are_cached_by_the_system_markers_or_by_their_own_without_a_system_prompt() {
        let tools = vec![
            json!({"type": "function", "function": {"name": "a", "description": "", "parameters": {}}}),
            json!({"type": "function", "function": {"name": "b", "description": "", "parameters": {}}}),
        ];
        let history = vec![
            msg(Role::User, "q1"),
            msg(Role::Assistant, "a1"),
            msg(Role::User, "q2"),
        ];
        let mut with_system = request("stable\nvolatile", Some(7), history.clone());
        with_system.tools.clone_from(&tools);
        let body = request_body(&with_system);
        assert!(body["tools"].to_string().matches("cache_control").count() == 0);
        assert_eq!(count_markers(&body), MAX_CACHE_MARKERS);

        let mut without = request("", None, history);
        without.tools = tools;
        let body = request_body(&without);
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        assert!(body["tools"][0].get("cache_control").is_none());
        assert!(count_markers(&body) <= MAX_CACHE_MARKERS);
    }
}
