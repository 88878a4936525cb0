//! Tokens a chat request costs beyond its visible text: the per-message and
//! per-request framing of the chat format, tool calls, and tool schemas.
//!
//! The rule is the OpenAI cookbook's `num_tokens_from_messages` ("How to
//! count tokens with tiktoken"): every message costs 3 tokens of framing plus
//! the tokens of each of its string fields (`role`, `content`, and `name`
//! with 1 more), and every request 3 more for priming the reply
//! (`<|start|>assistant<|message|>`). Pure functions over a
//! [`TokenCounter`]; anything that counts a message goes through
//! [`message_tokens`] so that every view agrees.

use super::budget::BudgetItem;
use super::counter::TokenCounter;
use crate::domain::Message;
use serde_json::Value;

/// Framing tokens of every message (`<|start|>`, `<|message|>`, `<|end|>`).
pub const TOKENS_PER_MESSAGE: u32 = 3;

/// Extra tokens when a message carries a `name` field.
pub const TOKENS_PER_NAME: u32 = 1;

/// Tokens that prime the reply, once per request.
pub const REPLY_PRIMING_TOKENS: u32 = 3;

/// Fixed tokens of one tool call in an assistant message, besides its name
/// and arguments text.
///
/// OpenAI does not publish how gpt-4o renders tool calls; its open-weight
/// `harmony` format does: `<|start|>assistant<|channel|>commentary
/// to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>`. Its
/// fixed part is 14 tokens in `o200k_base` (5 special tokens, `assistant` 1,
/// `commentary` 2, ` to=functions.` 4, ` ` 1, `json` 1), of which the 4 of a
/// message's own framing and role are already counted per message: 10.
pub const TOKENS_PER_TOOL_CALL: u32 = 10;

/// Tokens of the `system` role name: 1 in both `o200k_base` and
/// `cl100k_base` (a test pins it).
pub const SYSTEM_ROLE_TOKENS: u32 = 1;

/// `usize` count to `u32`, saturating (a 4-billion-token message does not
/// exist, but a wrap would be worse than a cap).
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Tokens one stored message costs in a request, framing included:
/// `3 + role + content`, plus for each tool call of an assistant message
/// `10 + name + arguments` ([`TOKENS_PER_TOOL_CALL`]), plus for a `tool`
/// message the tokens of its `tool_call_id`. This is the number cached in
/// `Message.tokens`.
#[must_use]
pub fn message_tokens(counter: &dyn TokenCounter, message: &Message) -> u32 {
    message_tokens_with(counter, message, counter.count(&message.content))
}

/// [`message_tokens`] with the tokens of the message's content already
/// known (`content_tokens`, counted by the same counter).
#[must_use]
pub fn message_tokens_with(counter: &dyn TokenCounter, message: &Message, content_tokens: usize) -> u32 {
    let mut n = TOKENS_PER_MESSAGE
        .saturating_add(to_u32(counter.count(message.role.as_str())))
        .saturating_add(to_u32(content_tokens));
    for call in &message.tool_calls {
        n = n
            .saturating_add(TOKENS_PER_TOOL_CALL)
            .saturating_add(to_u32(counter.count(&call.name)))
            .saturating_add(to_u32(counter.count(&call.arguments)));
    }
    if let Some(id) = &message.tool_call_id {
        n = n.saturating_add(to_u32(counter.count(id)));
    }
    n
}

/// Tokens a `name` field adds to a message: its text plus
/// [`TOKENS_PER_NAME`]. strata's stored messages carry no `name`; this is for
/// callers that send one.
#[must_use]
pub fn name_tokens(counter: &dyn TokenCounter, name: &str) -> u32 {
    to_u32(counter.count(name)).saturating_add(TOKENS_PER_NAME)
}

/// Per-request tokens not belonging to any stored message: the reply
/// priming, plus the framing of the system prompt message
/// (`3 + "system"`) when there is a system prompt (the prompt's layer
/// tokens count only its text).
#[must_use]
pub fn request_overhead(has_system_prompt: bool) -> u32 {
    if has_system_prompt {
        REPLY_PRIMING_TOKENS + TOKENS_PER_MESSAGE + SYSTEM_ROLE_TOKENS
    } else {
        REPLY_PRIMING_TOKENS
    }
}

/// The name of a tool schema: `function.name` (chat-completions shape),
/// else `name` (Anthropic / responses shape), else `tool #i`.
fn schema_name(schema: &Value, index: usize) -> String {
    schema
        .pointer("/function/name")
        .or_else(|| schema.get("name"))
        .and_then(Value::as_str)
        .map_or_else(|| format!("tool #{index}"), str::to_owned)
}

/// Each tool schema counted as its compact JSON text, named by its function
/// name, in the given order. Providers render schemas in their own (usually
/// terser) form, so this slightly overestimates, on the safe side.
#[must_use]
pub fn tool_schema_items(counter: &dyn TokenCounter, schemas: &[Value]) -> Vec<BudgetItem> {
    schemas
        .iter()
        .enumerate()
        .map(|(i, schema)| BudgetItem {
            name: schema_name(schema, i),
            tokens: counter.count(&schema.to_string()) as u64,
        })
        .collect()
}

/// Total tokens of the tool schemas offered in a request (the sum of
/// [`tool_schema_items`]).
#[must_use]
pub fn tool_schema_tokens(counter: &dyn TokenCounter, schemas: &[Value]) -> u32 {
    schemas.iter().fold(0u32, |acc, schema| {
        acc.saturating_add(to_u32(counter.count(&schema.to_string())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Role, SessionId, ToolCall};
    use crate::tokens::{Encoding, TiktokenCounter};
    use serde_json::json;

    fn o200k() -> TiktokenCounter {
        TiktokenCounter::new(Encoding::O200kBase, true)
    }

    fn msg(role: Role, content: &str) -> Message {
        Message::new(SessionId::new(), role, content, 0)
    }

    #[test]
    fn plain_message_is_three_plus_role_plus_content() {
        let c = o200k();
        // "hello world" is 2 tokens and "user" 1: 3 + 1 + 2.
        assert_eq!(message_tokens(&c, &msg(Role::User, "hello world")), 6);
        assert_eq!(message_tokens(&c, &msg(Role::Assistant, "")), 4);
    }

    #[test]
    fn two_message_request_follows_the_cookbook_rule() {
        // (3 + "user" + "hello world") + (3 + "assistant" + "hello world") + 3.
        let c = o200k();
        let history = [
            msg(Role::User, "hello world"),
            msg(Role::Assistant, "hello world"),
        ];
        let total: u32 = history.iter().map(|m| message_tokens(&c, m)).sum();
        assert_eq!(total + request_overhead(false), 15);
    }

    #[test]
    fn tool_calls_cost_name_arguments_and_fixed_overhead() {
        let c = o200k();
        let mut m = msg(Role::Assistant, "");
        let args = r#"{"path":"src/lib.rs"}"#;
        m.tool_calls.push(ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: args.into(),
        });
        let one = 4 + TOKENS_PER_TOOL_CALL + c.count("read_file") as u32 + c.count(args) as u32;
        assert_eq!(message_tokens(&c, &m), one);
        m.tool_calls.push(m.tool_calls[0].clone());
        assert_eq!(message_tokens(&c, &m), 2 * one - 4);
    }

    #[test]
    fn tool_result_counts_its_call_id() {
        let c = o200k();
        let mut m = msg(Role::Tool, "ok");
        let without = message_tokens(&c, &m);
        m.tool_call_id = Some("call_abc123".into());
        assert_eq!(message_tokens(&c, &m), without + c.count("call_abc123") as u32);
    }

    #[test]
    fn role_names_are_one_token_in_both_encodings() {
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let c = TiktokenCounter::new(enc, true);
            for role in [Role::System, Role::User, Role::Assistant, Role::Tool] {
                assert_eq!(c.count(role.as_str()), 1, "{role:?} in {}", c.id());
            }
            assert_eq!(c.count("system") as u32, SYSTEM_ROLE_TOKENS);
        }
    }

    #[test]
    fn request_overhead_adds_system_framing_only_with_a_prompt() {
        assert_eq!(request_overhead(false), 3);
        assert_eq!(request_overhead(true), 7);
    }

    #[test]
    fn name_adds_one_token() {
        assert_eq!(name_tokens(&o200k(), "alice"), 2);
    }

    #[test]
    fn tool_schemas_count_as_compact_json_and_are_named() {
        let c = o200k();
        let schemas = [
            json!({"type": "function", "function": {"name": "read_file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}),
            json!({"name": "shell", "input_schema": {"type": "object"}}),
            json!({"type": "custom"}),
        ];
        let items = tool_schema_items(&c, &schemas);
        let names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["read_file", "shell", "tool #2"]);
        assert_eq!(items[0].tokens, c.count(&schemas[0].to_string()) as u64);
        let sum: u64 = items.iter().map(|i| i.tokens).sum();
        assert_eq!(u64::from(tool_schema_tokens(&c, &schemas)), sum);
        assert_eq!(tool_schema_tokens(&c, &[]), 0);
    }
}
