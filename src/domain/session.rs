//! A chat session: its identity, where it runs and which model it talks to.

use super::ids::{PromptId, SessionId};
use super::provider::ProviderKind;
use serde::{Deserialize, Serialize};

/// One chat session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// Unique id.
    pub id: SessionId,
    /// Human title (first user request, or set by `/rename`).
    pub title: String,
    /// Absolute path of the workspace root the session was started in.
    pub workspace: String,
    /// Model name as the provider knows it.
    pub model: String,
    /// Provider (`openai`, `anthropic` or `local` in JSON and the store).
    pub provider: ProviderKind,
    /// The frozen system prompt version in use.
    pub current_prompt_id: Option<PromptId>,
    /// The session this one was forked from.
    pub parent_id: Option<SessionId>,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
    /// Last change, unix milliseconds.
    pub updated_at: i64,
}

/// A row of the session list: the session plus counters computed by the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Unique id.
    pub id: SessionId,
    /// Title.
    pub title: String,
    /// Workspace root.
    pub workspace: String,
    /// Model name.
    pub model: String,
    /// Provider.
    pub provider: ProviderKind,
    /// Active (non-archived) messages.
    pub messages: u64,
    /// Sum of cached token counts of the active messages (0 where not counted yet).
    pub tokens: u64,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
    /// Last change, unix milliseconds.
    pub updated_at: i64,
}
