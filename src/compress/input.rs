//! What the summariser reads (DESIGN §7 phase 3): the middle serialised with
//! dates and role labels, each message capped at [`MESSAGE_MAX_CHARS`]
//! (first [`MESSAGE_HEAD_CHARS`] + last [`MESSAGE_TAIL_CHARS`]), tool-call
//! arguments at [`ARGUMENTS_MAX_CHARS`], the whole at [`INPUT_MAX_CHARS`]
//! (head and tail kept), with secrets redacted before any cut; the prompt
//! from `assets/prompts/summary*.md`; and the target size.
//!
//! Dates are the messages' `created_at` in UTC. Pure.

use super::redact::redact;
use super::{cut_at, tail_of};
use crate::domain::{Message, Role};
use crate::text::group_digits;
use std::collections::HashMap;

/// A serialised message longer than this (chars) is cut.
pub const MESSAGE_MAX_CHARS: usize = 6_000;
/// Chars kept from the start of a cut message.
pub const MESSAGE_HEAD_CHARS: usize = 4_000;
/// Chars kept from the end of a cut message.
pub const MESSAGE_TAIL_CHARS: usize = 1_500;
/// Tool-call arguments are cut to this many chars.
pub const ARGUMENTS_MAX_CHARS: usize = 1_500;
/// The whole transcript is cut to this many chars.
pub const INPUT_MAX_CHARS: usize = 160_000;

const PROMPT: &str = include_str!("../../assets/prompts/summary.md");
const PROMPT_UPDATE: &str = include_str!("../../assets/prompts/summary_update.md");
const TOPIC_BLOCK: &str = include_str!("../../assets/prompts/summary_topic.md");

/// A request for a model-written summary: what the runtime sends (as one
/// user message) to the summariser model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryRequest {
    /// The whole prompt: instructions, topic block, earlier summary and the
    /// redacted transcript.
    pub prompt: String,
    /// Tokens the summary should take (see [`target_summary_tokens`]).
    pub target_tokens: u32,
    /// The focus of `/compress <topic>`.
    pub topic: Option<String>,
    /// Whether an earlier summary is being updated.
    pub updates_previous: bool,
}

/// `clamp(20 % of middle_tokens, 2,000, min(5 % of window, 10,000))`
/// (DESIGN §7); when 5 % of a small window is below 2,000, that smaller
/// bound wins. When an earlier summary of `previous_tokens` is updated, the
/// target is at least its size (within the same upper bound), so an update
/// adds the new messages to it instead of cutting it down to a fifth.
#[must_use]
pub fn target_summary_tokens(middle_tokens: u64, window: u64, previous_tokens: u64) -> u32 {
    let upper = (window / 20).min(10_000);
    let t = (middle_tokens / 5).max(2_000).max(previous_tokens).min(upper);
    u32::try_from(t).unwrap_or(10_000)
}

/// `2026-11-29` for a unix-milliseconds timestamp (UTC); `unknown date` when
/// out of range.
#[must_use]
pub fn date_of(created_at_ms: i64) -> String {
    jiff::Timestamp::from_millisecond(created_at_ms)
        .map(|t| t.to_zoned(jiff::tz::TimeZone::UTC).date().to_string())
        .unwrap_or_else(|_| "unknown date".to_owned())
}

/// `text` with its middle replaced by a marker when longer than `max` chars:
/// the first `head` and the last `tail` chars are kept.
fn cap(text: &str, max: usize, head: usize, tail: usize) -> String {
    let chars = text.chars().count();
    if chars <= max {
        return text.to_owned();
    }
    let omitted = chars - head - tail;
    format!(
        "{}\n[... {} chars omitted ...]\n{}",
        cut_at(text, head),
        group_digits(omitted as u64),
        tail_of(text, tail)
    )
}

/// The role-labelled, capped, redacted transcript of `messages`:
/// `[2026-11-29] USER:` / `ASSISTANT:` / `TOOL RESULT (name):` / `SYSTEM:`
/// blocks separated by blank lines, tool calls as `-> called name(args)`.
#[must_use]
pub fn summary_input(messages: &[&Message]) -> String {
    let names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let mut out = String::new();
    for m in messages {
        let label = match m.role {
            Role::User => "USER".to_owned(),
            Role::Assistant => "ASSISTANT".to_owned(),
            Role::System => "SYSTEM".to_owned(),
            Role::Tool => {
                let name = m
                    .tool_call_id
                    .as_deref()
                    .and_then(|id| names.get(id))
                    .unwrap_or(&"tool");
                format!("TOOL RESULT ({name})")
            }
        };
        let mut block = redact(&m.content).into_owned();
        for call in &m.tool_calls {
            let args = redact(&call.arguments);
            let args = cap(&args, ARGUMENTS_MAX_CHARS, ARGUMENTS_MAX_CHARS - 300, 200);
            block.push_str(&format!("\n-> called {}({args})", call.name));
        }
        let block = cap(
            block.trim(),
            MESSAGE_MAX_CHARS,
            MESSAGE_HEAD_CHARS,
            MESSAGE_TAIL_CHARS,
        );
        out.push_str(&format!("[{}] {label}:\n{block}\n\n", date_of(m.created_at)));
    }
    let half = INPUT_MAX_CHARS / 2 - 100;
    cap(&out, INPUT_MAX_CHARS, half, half)
}

/// The prompt for a model summary of `transcript` (from [`summary_input`]):
/// the update template when `previous` (the body of the active summary) is
/// given, with the topic block when `topic` is.
#[must_use]
pub fn summary_request(
    transcript: &str,
    previous: Option<&str>,
    topic: Option<&str>,
    target_tokens: u32,
) -> SummaryRequest {
    let topic_block = topic.map_or(String::new(), |t| TOPIC_BLOCK.replace("{topic}", t));
    let template = if previous.is_some() { PROMPT_UPDATE } else { PROMPT };
    let prompt = template
        .replace("{target_tokens}", &group_digits(u64::from(target_tokens)))
        .replace("{topic_block}", &topic_block)
        .replace("{previous_summary}", &redact(previous.unwrap_or("")))
        .replace("{transcript}", transcript);
    SummaryRequest {
        prompt,
        target_tokens,
        topic: topic.map(str::to_owned),
        updates_previous: previous.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SessionId, ToolCall};

    #[test]
    fn target_size_is_clamped() {
        assert_eq!(target_summary_tokens(5_000, 200_000, 0), 2_000);
        assert_eq!(target_summary_tokens(40_000, 200_000, 0), 8_000);
        assert_eq!(target_summary_tokens(400_000, 200_000, 0), 10_000);
        assert_eq!(target_summary_tokens(400_000, 1_000_000, 0), 10_000);
        assert_eq!(target_summary_tokens(40_000, 32_000, 0), 1_600);
        assert_eq!(target_summary_tokens(12_000, 200_000, 7_000), 7_000);
        assert_eq!(target_summary_tokens(12_000, 200_000, 30_000), 10_000);
    }

    #[test]
    fn messages_are_labelled_capped_and_redacted() {
        let s = SessionId::new();
        let long = format!("{}{}", "a".repeat(5_000), "z".repeat(2_000));
        let mut a = Message::new(s, Role::Assistant, long, 1_764_374_400_000);
        a.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "shell".into(),
            arguments: r#"{"command":"export API_TOKEN=abc123secret"}"#.into(),
        });
        let mut t = Message::new(s, Role::Tool, "ok", 1_764_374_400_000);
        t.tool_call_id = Some("c1".into());
        let text = summary_input(&[&a, &t]);
        assert!(text.starts_with("[2025-11-29] ASSISTANT:\naaaa"));
        assert!(text.contains("chars omitted"));
        assert!(text.contains("TOOL RESULT (shell):\nok"));
        assert!(!text.contains("abc123secret"));
        let block = text.split("TOOL RESULT").next().unwrap();
        assert!(block.chars().count() < MESSAGE_MAX_CHARS + 100);
    }

    #[test]
    fn whole_input_is_capped_keeping_both_ends() {
        let s = SessionId::new();
        let msgs: Vec<Message> = (0..60)
            .map(|i| Message::new(s, Role::User, format!("msg{i:02} {}", "x".repeat(5_000)), 0))
            .collect();
        let refs: Vec<&Message> = msgs.iter().collect();
        let text = summary_input(&refs);
        assert!(text.chars().count() <= INPUT_MAX_CHARS + 100);
        assert!(text.contains("msg00") && text.contains("msg59"));
    }

    #[test]
    fn prompt_variants() {
        let r = summary_request("T", None, Some("parser"), 2_000);
        assert!(r.prompt.contains("\"parser\"") && r.prompt.contains("2,000") && !r.updates_previous);
        let r = summary_request("T", Some("old body"), None, 2_000);
        assert!(r.prompt.contains("old body") && r.updates_previous);
    }
}
