//! A compaction: a range of messages archived behind one summary message.

use super::ids::{CompactionId, MessageId, PromptId, SessionId};
use serde::{Deserialize, Serialize};

/// What started a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionTrigger {
    /// The threshold was crossed (preflight or after a response).
    Auto,
    /// The user asked (`/compress`).
    Manual,
    /// The provider rejected the request as too long.
    Overflow,
}

/// One compaction. Archived messages point at it through `archived_by`;
/// nothing is copied or deleted, so undo is exact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// Unique id.
    pub id: CompactionId,
    /// Owning session.
    pub session_id: SessionId,
    /// What started it.
    pub trigger: CompactionTrigger,
    /// The focus given to `/compress <topic>`.
    pub topic: Option<String>,
    /// First archived message.
    pub first_message_id: Option<MessageId>,
    /// Last archived message.
    pub last_message_id: Option<MessageId>,
    /// The summary message inserted in their place.
    pub summary_message_id: Option<MessageId>,
    /// Model name, `extractive` or `fallback`.
    pub summarizer: String,
    /// Estimated prompt tokens before.
    pub tokens_before: u64,
    /// Estimated prompt tokens after.
    pub tokens_after: u64,
    /// Active messages before.
    pub messages_before: u64,
    /// Active messages after.
    pub messages_after: u64,
    /// The system prompt version in use before.
    pub prompt_before_id: Option<PromptId>,
    /// The system prompt version built by the compaction.
    pub prompt_after_id: Option<PromptId>,
    /// When it was undone, unix milliseconds.
    pub undone_at: Option<i64>,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
}
