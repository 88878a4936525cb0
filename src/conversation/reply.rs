//! The reply in progress: text and tool calls as they stream, when to flush
//! them to the store, and the usage row at the end.

use super::{Effect, FLUSH_BYTES, FLUSH_INTERVAL_MS};
use crate::domain::{MessageId, MessageStatus, ProviderUsage, Session, ToolCall, Usage};

/// A tool call being assembled from deltas.
#[derive(Clone, Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// State of one streaming reply (one model request of a turn).
#[derive(Debug)]
pub(super) struct Reply {
    pub message_id: MessageId,
    /// The stored row's `seq`, once the store reported it.
    pub seq: i64,
    pub started_at_ms: i64,
    pub first_output_ms: Option<i64>,
    pub estimate: u64,
    pub text: String,
    pub usage: Option<ProviderUsage>,
    /// SHA-256 of the tools array the request carried.
    pub tools_sha256: Option<String>,
    /// The request's blocks and what strata predicted of its cache reads.
    pub cache: Option<(Box<crate::domain::PrefixSnapshot>, crate::domain::CacheCheck)>,
    calls: Vec<PartialCall>,
    flushed_len: usize,
    flushed_at_ms: i64,
}

impl Reply {
    pub fn new(message_id: MessageId, now_ms: i64, estimate: u64) -> Self {
        Self {
            message_id,
            seq: 0,
            started_at_ms: now_ms,
            first_output_ms: None,
            estimate,
            text: String::new(),
            usage: None,
            tools_sha256: None,
            cache: None,
            calls: Vec::new(),
            flushed_len: 0,
            flushed_at_ms: now_ms,
        }
    }

    pub fn mark_output(&mut self, now_ms: i64) {
        self.first_output_ms.get_or_insert(now_ms);
    }

    pub fn has_output(&self) -> bool {
        !self.text.is_empty() || !self.calls.is_empty()
    }

    pub fn push_text(&mut self, text: &str, now_ms: i64) {
        self.mark_output(now_ms);
        self.text.push_str(text);
    }

    /// Applies a tool-call delta: `id` and `name` are set (servers may repeat
    /// them on every chunk), `arguments` appended.
    pub fn push_tool_call(
        &mut self,
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: &str,
        now_ms: i64,
    ) {
        self.mark_output(now_ms);
        if self.calls.len() <= index {
            self.calls.resize_with(index + 1, PartialCall::default);
        }
        let call = &mut self.calls[index];
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            call.id = id;
        }
        if let Some(name) = name.filter(|s| !s.is_empty()) {
            call.name = name;
        }
        call.arguments.push_str(arguments);
    }

    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.calls
            .iter()
            .filter(|c| !c.name.is_empty())
            .map(|c| ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect()
    }

    pub fn should_flush(&self, now_ms: i64) -> bool {
        self.text.len() > self.flushed_len
            && (now_ms - self.flushed_at_ms >= FLUSH_INTERVAL_MS
                || self.text.len() - self.flushed_len >= FLUSH_BYTES)
    }

    pub fn flush(&mut self, now_ms: i64) -> Effect {
        self.flushed_len = self.text.len();
        self.flushed_at_ms = now_ms;
        Effect::UpdateMessage {
            id: self.message_id,
            content: self.text.clone(),
            tool_calls: self.tool_calls(),
            status: MessageStatus::Streaming,
        }
    }

    pub fn usage_row(&self, session: &Session, now_ms: i64) -> Usage {
        let u = self.usage.unwrap_or_default();
        Usage {
            session_id: session.id,
            message_id: Some(self.message_id),
            model: session.model.clone(),
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cache_read_tokens: u.cache_read_tokens,
            cache_write_tokens: u.cache_write_tokens,
            reasoning_tokens: u.reasoning_tokens,
            estimated_prompt_tokens: self.estimate,
            ttft_ms: self
                .first_output_ms
                .map(|t| u64::try_from(t - self.started_at_ms).unwrap_or(0)),
            duration_ms: Some(u64::try_from(now_ms - self.started_at_ms).unwrap_or(0)),
            created_at: now_ms,
            tools_sha256: self.tools_sha256.clone(),
            cache: self
                .cache
                .as_ref()
                .map(|(_, check)| super::cache_book::with_reported(check.clone(), u.cache_read_tokens)),
        }
    }
}
