//! Usage reported by a provider for one request, next to strata's own estimate.

use super::ids::{MessageId, SessionId};
use serde::{Deserialize, Serialize};

/// One provider request's token usage. Field names follow OpenAI's `usage`
/// object; `cache_read_tokens` is OpenAI's `prompt_tokens_details.cached_tokens`
/// or Anthropic's `cache_read_input_tokens`, `cache_write_tokens` Anthropic's
/// `cache_creation_input_tokens`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Session of the request.
    pub session_id: SessionId,
    /// The assistant message the request produced.
    pub message_id: Option<MessageId>,
    /// Model that answered.
    pub model: String,
    /// Input tokens as the provider counted them (None when it did not say).
    pub prompt_tokens: Option<u64>,
    /// Output tokens.
    pub completion_tokens: Option<u64>,
    /// Input tokens served from the provider's prompt cache.
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens (part of the output).
    pub reasoning_tokens: Option<u64>,
    /// strata's estimate of the same request's input tokens.
    pub estimated_prompt_tokens: u64,
    /// Time to first token, milliseconds.
    pub ttft_ms: Option<u64>,
    /// Whole request duration, milliseconds.
    pub duration_ms: Option<u64>,
    /// When the request finished, unix milliseconds.
    pub created_at: i64,
    /// SHA-256 (hex) of the request's tools array as sent; `None` when it
    /// offered no tools.
    #[serde(default)]
    pub tools_sha256: Option<String>,
    /// What strata predicted of the request's cache reads and where the
    /// cached prefix broke; `None` for rows written before strata kept it.
    #[serde(default)]
    pub cache: Option<super::CacheCheck>,
}
