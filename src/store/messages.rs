//! Message rows: appending (the store assigns `seq`), streaming updates,
//! cached token counts and reading a session's history in order.
//!
//! Invariants: within a session the active messages' `seq` runs 1, 2, 3, ...
//! without duplicates, even with several processes appending, because the
//! next `seq` is read and written inside one `BEGIN IMMEDIATE` transaction.
//! An archived original shares its `seq` with the summary or copy that took
//! its place (see `compaction`); reads order by `seq`, then insertion. Every append
//! bumps the session's `updated_at`.

use super::codec::{id, kind, kind_str, opt_id, role, status, status_str, to_json};
use super::sessions::touch;
use super::{Store, StoreError};
use crate::domain::{Message, MessageId, MessageStatus, SessionId, TokenCount, ToolCall};
use rusqlite::{Connection, OptionalExtension, Row, params};

const MESSAGE_COLUMNS: &str = "id, session_id, seq, role, content, tool_calls, tool_call_id, pinned,
     ephemeral_ttl, kind, archived_by, status, created_at, tokens, tokenizer, tool_meta, excluded,
     interruption, error";

fn message_row(row: &Row<'_>) -> rusqlite::Result<Message> {
    let tool_calls: Option<String> = row.get(5)?;
    let tool_calls: Vec<ToolCall> = match tool_calls {
        None => Vec::new(),
        Some(text) => serde_json::from_str(&text).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(
                5,
                rusqlite::types::Type::Text,
                format!("bad tool_calls JSON: {e}").into(),
            )
        })?,
    };
    let tokens: Option<u32> = row.get(13)?;
    let tokenizer: Option<String> = row.get(14)?;
    let tool_meta: Option<String> = row.get(15)?;
    let tool = match tool_meta {
        None => None,
        Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(
                15,
                rusqlite::types::Type::Text,
                format!("bad tool_meta JSON: {e}").into(),
            )
        })?),
    };
    Ok(Message {
        id: id(row, 0)?,
        session_id: id(row, 1)?,
        seq: row.get(2)?,
        role: role(row, 3)?,
        content: row.get(4)?,
        tool_calls,
        tool_call_id: row.get(6)?,
        pinned: row.get(7)?,
        excluded: row.get(16)?,
        interruption: match row.get::<_, Option<String>>(17)? {
            None => None,
            Some(text) => Some(crate::domain::Interruption::parse(&text).ok_or_else(|| {
                rusqlite::Error::FromSqlConversionFailure(
                    17,
                    rusqlite::types::Type::Text,
                    format!("bad interruption '{text}'").into(),
                )
            })?),
        },
        error: row.get(18)?,
        ephemeral_ttl: row.get(8)?,
        kind: kind(row, 9)?,
        archived_by: opt_id(row, 10)?,
        status: status(row, 11)?,
        created_at: row.get(12)?,
        tokens: tokens
            .zip(tokenizer)
            .map(|(tokens, tokenizer)| TokenCount { tokenizer, tokens }),
        tool,
    })
}

/// The `seq` the next message of `session` gets.
fn next_seq(conn: &Connection, session: SessionId) -> Result<i64, StoreError> {
    let last: i64 = conn
        .prepare_cached("SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?1")?
        .query_row([session.to_string()], |r| r.get(0))?;
    Ok(last + 1)
}

/// Inserts `message` as `session`'s message number `seq`.
pub(crate) fn insert(conn: &Connection, session: SessionId, seq: i64, m: &Message) -> Result<(), StoreError> {
    let tool_calls = if m.tool_calls.is_empty() {
        None
    } else {
        Some(to_json(&m.tool_calls, "tool_calls")?)
    };
    let tool_meta = m.tool.as_ref().map(|t| to_json(t, "tool_meta")).transpose()?;
    conn.prepare_cached(
        "INSERT INTO messages (id, session_id, seq, role, content, tool_calls, tool_call_id,
                               pinned, ephemeral_ttl, kind, archived_by, status, created_at,
                               tokens, tokenizer, writer_pid, tool_meta, excluded, interruption, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
    )?
    .execute(params![
        m.id.to_string(),
        session.to_string(),
        seq,
        m.role.as_str(),
        m.content,
        tool_calls,
        m.tool_call_id,
        m.pinned,
        m.ephemeral_ttl,
        kind_str(m.kind),
        m.archived_by.map(|c| c.to_string()),
        status_str(m.status),
        m.created_at,
        m.tokens.as_ref().map(|t| t.tokens),
        m.tokens.as_ref().map(|t| t.tokenizer.as_str()),
        (m.status == MessageStatus::Streaming).then(std::process::id),
        tool_meta,
        m.excluded,
        m.interruption.map(crate::domain::Interruption::as_str),
        m.error,
    ])?;
    Ok(())
}

fn session_missing(session: SessionId) -> StoreError {
    StoreError::SessionNotFound {
        id: session.to_string(),
    }
}

impl Store {
    /// Appends `message` to `message.session_id` as its last message: sets
    /// `message.seq` to the previous maximum + 1 and bumps the session's
    /// `updated_at`, in one `BEGIN IMMEDIATE` transaction. All other fields
    /// are stored as given.
    ///
    /// # Errors
    /// [`StoreError::SessionNotFound`]; [`StoreError::Busy`] when another
    /// process holds the write lock past the busy timeout (retryable);
    /// [`StoreError::Sqlite`] when the id is taken. On error nothing is
    /// stored and `message.seq` is unchanged.
    pub fn append_message(&mut self, message: &mut Message) -> Result<(), StoreError> {
        let session = message.session_id;
        let tx = self.conn.transaction()?;
        if !touch(&tx, session)? {
            return Err(session_missing(session));
        }
        let seq = next_seq(&tx, session)?;
        insert(&tx, session, seq, message)?;
        tx.commit()?;
        message.seq = seq;
        Ok(())
    }

    /// Appends `messages` to `session` in order, in one transaction (the
    /// import path: 10,000 messages take one commit). Sets each message's
    /// `session_id` to `session` and its `seq`; bumps `updated_at` once.
    ///
    /// # Errors
    /// As [`Store::append_message`]; on error nothing is stored and the
    /// messages are unchanged.
    pub fn append_messages(
        &mut self,
        session: SessionId,
        messages: &mut [Message],
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        if !touch(&tx, session)? {
            return Err(session_missing(session));
        }
        let first = next_seq(&tx, session)?;
        for (seq, m) in (first..).zip(messages.iter()) {
            insert(&tx, session, seq, m)?;
        }
        tx.commit()?;
        for (m, seq) in messages.iter_mut().zip(first..) {
            m.session_id = session;
            m.seq = seq;
        }
        Ok(())
    }

    /// Records why an interrupted reply stopped (`None` clears it).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn set_interruption(
        &mut self,
        message: MessageId,
        interruption: Option<crate::domain::Interruption>,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE messages SET interruption = ?2 WHERE id = ?1")?
            .execute(params![
                message.to_string(),
                interruption.map(crate::domain::Interruption::as_str)
            ])?;
        Ok(())
    }

    /// Records what a failed reply failed with, one sentence (`None`
    /// clears it).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn set_message_error(&mut self, message: MessageId, error: Option<&str>) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE messages SET error = ?2 WHERE id = ?1")?
            .execute(params![message.to_string(), error])?;
        Ok(())
    }

    /// Replaces a message's content, tool calls and status (a streaming
    /// reply as it grows, then its final state); forgets its cached token
    /// count (the content changed), keeps the search index in step and bumps
    /// the session's `updated_at`. A final status releases the writer mark.
    ///
    /// # Errors
    /// [`StoreError::MessageNotFound`]; [`StoreError::Busy`];
    /// [`StoreError::Sqlite`].
    pub fn update_message(
        &mut self,
        message: MessageId,
        content: &str,
        tool_calls: &[ToolCall],
        status: MessageStatus,
    ) -> Result<(), StoreError> {
        let tool_calls = if tool_calls.is_empty() {
            None
        } else {
            Some(to_json(&tool_calls, "tool_calls")?)
        };
        let writer = (status == MessageStatus::Streaming).then(std::process::id);
        let tx = self.conn.transaction()?;
        let session: Option<String> = tx
            .prepare_cached(
                "UPDATE messages SET content = ?2, status = ?3, tool_calls = ?4, writer_pid = ?5,
                                     tokens = NULL, tokenizer = NULL
                 WHERE id = ?1 RETURNING session_id",
            )?
            .query_row(
                params![
                    message.to_string(),
                    content,
                    status_str(status),
                    tool_calls,
                    writer
                ],
                |r| r.get(0),
            )
            .optional()?;
        let Some(session) = session else {
            return Err(StoreError::MessageNotFound {
                id: message.to_string(),
            });
        };
        tx.prepare_cached("UPDATE sessions SET updated_at = max(updated_at, ?2) WHERE id = ?1")?
            .execute(params![session, super::now_ms()])?;
        tx.commit()?;
        Ok(())
    }

    /// Stores cached token counts (with the tokenizer that produced them),
    /// all in one transaction; the session's `tokens` counter follows.
    ///
    /// # Errors
    /// [`StoreError::MessageNotFound`] for an unknown id (nothing is
    /// stored); [`StoreError::Sqlite`].
    pub fn set_message_tokens(&mut self, counts: &[(MessageId, TokenCount)]) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt =
                tx.prepare_cached("UPDATE messages SET tokens = ?2, tokenizer = ?3 WHERE id = ?1")?;
            for (message, count) in counts {
                let n = stmt.execute(params![message.to_string(), count.tokens, count.tokenizer])?;
                if n == 0 {
                    return Err(StoreError::MessageNotFound {
                        id: message.to_string(),
                    });
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks `interrupted` every reply left `streaming` by a process that
    /// is gone (`is_alive(pid)` false, or no writer recorded), so a crash or
    /// kill never leaves a reply looking live; replies still being written
    /// by a running process are left alone. Returns how many were marked.
    /// Call once at start-up.
    ///
    /// # Errors
    /// [`StoreError::Busy`]; [`StoreError::Sqlite`].
    pub fn recover_interrupted(&mut self, is_alive: impl Fn(u32) -> bool) -> Result<usize, StoreError> {
        let tx = self.conn.transaction()?;
        let stale: Vec<String> = {
            let mut stmt =
                tx.prepare_cached("SELECT id, writer_pid FROM messages WHERE status = 'streaming'")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<u32>>(1)?)))?;
            let mut stale = Vec::new();
            for row in rows {
                let (id, pid) = row?;
                if !pid.is_some_and(&is_alive) {
                    stale.push(id);
                }
            }
            stale
        };
        {
            let mut stmt = tx.prepare_cached(
                "UPDATE messages SET status = 'interrupted', writer_pid = NULL WHERE id = ?1",
            )?;
            for id in &stale {
                stmt.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(stale.len())
    }

    /// One message by id.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn message(&self, message: MessageId) -> Result<Option<Message>, StoreError> {
        let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?1");
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([message.to_string()], message_row)
            .optional()?)
    }

    /// The session's messages in `seq` order; archived ones only when
    /// `include_archived`.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn messages(&self, session: SessionId, include_archived: bool) -> Result<Vec<Message>, StoreError> {
        let filter = if include_archived {
            ""
        } else {
            "AND archived_by IS NULL"
        };
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 {filter} ORDER BY seq, num"
        );
        let rows = self
            .conn
            .prepare_cached(&sql)?
            .query_map([session.to_string()], message_row)?
            .collect::<Result<Vec<_>, _>>()?;
        self.rows_read
            .fetch_add(rows.len() as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(rows)
    }

    /// How many message rows [`Store::messages`] returned on this
    /// connection so far: what the session service's "read each row once"
    /// rule is checked with.
    #[must_use]
    pub fn message_rows_read(&self) -> u64 {
        self.rows_read.load(std::sync::atomic::Ordering::Relaxed)
    }
}
