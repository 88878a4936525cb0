//! File changes made by `write_file` and `edit_file`: the previous bytes of
//! each changed file, newest last, so the latest change of a session can be
//! undone (`/undo-edit`, `strata undo-edit`).

use super::{Store, StoreError};
use crate::domain::SessionId;
use rusqlite::{OptionalExtension, params};

/// One stored file change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredChange {
    /// Row number (the change's id within the store).
    pub num: i64,
    /// The session whose tool call made it.
    pub session_id: SessionId,
    /// The call that made it.
    pub tool_call_id: String,
    /// The file, as an absolute path.
    pub path: String,
    /// The file's bytes before the change; `None` when the call created it.
    pub before: Option<Vec<u8>>,
    /// SHA-256 (hex) of the file's bytes after the change.
    pub after_sha256: String,
    /// When the change was made, unix milliseconds.
    pub created_at: i64,
}

impl Store {
    /// Records a change made by `tool_call_id` in `session`.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn record_change(&mut self, change: &StoredChange) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO file_changes (session_id, tool_call_id, path, before, after_sha256, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                change.session_id.to_string(),
                change.tool_call_id,
                change.path,
                change.before,
                change.after_sha256,
                change.created_at,
            ])?;
        Ok(())
    }

    /// The session's latest change not undone yet.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn last_change(&self, session: SessionId) -> Result<Option<StoredChange>, StoreError> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT num, tool_call_id, path, before, after_sha256, created_at FROM file_changes
                 WHERE session_id = ?1 AND undone_at IS NULL ORDER BY num DESC LIMIT 1",
            )?
            .query_row([session.to_string()], |r| {
                Ok(StoredChange {
                    num: r.get(0)?,
                    session_id: session,
                    tool_call_id: r.get(1)?,
                    path: r.get(2)?,
                    before: r.get(3)?,
                    after_sha256: r.get(4)?,
                    created_at: r.get(5)?,
                })
            })
            .optional()?;
        Ok(row)
    }

    /// Marks change `num` undone at `now_ms`.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn mark_change_undone(&mut self, num: i64, now_ms: i64) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE file_changes SET undone_at = ?2 WHERE num = ?1")?
            .execute(params![num, now_ms])?;
        Ok(())
    }
}
