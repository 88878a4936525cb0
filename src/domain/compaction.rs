//! A compaction: a range of messages archived behind one summary message.

use super::ids::{CompactionId, MessageId, PromptId, SessionId};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

/// What a compaction record archived its messages for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionKind {
    /// A compression: a summary message takes the archived messages' place.
    #[default]
    Summary,
    /// An edit and resend: the edited user message and everything after it
    /// are archived; the edited text is appended as a new message.
    Edit,
    /// The undo of an edit: the messages appended after the edit are
    /// archived and the edit's originals are active again.
    EditUndo,
}

impl CompactionKind {
    /// The stored name: `summary`, `edit` or `edit_undo`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Summary => "summary",
            Self::Edit => "edit",
            Self::EditUndo => "edit_undo",
        }
    }

    /// The kind a stored name stands for; `None` for anything else.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "summary" => Some(Self::Summary),
            "edit" => Some(Self::Edit),
            "edit_undo" => Some(Self::EditUndo),
            _ => None,
        }
    }
}

/// Who wrote a compaction's summary. Serialised and stored as one string:
/// the model's name, `extractive` or `fallback` (so a model cannot be
/// called `extractive` or `fallback`; the config reserves those names).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Summarizer {
    /// A model, by the name its provider knows it.
    Model(String),
    /// strata's extractive summariser (no model call).
    Extractive,
    /// The model failed; the summary was extracted without one and labelled.
    Fallback,
}

impl Summarizer {
    /// The stored name: the model's name, `extractive` or `fallback`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Model(name) => name,
            Self::Extractive => "extractive",
            Self::Fallback => "fallback",
        }
    }

    /// The summariser a stored name stands for (any other name is a model).
    #[must_use]
    pub fn parse(s: &str) -> Self {
        match s {
            "extractive" => Self::Extractive,
            "fallback" => Self::Fallback,
            name => Self::Model(name.to_owned()),
        }
    }
}

impl std::fmt::Display for Summarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Summarizer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Summarizer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(deserializer)?))
    }
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
    /// Who wrote the summary.
    pub summarizer: Summarizer,
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
    /// A compression, an edit and resend, or the undo of an edit.
    #[serde(default)]
    pub kind: CompactionKind,
    /// The user edited the summary before it was stored (a compression
    /// previewed and applied with a changed summary).
    #[serde(default)]
    pub edited: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarizers_are_one_json_string() {
        for (s, json) in [
            (Summarizer::Model("gpt-4o".into()), "\"gpt-4o\""),
            (Summarizer::Extractive, "\"extractive\""),
            (Summarizer::Fallback, "\"fallback\""),
        ] {
            assert_eq!(serde_json::to_string(&s).unwrap(), json);
            assert_eq!(serde_json::from_str::<Summarizer>(json).unwrap(), s);
        }
    }
}
