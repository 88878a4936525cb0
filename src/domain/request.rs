//! The provider-neutral chat request that the per-turn pipeline produces and
//! every provider adapter translates to its wire format, and the events a
//! provider stream yields.

use super::message::{Role, ToolCall};
use serde::{Deserialize, Serialize};

/// One message as sent to a provider (OpenAI chat-completions vocabulary).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestMessage {
    /// `user`, `assistant` or `tool` (a `system` message here is an imported
    /// one; providers that allow one system prompt merge it after strata's).
    pub role: Role,
    /// Text content; may be empty for an assistant message with tool calls.
    pub content: String,
    /// Tool calls of an assistant message.
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message, the call it answers.
    pub tool_call_id: Option<String>,
}

/// The system prompt as sent: the frozen bytes and where the cache boundary is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestSystem {
    /// Exact bytes of the frozen system prompt.
    pub text: String,
    /// Byte offset in `text` where the volatile part starts (Anthropic
    /// sends `text[..offset]` and `text[offset..]` as two cached blocks).
    pub boundary_offset: Option<usize>,
}

/// A complete chat request, ready for a provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model name as the provider knows it.
    pub model: String,
    /// strata's frozen system prompt.
    pub system: RequestSystem,
    /// The conversation, oldest first.
    pub messages: Vec<RequestMessage>,
    /// Maximum output tokens (`max_tokens`).
    pub max_tokens: u64,
    /// Tool schemas in OpenAI `tools[]` form (`{type: "function", function: {name, description, parameters}}`).
    pub tools: Vec<serde_json::Value>,
    /// Sampling temperature; `None` leaves the provider default.
    pub temperature: Option<f32>,
}

/// Token usage as a provider reported it. `cache_read_tokens` is OpenAI's
/// `usage.prompt_tokens_details.cached_tokens`, Anthropic's
/// `cache_read_input_tokens`, or the local model's re-used KV prefix;
/// `cache_write_tokens` is Anthropic's `cache_creation_input_tokens`.
/// `prompt_tokens` is the whole input (for Anthropic: `input_tokens` +
/// cache read + cache write).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderUsage {
    /// Input tokens.
    pub prompt_tokens: Option<u64>,
    /// Output tokens.
    pub completion_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens (part of the output).
    pub reasoning_tokens: Option<u64>,
}

/// One event of a streamed reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// More reply text.
    TextDelta {
        /// The new text (complete UTF-8).
        text: String,
    },
    /// More reasoning ("thinking") text.
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// Part of a tool call: `id` and `name` when first seen (some servers
    /// repeat them: set, don't append), `arguments` to append.
    ToolCallDelta {
        /// Position of the call in the reply.
        index: usize,
        /// Call id.
        id: Option<String>,
        /// Function name.
        name: Option<String>,
        /// Arguments text to append.
        arguments: String,
    },
    /// Usage, usually near the end.
    Usage(ProviderUsage),
    /// The reply is complete.
    Done {
        /// Why the provider stopped, when it said.
        finish_reason: Option<FinishReason>,
    },
    /// The server accepted the request and its reply stream is open;
    /// nothing of the reply has arrived yet (the model is reading the
    /// prompt). Progress, not reply content.
    Connected,
    /// The attempt failed with a retryable error (rate limit, overload, a
    /// server error, the network); strata waits `wait_ms` and sends the
    /// request again. Progress, not reply content.
    Retrying {
        /// The retry about to happen, counting from 1.
        attempt: u32,
        /// Retries allowed in all.
        max: u32,
        /// What went wrong, one sentence.
        reason: String,
        /// The wait before it, milliseconds.
        wait_ms: u64,
    },
    /// How far the model has read the prompt, where the provider says (the
    /// embedded model, after each batch of its prefill). Progress, not
    /// reply content.
    Prefill {
        /// Prompt tokens read so far (those re-used from the cache
        /// included).
        done: u64,
        /// Prompt tokens in all.
        total: u64,
    },
}

impl StreamEvent {
    /// Whether the event reports the request's progress rather than reply
    /// content ([`StreamEvent::Connected`], [`StreamEvent::Retrying`],
    /// [`StreamEvent::Prefill`]).
    #[must_use]
    pub fn is_progress(&self) -> bool {
        matches!(
            self,
            Self::Connected | Self::Retrying { .. } | Self::Prefill { .. }
        )
    }
}

/// Why a reply ended: OpenAI's `finish_reason`, Anthropic's `stop_reason`
/// and the embedded model's end, in one vocabulary. Serialised as the
/// OpenAI name (`stop`, `length`, `tool_calls`, `content_filter`), Anthropic's
/// `stop_sequence`, or the provider's own text for [`FinishReason::Other`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// The model ended its reply: OpenAI `stop`, Anthropic `end_turn`.
    Stop,
    /// The output limit (`max_tokens`) cut the reply: OpenAI `length`,
    /// Anthropic `max_tokens`.
    Length,
    /// The reply asks for tool calls: OpenAI `tool_calls` (and the older
    /// `function_call`), Anthropic `tool_use`.
    ToolCalls,
    /// One of the request's stop sequences matched: Anthropic `stop_sequence`.
    StopSequence,
    /// The provider withheld content: OpenAI `content_filter`, Anthropic `refusal`.
    ContentFilter,
    /// Any other reason, as the provider wrote it (e.g. Anthropic `pause_turn`).
    Other(String),
}

impl FinishReason {
    /// The reason for a provider's `finish_reason` / `stop_reason` text.
    #[must_use]
    pub fn parse(s: &str) -> Self {
        match s {
            "stop" | "end_turn" => Self::Stop,
            "length" | "max_tokens" => Self::Length,
            "tool_calls" | "function_call" | "tool_use" => Self::ToolCalls,
            "stop_sequence" => Self::StopSequence,
            "content_filter" | "refusal" => Self::ContentFilter,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The name it is serialised and logged as (see the type's doc).
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
            Self::StopSequence => "stop_sequence",
            Self::ContentFilter => "content_filter",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for FinishReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(deserializer)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_wires_map_to_one_vocabulary() {
        assert_eq!(FinishReason::parse("length"), FinishReason::Length);
        assert_eq!(FinishReason::parse("max_tokens"), FinishReason::Length);
        assert_eq!(FinishReason::parse("end_turn"), FinishReason::Stop);
        assert_eq!(FinishReason::parse("tool_use"), FinishReason::ToolCalls);
        assert_eq!(
            FinishReason::parse("pause_turn"),
            FinishReason::Other("pause_turn".into())
        );
    }

    #[test]
    fn serialised_names_parse_back() {
        for r in [
            FinishReason::Stop,
            FinishReason::Length,
            FinishReason::ToolCalls,
            FinishReason::StopSequence,
            FinishReason::ContentFilter,
            FinishReason::Other("pause_turn".into()),
        ] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(serde_json::from_str::<FinishReason>(&json).unwrap(), r);
        }
    }
}
