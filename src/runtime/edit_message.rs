//! Edit and resend (issue "context control", DESIGN §17): editing an
//! earlier user message archives it and everything after it behind an
//! `edit` record (nothing deleted, no summary, the prompt unchanged); the
//! caller then sends the edited text as the new last message. Undoing the
//! latest edit archives what was appended since behind an `edit_undo`
//! record and makes the originals active again, so the history is the one
//! before the edit, row for row.
//!
//! Who may call it: `strata chat --edit`, `strata undo-edit-message` and
//! the session service (the app's edit and resend).

use super::{Runtime, RuntimeError};
use crate::domain::{
    Compaction, CompactionId, CompactionKind, CompactionTrigger, MessageId, MessageKind, MessageStatus, Role,
    Session, Summarizer,
};
use crate::store::{EditWrite, StoreError};
use serde::Serialize;

/// What an edit archived, and the text to send next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EditOutcome {
    /// The `edit` record.
    pub edit_id: CompactionId,
    /// The edited user message (now archived).
    pub message_id: MessageId,
    /// Its position among the active messages before the edit, from 1.
    pub pos: usize,
    /// Messages archived: the edited one and everything after it.
    pub archived: usize,
    /// Active messages left (before the edited text is sent).
    pub messages: usize,
    /// The edited text, to send as the new last message.
    pub text: String,
}

/// What undoing an edit restored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EditUndoOutcome {
    /// The edit undone.
    pub edit_id: CompactionId,
    /// The `edit_undo` record that archives what came after the edit.
    pub undo_id: CompactionId,
    /// Messages appended after the edit, now archived.
    pub archived: usize,
    /// The edit's originals, active again.
    pub restored: usize,
    /// Active messages now.
    pub messages: usize,
}

impl Runtime {
    /// Archives the user message `message` of `session` and every active
    /// message after it behind an `edit` record; the caller then sends
    /// `text` as the new last message (the record stores no text).
    ///
    /// # Errors
    /// [`RuntimeError::Edit`] when `text` is blank, the message is not an
    /// active message of the session, is not a message the user wrote, or
    /// a reply is still being written; [`RuntimeError::Store`]
    /// (`SessionChanged` when another strata wrote to the session meanwhile).
    pub fn edit_message(
        &mut self,
        session: &Session,
        message: MessageId,
        text: &str,
    ) -> Result<EditOutcome, RuntimeError> {
        if text.trim().is_empty() {
            return Err(RuntimeError::Edit(
                "The edited message is empty; give the new text to send in its place.".to_owned(),
            ));
        }
        let active = self.store.messages(session.id, false)?;
        let Some(at) = active.iter().position(|m| m.id == message) else {
            return Err(RuntimeError::Edit(
                "That message is not an active message of the session (it may be archived by a compression); choose one that `strata show` lists.".to_owned(),
            ));
        };
        let edited = &active[at];
        if edited.role != Role::User || edited.kind != MessageKind::Normal {
            return Err(RuntimeError::Edit(format!(
                "Message {} is not a message you wrote (it is {}); only your own messages can be edited and resent.",
                at + 1,
                described(edited.role, edited.kind)
            )));
        }
        if active.iter().any(|m| m.status == MessageStatus::Streaming) {
            return Err(RuntimeError::Edit(
                "A reply is still being written; wait for it to finish (or cancel it) before editing a message."
                    .to_owned(),
            ));
        }
        let archived: Vec<MessageId> = active[at..].iter().map(|m| m.id).collect();
        let record = record(session, CompactionKind::Edit, &archived, active.len(), at);
        self.store.apply_edit(&EditWrite {
            record: &record,
            archived: &archived,
        })?;
        Ok(EditOutcome {
            edit_id: record.id,
            message_id: message,
            pos: at + 1,
            archived: archived.len(),
            messages: at,
            text: text.to_owned(),
        })
    }

    /// Undoes the latest edit of `session` that is not undone: the
    /// messages appended after it are archived behind an `edit_undo`
    /// record, the edit's originals are active again and its `undone_at` is
    /// set. The history is then the one before the edit, row for row.
    ///
    /// # Errors
    /// [`RuntimeError::Store`]: `NothingToUndoEdit`, `CompressedAfterEdit`
    /// (undo that compression first), `SessionChanged`.
    pub fn undo_edit_message(&mut self, session: &Session) -> Result<EditUndoOutcome, RuntimeError> {
        let nothing = || {
            RuntimeError::Store(StoreError::NothingToUndoEdit {
                id: session.id.to_string(),
            })
        };
        let edit = self
            .store
            .compactions(session.id)?
            .into_iter()
            .rev()
            .find(|c| c.kind == CompactionKind::Edit && c.undone_at.is_none())
            .ok_or_else(nothing)?;
        let first = edit.first_message_id.ok_or_else(nothing)?;
        let from = self.store.message(first)?.ok_or_else(nothing)?.seq;
        let active = self.store.messages(session.id, false)?;
        let after: Vec<MessageId> = active.iter().filter(|m| m.seq >= from).map(|m| m.id).collect();
        let kept = active.len() - after.len();
        let restored = usize::try_from(edit.messages_before.saturating_sub(edit.messages_after)).unwrap_or(0);
        let mut record = record(session, CompactionKind::EditUndo, &after, active.len(), kept);
        record.messages_after = (kept + restored) as u64;
        self.store.undo_edit(
            edit.id,
            &EditWrite {
                record: &record,
                archived: &after,
            },
        )?;
        Ok(EditUndoOutcome {
            edit_id: edit.id,
            undo_id: record.id,
            archived: after.len(),
            restored,
            messages: self.store.messages(session.id, false)?.len(),
        })
    }
}

/// The record of an edit or its undo: `archived` (in order) behind it,
/// `before` active messages before and `after` after; no summary, no
/// prompt change, no summariser (stored as an empty name), and no token
/// figures (0: nothing is summarised, so nothing is estimated).
fn record(
    session: &Session,
    kind: CompactionKind,
    archived: &[MessageId],
    before: usize,
    after: usize,
) -> Compaction {
    Compaction {
        id: CompactionId::new(),
        session_id: session.id,
        trigger: CompactionTrigger::Manual,
        topic: None,
        first_message_id: archived.first().copied(),
        last_message_id: archived.last().copied(),
        summary_message_id: None,
        summarizer: Summarizer::Model(String::new()),
        tokens_before: 0,
        tokens_after: 0,
        messages_before: before as u64,
        messages_after: after as u64,
        prompt_before_id: None,
        prompt_after_id: None,
        undone_at: None,
        created_at: super::now_ms(),
        kind,
        edited: false,
    }
}

/// `a summary`, `a tool result`, `an assistant reply`, ... for the refusal.
fn described(role: Role, kind: MessageKind) -> &'static str {
    match (role, kind) {
        (_, MessageKind::Summary) => "a summary of earlier messages",
        (_, MessageKind::Synthetic) => "a message strata added",
        (Role::Assistant, _) => "a reply of the model",
        (Role::Tool, _) => "a tool result",
        (Role::System, _) => "a system message",
        (Role::User, MessageKind::Normal) => "a user message",
    }
}
