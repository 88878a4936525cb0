//! The context list (issue "context control"): one row per message of a
//! session, archived ones included, saying what the next request does with
//! it and what it costs. The app's context list overlay and
//! `strata context ID --list` show the same rows.
//!
//! Pure: rows are made from the stored messages, the pipeline's report of
//! the next request and the session's compaction records.

use crate::domain::{CompactionId, MessageId, MessageKind, Role};
use serde::Serialize;

/// What the next request does with one message. Serialises as
/// `{"state": "truncated", "from": 1200, "to": 300}` and the like
/// (`snake_case` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RowState {
    /// Sent as stored (also: merged into the message before it, or sent
    /// without tool calls whose results are gone).
    Kept,
    /// Sent cut, from `from` to `to` tokens.
    Truncated {
        /// Stored count, tokens.
        from: u32,
        /// What the request carries, tokens.
        to: u32,
    },
    /// Not sent: its `ephemeral_ttl` expired.
    Pruned,
    /// Not sent: outside the window or the message cap, or unpaired.
    Dropped,
    /// Not sent: the user excluded it (or its tool call unit).
    Excluded,
    /// Sent, and kept verbatim by the pipeline and by compression.
    Pinned,
    /// Archived by a compression; `summary` is the active summary message
    /// that stands for it (`None` when that summary is itself gone, e.g.
    /// folded into a later one that was undone).
    Summarised {
        /// The summary message standing for it.
        summary: Option<MessageId>,
    },
    /// Archived by an edit and resend (or the undo of one): not part of the
    /// active history.
    Archived {
        /// The record that archived it.
        by: CompactionId,
    },
}

/// One row of the context list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ContextRow {
    /// Position among the active messages, counting from 1 (the `pos` of
    /// `strata show`); `None` for archived messages.
    pub pos: Option<usize>,
    /// The stored message.
    pub message_id: MessageId,
    /// `user`, `assistant`, `tool` or `system`.
    pub role: Role,
    /// Normal, summary or synthetic.
    pub kind: MessageKind,
    /// What the next request does with it.
    #[serde(flatten)]
    pub state: RowState,
    /// The stored count (framing included), tokens.
    pub tokens: u32,
    /// What it adds to the next request, tokens (0 when not sent).
    pub tokens_sent: u32,
    /// Whether it is pinned (a pinned message cannot be excluded: it is
    /// unpinned first).
    pub pinned: bool,
    /// For an assistant message, the names of its tool calls; for a `tool`
    /// result, the name of the tool it answers.
    pub tools: Vec<String>,
    /// The first line of the content, at most 80 characters, control
    /// characters removed.
    pub preview: String,
}

impl ContextRow {
    /// Whether the row is a tool output (a `tool` message): what the
    /// list's tool filter keeps.
    #[must_use]
    pub fn is_tool_output(&self) -> bool {
        self.role == Role::Tool
    }
}
