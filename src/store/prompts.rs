//! Versioned system prompts: the exact bytes sent, the layer table and
//! fingerprint (as JSON), and which version a session currently uses.
//!
//! Invariant: a stored prompt is never changed; a new version is a new row
//! and `(session_id, version)` is unique.

use super::codec::{id, json, opt_uint, to_json};
use super::sessions::found;
use super::{Store, StoreError, now_ms};
use crate::domain::{SessionId, SystemPrompt};
use rusqlite::{Connection, OptionalExtension, Row, params};

const PROMPT_COLUMNS: &str = "p.id, p.session_id, p.version, p.text, p.layers, p.boundary_offset,
     p.sha256, p.fingerprint, p.created_at";

fn prompt_row(row: &Row<'_>) -> rusqlite::Result<SystemPrompt> {
    Ok(SystemPrompt {
        id: id(row, 0)?,
        session_id: id(row, 1)?,
        version: row.get(2)?,
        text: row.get(3)?,
        layers: json(row, 4)?,
        boundary_offset: opt_uint(row, 5)?.map(usize::try_from).transpose().map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(5, rusqlite::types::Type::Integer, e.into())
        })?,
        sha256: row.get(6)?,
        fingerprint: json(row, 7)?,
        created_at: row.get(8)?,
    })
}

/// Inserts `prompt` as a version of `session` (inside the caller's
/// transaction).
pub(crate) fn insert_prompt(
    conn: &Connection,
    session: SessionId,
    prompt: &SystemPrompt,
) -> Result<(), StoreError> {
    let boundary = prompt
        .boundary_offset
        .map(|b| {
            i64::try_from(b).map_err(|_| StoreError::OutOfRange {
                what: "boundary_offset",
            })
        })
        .transpose()?;
    conn.prepare_cached(
        "INSERT INTO system_prompts (id, session_id, version, text, layers, boundary_offset,
                                     sha256, fingerprint, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        prompt.id.to_string(),
        session.to_string(),
        prompt.version,
        prompt.text,
        to_json(&prompt.layers, "the layer table")?,
        boundary,
        prompt.sha256,
        to_json(&prompt.fingerprint, "the prompt fingerprint")?,
        prompt.created_at,
    ])?;
    Ok(())
}

/// One more than the highest prompt version of `session` (1 for none).
pub(crate) fn next_prompt_version(conn: &Connection, session: SessionId) -> Result<u32, StoreError> {
    let max: Option<u32> = conn
        .prepare_cached("SELECT max(version) FROM system_prompts WHERE session_id = ?1")?
        .query_row([session.to_string()], |r| r.get(0))?;
    Ok(max.unwrap_or(0) + 1)
}

impl Store {
    /// The prompt version the session currently uses, `None` when the
    /// session does not exist or has none.
    ///
    /// # Errors
    /// [`StoreError::Decode`] for an unreadable layer table or fingerprint;
    /// [`StoreError::Sqlite`].
    pub fn current_prompt(&self, session: SessionId) -> Result<Option<SystemPrompt>, StoreError> {
        let sql = format!(
            "SELECT {PROMPT_COLUMNS} FROM sessions s JOIN system_prompts p
                 ON p.id = s.current_prompt_id
              WHERE s.id = ?1"
        );
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([session.to_string()], prompt_row)
            .optional()?)
    }

    /// Every prompt version of the session, oldest (version 1) first.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn prompt_versions(&self, session: SessionId) -> Result<Vec<SystemPrompt>, StoreError> {
        let sql = format!(
            "SELECT {PROMPT_COLUMNS} FROM system_prompts p WHERE p.session_id = ?1
              ORDER BY p.version"
        );
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map([session.to_string()], prompt_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Stores a new version of `prompt.session_id`'s prompt, makes it the
    /// current one and bumps the session's `updated_at`, in one transaction.
    /// The store numbers it: `prompt.version` is set to one more than the
    /// highest stored version, read inside the write transaction, so two
    /// processes adding a version at once both succeed, one after the other.
    ///
    /// # Errors
    /// [`StoreError::SessionNotFound`]; [`StoreError::Busy`];
    /// [`StoreError::Sqlite`] when the id is already taken (nothing is
    /// stored).
    pub fn add_prompt_version(&mut self, prompt: &mut SystemPrompt) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        prompt.version = next_prompt_version(&tx, prompt.session_id)?;
        let n = tx
            .prepare_cached(
                "UPDATE sessions SET current_prompt_id = ?2, updated_at = max(updated_at, ?3)
                  WHERE id = ?1",
            )?
            .execute(params![
                prompt.session_id.to_string(),
                prompt.id.to_string(),
                now_ms()
            ])?;
        found(n, prompt.session_id)?;
        insert_prompt(&tx, prompt.session_id, prompt)?;
        tx.commit()?;
        Ok(())
    }
}
