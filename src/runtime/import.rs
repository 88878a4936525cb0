//! Reading an OpenAI-format `messages` array (the chat-completions request
//! shape) into stored messages.
//!
//! Accepted: a JSON array of messages, or an object with a `messages` array.
//! Roles `system`, `developer` (stored as `system`), `user`, `assistant`,
//! `tool`; `content` as a string, `null`, or an array of content parts
//! (`text` parts are joined, images become a placeholder); assistant
//! `tool_calls` with `function.arguments` as a string (or an object, which is
//! re-serialised). System messages are kept as pinned messages so nothing
//! imported is lost. strata's own `"pinned": true` and `"excluded": true`
//! (what `strata export --format json` writes for such messages) are read
//! back; any other value of them is ignored. Real transcripts are untidy, so a tool result whose call
//! is missing, or a huge message, is accepted with a warning naming it; the
//! per-turn pipeline repairs pairing later.

use crate::domain::{Message, Role, SessionId, ToolCall};
use serde_json::Value;
use std::collections::HashSet;

/// A message longer than this many characters is accepted with a warning.
pub const HUGE_MESSAGE_CHARS: usize = 1_000_000;

/// Why an import file was refused. Nothing is written when this happens.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImportError {
    /// Not JSON, or cut short.
    #[error("the import file is not valid JSON ({0}); check that it is complete")]
    Json(String),
    /// JSON of the wrong shape.
    #[error(
        "the import file must be a JSON array of chat messages (or an object with a \"messages\" array), but it is {0}"
    )]
    NotAnArray(&'static str),
    /// No messages at all.
    #[error("the import file holds no messages; nothing to import")]
    Empty,
    /// One message is malformed; `index` counts from 1.
    #[error("message {index} of the import file {problem}; fix it and import again")]
    Message {
        /// Position in the array, from 1.
        index: usize,
        /// What is wrong, as the end of a sentence.
        problem: String,
    },
}

/// Parsed messages plus warnings about accepted oddities.
#[derive(Debug)]
pub struct ImportOutcome {
    /// Messages in file order, `seq` not yet assigned.
    pub messages: Vec<Message>,
    /// One sentence per accepted oddity, naming the message.
    pub warnings: Vec<String>,
}

/// Parses `text` into messages of `session_id`, all created at `now_ms`.
///
/// # Errors
/// [`ImportError`] for invalid JSON, a wrong shape, an unknown role, a
/// message without content or tool calls, or a tool result without
/// `tool_call_id`.
pub fn parse_openai_messages(
    text: &str,
    session_id: SessionId,
    now_ms: i64,
) -> Result<ImportOutcome, ImportError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ImportError::Json(e.to_string()))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut map) => match map.remove("messages") {
            Some(Value::Array(items)) => items,
            _ => return Err(ImportError::NotAnArray("an object without a \"messages\" array")),
        },
        other => return Err(ImportError::NotAnArray(kind_of(&other))),
    };
    if items.is_empty() {
        return Err(ImportError::Empty);
    }
    let mut messages = Vec::with_capacity(items.len());
    let mut warnings = Vec::new();
    let mut call_ids: HashSet<String> = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let index = i + 1;
        let bad = |problem: String| ImportError::Message { index, problem };
        let obj = item
            .as_object()
            .ok_or_else(|| bad(format!("is {} instead of an object", kind_of(item))))?;
        let role_name = obj
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("has no \"role\"".to_owned()))?;
        let role = match role_name {
            "developer" => Role::System,
            other => Role::parse(other).ok_or_else(|| {
                bad(format!(
                    "has the unknown role '{other}' (expected system, developer, user, assistant or tool)"
                ))
            })?,
        };
        let content = content_text(obj.get("content"), &mut |p| bad(p))?;
        let tool_calls = if role == Role::Assistant {
            parse_tool_calls(obj.get("tool_calls")).map_err(bad)?
        } else {
            Vec::new()
        };
        if content.is_none() && tool_calls.is_empty() {
            return Err(bad(format!("({role_name}) has neither content nor tool_calls")));
        }
        let mut message = Message::new(session_id, role, content.unwrap_or_default(), now_ms);
        message.tool_calls = tool_calls;
        let flag = |name: &str| obj.get(name).and_then(Value::as_bool).unwrap_or(false);
        message.pinned = role == Role::System || flag("pinned");
        message.excluded = flag("excluded");
        if role == Role::Tool {
            let id = obj
                .get("tool_call_id")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("(tool) has no \"tool_call_id\"".to_owned()))?;
            if !call_ids.contains(id) {
                warnings.push(format!(
                    "message {index} is a tool result for call '{id}', which no earlier assistant message made; it is kept and the request pipeline will leave it out"
                ));
            }
            message.tool_call_id = Some(id.to_owned());
        }
        call_ids.extend(message.tool_calls.iter().map(|c| c.id.clone()));
        let chars = message.content.chars().count();
        if chars > HUGE_MESSAGE_CHARS {
            warnings.push(format!(
                "message {index} ({role_name}) is {chars} characters long; it is kept whole and will be truncated in requests"
            ));
        }
        messages.push(message);
    }
    Ok(ImportOutcome { messages, warnings })
}

/// The text of `content`: `None` when absent, null, or an empty parts array.
fn content_text(
    content: Option<&Value>,
    bad: &mut dyn FnMut(String) -> ImportError,
) -> Result<Option<String>, ImportError> {
    match content {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        texts.push(
                            part.get("text")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                        );
                    }
                    Some("image_url" | "image" | "input_image") => texts.push("[image]".to_owned()),
                    Some(other) => texts.push(format!("[{other}]")),
                    None => return Err(bad("has a content part without a \"type\"".to_owned())),
                }
            }
            Ok((!texts.is_empty()).then(|| texts.join("\n")))
        }
        Some(other) => Err(bad(format!("has content that is {}", kind_of(other)))),
    }
}

fn parse_tool_calls(value: Option<&Value>) -> Result<Vec<ToolCall>, String> {
    let Some(value) = value else { return Ok(Vec::new()) };
    let Some(calls) = value.as_array() else {
        if value.is_null() {
            return Ok(Vec::new());
        }
        return Err("has \"tool_calls\" that is not an array".to_owned());
    };
    calls
        .iter()
        .enumerate()
        .map(|(j, call)| {
            let function = call.get("function");
            let name = function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| format!("has tool call {} without function.name", j + 1))?;
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("has tool call {} without an id", j + 1))?;
            let arguments = match function.and_then(|f| f.get("arguments")) {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            Ok(ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments,
            })
        })
        .collect()
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ImportOutcome, ImportError> {
        parse_openai_messages(text, SessionId::new(), 0)
    }

    #[test]
    fn tool_calls_and_results_are_kept_and_system_is_pinned() {
        let out = parse(
            r#"[{"role":"system","content":"be brief"},
                {"role":"user","content":"list files"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\"dir\":\".\"}"}}]},
                {"role":"tool","tool_call_id":"c1","content":"a.rs"},
                {"role":"assistant","content":[{"type":"text","text":"One file."}]}]"#,
        )
        .unwrap();
        assert!(out.warnings.is_empty());
        assert_eq!(out.messages.len(), 5);
        assert!(out.messages[0].pinned);
        assert_eq!(out.messages[2].tool_calls[0].arguments, r#"{"dir":"."}"#);
        assert_eq!(out.messages[3].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(out.messages[4].content, "One file.");
    }

    #[test]
    fn pinned_and_excluded_flags_are_read_back() {
        let out = parse(
            r#"[{"role":"user","content":"a","pinned":true},
                {"role":"assistant","content":"b","excluded":true},
                {"role":"user","content":"c","pinned":"yes","excluded":false}]"#,
        )
        .unwrap();
        let flags: Vec<(bool, bool)> = out.messages.iter().map(|m| (m.pinned, m.excluded)).collect();
        assert_eq!(flags, [(true, false), (false, true), (false, false)]);
    }

    #[test]
    fn malformed_files_are_refused_with_the_reason() {
        assert!(matches!(parse("[{\"role\":"), Err(ImportError::Json(_))));
        assert!(matches!(parse("{not json"), Err(ImportError::Json(_))));
        assert_eq!(
            parse("{\"a\":1}").unwrap_err(),
            ImportError::NotAnArray("an object without a \"messages\" array")
        );
        assert_eq!(parse("42").unwrap_err(), ImportError::NotAnArray("a number"));
        assert_eq!(parse("[]").unwrap_err(), ImportError::Empty);
        let err = parse(r#"[{"role":"user","content":"hi"},{"role":"robot","content":"x"}]"#).unwrap_err();
        assert!(matches!(err, ImportError::Message { index: 2, .. }), "{err}");
        assert!(err.to_string().contains("robot"));
        let err = parse(r#"[{"role":"assistant"}]"#).unwrap_err();
        assert!(
            err.to_string().contains("neither content nor tool_calls"),
            "{err}"
        );
    }

    #[test]
    fn orphan_tool_result_and_huge_message_are_accepted_with_warnings() {
        let huge = "x".repeat(HUGE_MESSAGE_CHARS + 1);
        let text = format!(
            r#"[{{"role":"tool","tool_call_id":"gone","content":"r"}},{{"role":"user","content":"{huge}"}}]"#
        );
        let out = parse(&text).unwrap();
        assert_eq!(out.messages.len(), 2);
        assert_eq!(out.warnings.len(), 2);
        assert!(out.warnings[0].starts_with("message 1 "));
        assert!(out.warnings[1].starts_with("message 2 "));
    }

    #[test]
    fn object_arguments_are_serialised() {
        let out = parse(
            r#"{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}}]}]}"#,
        )
        .unwrap();
        assert_eq!(out.messages[0].tool_calls[0].arguments, r#"{"a":1}"#);
    }
}
