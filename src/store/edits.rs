//! Edit and resend, and its undo, as compaction records without a summary
//! (kinds `edit` and `edit_undo`).
//!
//! An edit archives the edited user message and every active message after
//! it behind one `edit` record; the edited text is then appended by the
//! caller as a new message. Undoing the latest edit archives the messages
//! appended since behind an `edit_undo` record, makes the edit's originals
//! active again and stamps the edit's `undone_at`, so the active history is
//! the one before the edit, row for row. Nothing is deleted and the prompt
//! does not change. Each runs in one transaction and checks that the
//! session did not change under it (another strata appending a message).

use super::compaction::latest_undoable;
use super::records::insert_compaction;
use super::{Store, StoreError, now_ms};
use crate::domain::{Compaction, CompactionId, CompactionKind, MessageId};
use rusqlite::{OptionalExtension, params};

/// What [`Store::apply_edit`] and [`Store::undo_edit`] write.
#[derive(Clone, Copy, Debug)]
pub struct EditWrite<'a> {
    /// The record (kind `edit` or `edit_undo`); its `first_message_id`
    /// names the first archived message.
    pub record: &'a Compaction,
    /// Active messages to archive behind it, in order: for an edit the
    /// edited message and everything after it; for an undo the messages
    /// appended after the edit.
    pub archived: &'a [MessageId],
}

impl Store {
    /// Applies an edit in one transaction: the record, and `archived` (the
    /// edited message and every active message after it) pointing at it.
    ///
    /// # Errors
    /// [`StoreError::SessionChanged`] when a listed message is no longer
    /// active or an active message at or after the edited one is not listed
    /// (nothing is stored); [`StoreError::Busy`]; [`StoreError::Sqlite`].
    pub fn apply_edit(&mut self, write: &EditWrite<'_>) -> Result<(), StoreError> {
        let c = write.record;
        let Some(&first) = write.archived.first() else {
            return Err(StoreError::SessionChanged);
        };
        let tx = self.conn.transaction()?;
        let from = seq_of(&tx, first)?.ok_or(StoreError::SessionChanged)?;
        insert_compaction(&tx, c)?;
        archive(&tx, c, write.archived)?;
        if active_from(&tx, c, from)? != 0 {
            return Err(StoreError::SessionChanged);
        }
        touch(&tx, c)?;
        tx.commit()?;
        Ok(())
    }

    /// Undoes the edit `edit` in one transaction: `write.record` (kind
    /// `edit_undo`) stored, `write.archived` (every active message after
    /// the edited one) pointing at it, the edit's originals active again,
    /// the edit's `undone_at` stamped.
    ///
    /// # Errors
    /// [`StoreError::NothingToUndoEdit`] when `edit` is not the session's
    /// latest edit left to undo; [`StoreError::CompressedAfterEdit`] when a
    /// compression not undone came after it; [`StoreError::SessionChanged`]
    /// when the messages after the edited one are not exactly `archived`;
    /// [`StoreError::Busy`]; [`StoreError::Sqlite`]. Nothing changes on error.
    pub fn undo_edit(&mut self, edit: CompactionId, write: &EditWrite<'_>) -> Result<(), StoreError> {
        let c = write.record;
        let session = c.session_id;
        let tx = self.conn.transaction()?;
        match latest_undoable(&tx, session)? {
            Some((id, CompactionKind::Edit)) if id == edit.to_string() => {}
            Some((_, CompactionKind::Summary)) => {
                return Err(StoreError::CompressedAfterEdit {
                    id: session.to_string(),
                });
            }
            _ => {
                return Err(StoreError::NothingToUndoEdit {
                    id: session.to_string(),
                });
            }
        }
        let first: Option<String> = tx
            .prepare_cached("SELECT first_message_id FROM compactions WHERE id = ?1")?
            .query_row([edit.to_string()], |r| r.get(0))?;
        let first: Option<MessageId> = first.and_then(|f| f.parse().ok());
        let from = match first {
            Some(id) => seq_of(&tx, id)?,
            None => None,
        }
        .ok_or(StoreError::Decode {
            what: format!("edit record '{edit}' without its first message"),
        })?;
        insert_compaction(&tx, c)?;
        archive(&tx, c, write.archived)?;
        if active_from(&tx, c, from)? != 0 {
            return Err(StoreError::SessionChanged);
        }
        let now = now_ms();
        tx.prepare_cached("UPDATE messages SET archived_by = NULL WHERE archived_by = ?1")?
            .execute([edit.to_string()])?;
        tx.prepare_cached("UPDATE compactions SET undone_at = ?2 WHERE id = ?1")?
            .execute(params![edit.to_string(), now])?;
        touch(&tx, c)?;
        tx.commit()?;
        Ok(())
    }
}

/// The `seq` of a message, `None` when there is no such message.
fn seq_of(conn: &rusqlite::Connection, message: MessageId) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT seq FROM messages WHERE id = ?1")?
        .query_row([message.to_string()], |r| r.get(0))
        .optional()?)
}

/// Marks each of `messages` archived by `c`; every one must be an active
/// message of its session.
fn archive(conn: &rusqlite::Connection, c: &Compaction, messages: &[MessageId]) -> Result<(), StoreError> {
    let mut archive = conn.prepare_cached(
        "UPDATE messages SET archived_by = ?1
          WHERE id = ?2 AND session_id = ?3 AND archived_by IS NULL",
    )?;
    for m in messages {
        if archive.execute(params![c.id.to_string(), m.to_string(), c.session_id.to_string()])? != 1 {
            return Err(StoreError::SessionChanged);
        }
    }
    Ok(())
}

/// Active messages of `c`'s session at or after `seq`.
fn active_from(conn: &rusqlite::Connection, c: &Compaction, seq: i64) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM messages
              WHERE session_id = ?1 AND archived_by IS NULL AND seq >= ?2",
        )?
        .query_row(params![c.session_id.to_string(), seq], |r| r.get(0))?)
}

fn touch(conn: &rusqlite::Connection, c: &Compaction) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE sessions SET updated_at = max(updated_at, ?2) WHERE id = ?1")?
        .execute(params![c.session_id.to_string(), now_ms()])?;
    Ok(())
}
