//! Append-only records about a session: compactions and per-request usage.
//!
//! Archiving messages behind a compaction, and undoing it, live in
//! `compaction`; this file only stores and reads the records.

use super::codec::{compaction_kind, id, int, opt_id, opt_int, opt_uint, trigger, trigger_str, uint};
use super::{Store, StoreError};
use crate::domain::{Compaction, SessionId, Summarizer, Usage};
use rusqlite::{Row, params};

fn compaction_row(row: &Row<'_>) -> rusqlite::Result<Compaction> {
    Ok(Compaction {
        id: id(row, 0)?,
        session_id: id(row, 1)?,
        trigger: trigger(row, 2)?,
        topic: row.get(3)?,
        first_message_id: opt_id(row, 4)?,
        last_message_id: opt_id(row, 5)?,
        summary_message_id: opt_id(row, 6)?,
        summarizer: Summarizer::parse(&row.get::<_, String>(7)?),
        tokens_before: uint(row, 8)?,
        tokens_after: uint(row, 9)?,
        messages_before: uint(row, 10)?,
        messages_after: uint(row, 11)?,
        prompt_before_id: opt_id(row, 12)?,
        prompt_after_id: opt_id(row, 13)?,
        undone_at: row.get(14)?,
        created_at: row.get(15)?,
        kind: compaction_kind(row, 16)?,
        edited: row.get(17)?,
    })
}

fn usage_row(row: &Row<'_>) -> rusqlite::Result<Usage> {
    Ok(Usage {
        session_id: id(row, 0)?,
        message_id: opt_id(row, 1)?,
        model: row.get(2)?,
        prompt_tokens: opt_uint(row, 3)?,
        completion_tokens: opt_uint(row, 4)?,
        cache_read_tokens: opt_uint(row, 5)?,
        cache_write_tokens: opt_uint(row, 6)?,
        reasoning_tokens: opt_uint(row, 7)?,
        estimated_prompt_tokens: uint(row, 8)?,
        ttft_ms: opt_uint(row, 9)?,
        duration_ms: opt_uint(row, 10)?,
        created_at: row.get(11)?,
        tools_sha256: row.get(12)?,
        cache: row
            .get::<_, Option<String>>(13)?
            .and_then(|text| serde_json::from_str(&text).ok()),
    })
}

/// Inserts a compaction row on `conn` (inside the caller's transaction).
pub(crate) fn insert_compaction(conn: &rusqlite::Connection, c: &Compaction) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO compactions (id, session_id, trigger, topic, first_message_id,
             last_message_id, summary_message_id, summarizer, tokens_before, tokens_after,
             messages_before, messages_after, prompt_before_id, prompt_after_id,
             undone_at, created_at, kind, edited)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    )?
    .execute(params![
        c.id.to_string(),
        c.session_id.to_string(),
        trigger_str(c.trigger),
        c.topic,
        c.first_message_id.map(|m| m.to_string()),
        c.last_message_id.map(|m| m.to_string()),
        c.summary_message_id.map(|m| m.to_string()),
        c.summarizer.as_str(),
        int(c.tokens_before, "tokens_before")?,
        int(c.tokens_after, "tokens_after")?,
        int(c.messages_before, "messages_before")?,
        int(c.messages_after, "messages_after")?,
        c.prompt_before_id.map(|p| p.to_string()),
        c.prompt_after_id.map(|p| p.to_string()),
        c.undone_at,
        c.created_at,
        c.kind.as_str(),
        c.edited,
    ])?;
    Ok(())
}

impl Store {
    /// Stores a compaction record as given.
    ///
    /// # Errors
    /// [`StoreError::OutOfRange`] for a count above `i64::MAX`;
    /// [`StoreError::Sqlite`] for an unknown session or a taken id.
    pub fn insert_compaction(&mut self, c: &Compaction) -> Result<(), StoreError> {
        insert_compaction(&self.conn, c)
    }

    /// The session's compactions, oldest first.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn compactions(&self, session: SessionId) -> Result<Vec<Compaction>, StoreError> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT id, session_id, trigger, topic, first_message_id, last_message_id,
                        summary_message_id, summarizer, tokens_before, tokens_after,
                        messages_before, messages_after, prompt_before_id, prompt_after_id,
                        undone_at, created_at, kind, edited
                   FROM compactions WHERE session_id = ?1 ORDER BY created_at, num",
            )?
            .query_map([session.to_string()], compaction_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// Stores the usage of one provider request.
    ///
    /// # Errors
    /// [`StoreError::OutOfRange`]; [`StoreError::Sqlite`] for an unknown
    /// session or message.
    pub fn record_usage(&mut self, u: &Usage) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO usage (session_id, message_id, model, prompt_tokens,
                     completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
                     estimated_prompt_tokens, ttft_ms, duration_ms, created_at, tools_sha256, cache)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )?
            .execute(params![
                u.session_id.to_string(),
                u.message_id.map(|m| m.to_string()),
                u.model,
                opt_int(u.prompt_tokens, "prompt_tokens")?,
                opt_int(u.completion_tokens, "completion_tokens")?,
                opt_int(u.cache_read_tokens, "cache_read_tokens")?,
                opt_int(u.cache_write_tokens, "cache_write_tokens")?,
                opt_int(u.reasoning_tokens, "reasoning_tokens")?,
                int(u.estimated_prompt_tokens, "estimated_prompt_tokens")?,
                opt_int(u.ttft_ms, "ttft_ms")?,
                opt_int(u.duration_ms, "duration_ms")?,
                u.created_at,
                u.tools_sha256,
                u.cache.as_ref().and_then(|c| serde_json::to_string(c).ok()),
            ])?;
        Ok(())
    }

    /// The session's usage rows in the order they were recorded.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn usage(&self, session: SessionId) -> Result<Vec<Usage>, StoreError> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT session_id, message_id, model, prompt_tokens, completion_tokens,
                        cache_read_tokens, cache_write_tokens, reasoning_tokens,
                        estimated_prompt_tokens, ttft_ms, duration_ms, created_at, tools_sha256, cache
                   FROM usage WHERE session_id = ?1 ORDER BY num",
            )?
            .query_map([session.to_string()], usage_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}
