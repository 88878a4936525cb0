//! One stored chat message, in the OpenAI chat-completions vocabulary.

use super::ids::{CompactionId, MessageId, SessionId};
use serde::{Deserialize, Serialize};

/// Who wrote a message: the `role` field of the OpenAI and Anthropic APIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions; strata's own system prompt is stored separately, so a
    /// stored `system` message is one that came from an import.
    System,
    /// The human.
    User,
    /// The model.
    Assistant,
    /// The result of one tool call, answering `tool_call_id`.
    Tool,
}

impl Role {
    /// The wire name (`"system"`, `"user"`, `"assistant"`, `"tool"`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }

    /// Parses a wire name; `None` for anything else.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "system" => Some(Self::System),
            "user" => Some(Self::User),
            "assistant" => Some(Self::Assistant),
            "tool" => Some(Self::Tool),
            _ => None,
        }
    }
}

/// One function call requested by the assistant, as in OpenAI's
/// `tool_calls[]`: `arguments` is the JSON text exactly as the model wrote it
/// (it may be invalid JSON while streaming or in imported transcripts).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id that a `tool` message's `tool_call_id` answers.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments, a JSON object serialised as a string.
    pub arguments: String,
}

/// What a message is, beyond its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageKind {
    /// Written by the user, the model or a tool.
    #[default]
    Normal,
    /// A compaction summary standing for archived messages.
    Summary,
    /// Inserted by strata (for example a note that earlier messages were omitted).
    Synthetic,
}

/// Lifecycle of a message's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    /// Fully written.
    #[default]
    Complete,
    /// A reply still arriving; a crash leaves it to be marked interrupted.
    Streaming,
    /// A reply cut short (cancelled or the process died); the partial text is kept.
    Interrupted,
    /// The request failed; `content` holds what arrived, if anything.
    Error,
}

/// Why a reply stopped before the provider said it was done (a message of
/// status [`MessageStatus::Interrupted`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interruption {
    /// The user cancelled (Ctrl-C, Esc).
    Cancelled,
    /// The server closed the stream before the reply was done.
    CutOff,
    /// The request failed after part of the reply arrived.
    Failed,
}

impl Interruption {
    /// The stored name: `cancelled`, `cut_off` or `failed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::CutOff => "cut_off",
            Self::Failed => "failed",
        }
    }

    /// The interruption a stored name stands for; `None` for anything else.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "cancelled" => Some(Self::Cancelled),
            "cut_off" => Some(Self::CutOff),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// A cached token count and the tokenizer that produced it (for example
/// `o200k_base`), so a count is never reused across tokenizers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCount {
    /// Tokenizer id, e.g. `o200k_base`, `cl100k_base`.
    pub tokenizer: String,
    /// Tokens of this message including the per-message chat overhead.
    pub tokens: u32,
}

/// One message of a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Unique id.
    pub id: MessageId,
    /// Owning session.
    pub session_id: SessionId,
    /// Position in the session, strictly increasing from 1.
    pub seq: i64,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: Role,
    /// The text content (may be empty for an assistant message that only calls tools).
    pub content: String,
    /// Tool calls of an assistant message; empty otherwise.
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message, the id of the call it answers.
    pub tool_call_id: Option<String>,
    /// Never truncated, pruned or dropped by the pipeline, and kept
    /// verbatim (with its turn) by compression.
    pub pinned: bool,
    /// Left out of every request until included again (`/exclude`); an
    /// excluded message is neither summarised nor archived by compression.
    /// For an assistant message with `tool_calls` or a `tool` result, the
    /// whole call unit is left out (see the pipeline).
    #[serde(default)]
    pub excluded: bool,
    /// Number of later assistant turns after which the pipeline prunes it.
    pub ephemeral_ttl: Option<u32>,
    /// Normal, summary or synthetic.
    pub kind: MessageKind,
    /// The compaction that archived this message, if any.
    pub archived_by: Option<CompactionId>,
    /// Complete, streaming, interrupted or error.
    pub status: MessageStatus,
    /// For an interrupted reply, why it stopped (`None` for replies stored
    /// before strata kept it).
    #[serde(default)]
    pub interruption: Option<Interruption>,
    /// For a failed reply, what it failed with (one sentence, shown with it,
    /// never sent to the model).
    #[serde(default)]
    pub error: Option<String>,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
    /// Cached token count, if computed.
    pub tokens: Option<TokenCount>,
    /// For a `tool` message stored by strata's tool loop: the result's
    /// status and what the output limits did (none for imported ones).
    #[serde(default)]
    pub tool: Option<super::ToolResultMeta>,
}

impl Message {
    /// How the message ended when not complete, in words for people:
    /// `interrupted` (cancelled, or the process died), `cut off by the
    /// server`, `failed mid-reply`, `error`, `streaming`; `None` when
    /// complete.
    #[must_use]
    pub fn status_words(&self) -> Option<&'static str> {
        match self.status {
            MessageStatus::Complete => None,
            MessageStatus::Streaming => Some("streaming"),
            MessageStatus::Error => Some("error"),
            MessageStatus::Interrupted => Some(match self.interruption {
                Some(Interruption::CutOff) => "cut off by the server",
                Some(Interruption::Failed) => "failed mid-reply",
                Some(Interruption::Cancelled) | None => "interrupted",
            }),
        }
    }

    /// A complete, normal, unpinned message with no tool data and no cached count.
    #[must_use]
    pub fn new(session_id: SessionId, role: Role, content: impl Into<String>, created_at: i64) -> Self {
        Self {
            id: MessageId::new(),
            session_id,
            seq: 0,
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            pinned: false,
            excluded: false,
            ephemeral_ttl: None,
            kind: MessageKind::Normal,
            archived_by: None,
            status: MessageStatus::Complete,
            interruption: None,
            error: None,
            created_at,
            tokens: None,
            tool: None,
        }
    }
}
