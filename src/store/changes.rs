//! Tool records of a session: the file changes made by `write_file` and
//! `edit_file` (the previous bytes of each changed file, newest last, so the
//! latest change can be undone with `/undo-edit` or `strata undo-edit`), and
//! the session's tool settings that outlive a process.

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

/// A session's tool settings that outlive a process: the tools switched
/// off (`/tools off NAME`) and why the server refused tools, if it did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionTools {
    /// Names of the tools switched off, sorted.
    pub disabled: Vec<String>,
    /// The server's sentence when it refused requests with tools.
    pub refused: Option<String>,
}

impl Store {
    /// The session's tool settings (defaults when none were stored).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`]; bad JSON in the row is read as no tools off.
    pub fn session_tools(&self, session: SessionId) -> Result<SessionTools, StoreError> {
        let row: Option<(String, Option<String>)> = self
            .conn
            .prepare_cached("SELECT disabled, refused FROM session_tools WHERE session_id = ?1")?
            .query_row([session.to_string()], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(
            row.map_or_else(SessionTools::default, |(disabled, refused)| SessionTools {
                disabled: serde_json::from_str(&disabled).unwrap_or_default(),
                refused,
            }),
        )
    }

    /// Stores the session's tool settings.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn set_session_tools(&mut self, session: SessionId, tools: &SessionTools) -> Result<(), StoreError> {
        let disabled = super::codec::to_json(&tools.disabled, "disabled")?;
        self.conn
            .prepare_cached(
                "INSERT INTO session_tools (session_id, disabled, refused) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_id) DO UPDATE SET disabled = excluded.disabled, refused = excluded.refused",
            )?
            .execute(params![session.to_string(), disabled, tools.refused])?;
        Ok(())
    }
}
