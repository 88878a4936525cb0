//! Compactions applied and undone: the one transaction of DESIGN §7
//! "Persistence", and its exact inverse.
//!
//! Invariants: nothing the user wrote is deleted. Applying a compaction marks
//! the replaced originals `archived_by` it and inserts its summary and
//! rewritten copies with `created_by` set to it, in the originals' places;
//! undoing it deletes exactly the rows it created, un-archives exactly the
//! rows it archived and restores the prompt version that was current before.
//! Either runs in one `BEGIN IMMEDIATE` transaction, so a crash leaves the
//! old or the new state, never a half-archived range.

use super::messages::insert;
use super::prompts::{insert_prompt, next_prompt_version};
use super::records::insert_compaction;
use super::{Store, StoreError, now_ms};
use crate::domain::{Compaction, CompactionId, CompactionKind, Message, MessageId, SessionId, SystemPrompt};
use rusqlite::{OptionalExtension, params};

/// What [`Store::apply_compaction`] writes.
#[derive(Clone, Copy, Debug)]
pub struct CompactionWrite<'a> {
    /// The compaction row (its `prompt_after_id` names `prompt`, if given).
    pub compaction: &'a Compaction,
    /// Active originals to archive; every one must still be active.
    pub archived: &'a [MessageId],
    /// The summary and the rewritten copies, each with the `seq` of the
    /// place it takes.
    pub inserted: &'a [Message],
    /// The rebuilt system prompt, stored as the next version (the store
    /// numbers it) and made current.
    pub prompt: Option<&'a SystemPrompt>,
}

impl Store {
    /// Applies a compaction in one transaction: the compaction row, the
    /// originals marked `archived_by`, the summary and copies inserted, the
    /// new prompt version made current.
    ///
    /// # Errors
    /// [`StoreError::SessionChanged`] when an original is no longer active
    /// (another process changed the session; nothing is stored);
    /// [`StoreError::Busy`]; [`StoreError::Sqlite`].
    pub fn apply_compaction(&mut self, write: &CompactionWrite<'_>) -> Result<(), StoreError> {
        let c = write.compaction;
        let session = c.session_id.to_string();
        let tx = self.conn.transaction()?;
        insert_compaction(&tx, c)?;
        {
            let mut archive = tx.prepare_cached(
                "UPDATE messages SET archived_by = ?1
                  WHERE id = ?2 AND session_id = ?3 AND archived_by IS NULL",
            )?;
            for m in write.archived {
                if archive.execute(params![c.id.to_string(), m.to_string(), session])? != 1 {
                    return Err(StoreError::SessionChanged);
                }
            }
            let mut mark = tx.prepare_cached("UPDATE messages SET created_by = ?1 WHERE id = ?2")?;
            for m in write.inserted {
                insert(&tx, c.session_id, m.seq, m)?;
                mark.execute(params![c.id.to_string(), m.id.to_string()])?;
            }
        }
        if let Some(prompt) = write.prompt {
            let prompt = SystemPrompt {
                version: next_prompt_version(&tx, c.session_id)?,
                ..prompt.clone()
            };
            insert_prompt(&tx, c.session_id, &prompt)?;
            tx.prepare_cached("UPDATE sessions SET current_prompt_id = ?2 WHERE id = ?1")?
                .execute(params![session, prompt.id.to_string()])?;
        }
        tx.prepare_cached("UPDATE sessions SET updated_at = max(updated_at, ?2) WHERE id = ?1")?
            .execute(params![session, now_ms()])?;
        tx.commit()?;
        Ok(())
    }

    /// Undoes the session's latest compaction that is not undone yet, in one
    /// transaction: deletes the rows it inserted, un-archives the rows it
    /// archived, makes its `prompt_before_id` current again and stamps
    /// `undone_at`. Messages appended after it stay. Returns the compaction.
    /// Only a compression (kind `summary`) is undone here; records of
    /// undone edits (`edit_undo`) are passed over.
    ///
    /// # Errors
    /// [`StoreError::NothingToUndo`]; [`StoreError::LatestIsEdit`] when the
    /// latest change is an edit and resend that is not undone (nothing
    /// changed); [`StoreError::Busy`]; [`StoreError::Sqlite`].
    pub fn undo_compaction(&mut self, session: SessionId) -> Result<Compaction, StoreError> {
        let tx = self.conn.transaction()?;
        let latest = latest_undoable(&tx, session)?;
        let id = match latest {
            None => {
                return Err(StoreError::NothingToUndo {
                    id: session.to_string(),
                });
            }
            Some((_, CompactionKind::Edit)) => {
                return Err(StoreError::LatestIsEdit {
                    id: session.to_string(),
                });
            }
            Some((id, _)) => id,
        };
        let now = now_ms();
        tx.prepare_cached("DELETE FROM messages WHERE created_by = ?1")?
            .execute([&id])?;
        tx.prepare_cached("UPDATE messages SET archived_by = NULL WHERE archived_by = ?1")?
            .execute([&id])?;
        tx.prepare_cached(
            "UPDATE sessions SET current_prompt_id = coalesce(
                    (SELECT prompt_before_id FROM compactions WHERE id = ?2), current_prompt_id),
                 updated_at = max(updated_at, ?3)
              WHERE id = ?1",
        )?
        .execute(params![session.to_string(), id, now])?;
        tx.prepare_cached("UPDATE compactions SET undone_at = ?2 WHERE id = ?1")?
            .execute(params![id, now])?;
        tx.commit()?;
        let undone: CompactionId = id.parse().map_err(|_| StoreError::Decode {
            what: format!("compaction id '{id}'"),
        })?;
        self.compactions(session)?
            .into_iter()
            .find(|c| c.id == undone)
            .ok_or(StoreError::NothingToUndo {
                id: session.to_string(),
            })
    }

    /// The automatic-compression state of a session (JSON owned by the
    /// compression engine), if one was stored.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn compression_state(&self, session: SessionId) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT state FROM compression_state WHERE session_id = ?1")?
            .query_row([session.to_string()], |r| r.get(0))
            .optional()?)
    }

    /// Stores the automatic-compression state of a session (replacing the
    /// previous one).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] for an unknown session.
    pub fn set_compression_state(&mut self, session: SessionId, state: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO compression_state (session_id, state, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_id) DO UPDATE SET state = excluded.state,
                                                        updated_at = excluded.updated_at",
            )?
            .execute(params![session.to_string(), state, now_ms()])?;
        Ok(())
    }
}

/// The id and kind of the session's latest record that is not undone and
/// can be undone: a compression or an edit (the record of an undone edit,
/// `edit_undo`, is not itself undone).
pub(super) fn latest_undoable(
    conn: &rusqlite::Connection,
    session: SessionId,
) -> Result<Option<(String, CompactionKind)>, StoreError> {
    let row: Option<(String, String)> = conn
        .prepare_cached(
            "SELECT id, kind FROM compactions
              WHERE session_id = ?1 AND undone_at IS NULL AND kind != 'edit_undo'
              ORDER BY created_at DESC, num DESC LIMIT 1",
        )?
        .query_row([session.to_string()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    row.map(|(id, kind)| {
        CompactionKind::parse(&kind)
            .map(|k| (id, k))
            .ok_or(StoreError::Decode {
                what: format!("compaction kind '{kind}'"),
            })
    })
    .transpose()
}
