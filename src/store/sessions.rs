//! Session rows: creating a session with its first prompt, looking sessions
//! up by id, short id or prefix, listing and searching them, and the small updates
//! (`/model`, `/rename`) that bump `updated_at`.

use super::codec::{id, opt_id, provider, uint};
use super::error::{AMBIGUOUS_CANDIDATES, Candidate};
use super::search::{Term, fts_terms};
use super::{Store, StoreError, now_ms};
use crate::domain::{ProviderKind, SHORT_ID_LEN, Session, SessionId, SessionSummary, SystemPrompt};
use rusqlite::{Connection, OptionalExtension, Row, params};

/// The shortest id prefix [`Store::find_session`] accepts.
pub const MIN_ID_PREFIX: usize = 4;

/// What [`Store::list_sessions`] returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionQuery {
    /// Only sessions in which every term is found, in the title or in any
    /// message (archived ones included; the terms may be in different
    /// messages), each term matched as a word prefix. Quotes and FTS5
    /// operators are taken literally. Blank text means no filter.
    pub search: Option<String>,
    /// Only sessions of this workspace root (exact path).
    pub workspace: Option<String>,
    /// At most this many rows.
    pub limit: Option<usize>,
}

const SESSION_COLUMNS: &str =
    "id, title, workspace, model, provider, current_prompt_id, parent_id, created_at, updated_at";

fn session_row(row: &Row<'_>) -> rusqlite::Result<Session> {
    Ok(Session {
        id: id(row, 0)?,
        title: row.get(1)?,
        workspace: row.get(2)?,
        model: row.get(3)?,
        provider: provider(row, 4)?,
        current_prompt_id: opt_id(row, 5)?,
        parent_id: opt_id(row, 6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    })
}

fn summary_row(row: &Row<'_>) -> rusqlite::Result<SessionSummary> {
    Ok(SessionSummary {
        id: id(row, 0)?,
        title: row.get(1)?,
        workspace: row.get(2)?,
        model: row.get(3)?,
        provider: provider(row, 4)?,
        messages: uint(row, 5)?,
        tokens: uint(row, 6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    })
}

/// Sets `updated_at` to now, never moving it backwards. Returns false when
/// the session does not exist.
pub(crate) fn touch(conn: &Connection, session: SessionId) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached("UPDATE sessions SET updated_at = max(updated_at, ?2) WHERE id = ?1")?
        .execute(params![session.to_string(), now_ms()])?;
    Ok(n == 1)
}

impl Store {
    /// Stores a new session and its first system prompt in one transaction,
    /// and makes that prompt the session's current one (the stored
    /// `current_prompt_id` is `prompt.id`, whatever `session` says). The
    /// prompt is stored under `session.id`.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] when the id is taken or the prompt is invalid
    /// (nothing is stored); [`StoreError::Busy`].
    pub fn create_session(&mut self, session: &Session, prompt: &SystemPrompt) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.prepare_cached(
            "INSERT INTO sessions (id, title, workspace, model, provider, current_prompt_id,
                                   parent_id, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            session.id.to_string(),
            session.title,
            session.workspace,
            session.model,
            session.provider.as_str(),
            prompt.id.to_string(),
            session.parent_id.map(|p| p.to_string()),
            session.created_at,
            session.updated_at,
        ])?;
        super::prompts::insert_prompt(&tx, session.id, prompt)?;
        tx.commit()?;
        Ok(())
    }

    /// The session with this id, if stored.
    ///
    /// # Errors
    /// [`StoreError::Decode`] for an unreadable row; [`StoreError::Sqlite`].
    pub fn session(&self, session: SessionId) -> Result<Option<Session>, StoreError> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1");
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([session.to_string()], session_row)
            .optional()?)
    }

    /// The session named by a full id, by its short id
    /// ([`SessionId::short`]), or by an unambiguous prefix of at least
    /// [`MIN_ID_PREFIX`] characters of either (case-insensitive,
    /// surrounding whitespace ignored).
    ///
    /// # Errors
    /// [`StoreError::SessionNotFound`], [`StoreError::IdTooShort`],
    /// [`StoreError::AmbiguousSession`] (naming the most recently updated
    /// candidates); [`StoreError::Sqlite`].
    pub fn find_session(&self, id_or_prefix: &str) -> Result<Session, StoreError> {
        let wanted = id_or_prefix.trim().to_ascii_lowercase();
        let not_found = || StoreError::SessionNotFound {
            id: id_or_prefix.trim().to_owned(),
        };
        if let Ok(full) = wanted.parse::<SessionId>() {
            return self.session(full)?.ok_or_else(not_found);
        }
        if wanted.chars().count() < MIN_ID_PREFIX {
            return Err(StoreError::IdTooShort {
                id: id_or_prefix.trim().to_owned(),
                min: MIN_ID_PREFIX,
            });
        }
        // Stored ids are lower-case hex and hyphens; anything else (including
        // GLOB wildcards) cannot match.
        if !wanted.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(not_found());
        }
        // The short id is the id's last SHORT_ID_LEN characters.
        let matches = format!("id GLOB ?1 || '*' OR substr(id, -{SHORT_ID_LEN}) GLOB ?1 || '*'");
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE {matches}
              ORDER BY updated_at DESC, id DESC LIMIT {AMBIGUOUS_CANDIDATES}"
        );
        let found = self
            .conn
            .prepare_cached(&sql)?
            .query_map([&wanted], session_row)?
            .collect::<Result<Vec<_>, _>>()?;
        match <[Session; 1]>::try_from(found) {
            Ok([one]) => Ok(one),
            Err(found) if found.is_empty() => Err(not_found()),
            Err(found) => {
                let count = self.conn.query_row(
                    &format!("SELECT count(*) FROM sessions WHERE {matches}"),
                    [&wanted],
                    |r| uint(r, 0),
                )?;
                Err(StoreError::AmbiguousSession {
                    id: id_or_prefix.trim().to_owned(),
                    count,
                    candidates: found
                        .into_iter()
                        .map(|s| Candidate {
                            id: s.id,
                            title: s.title,
                        })
                        .collect(),
                })
            }
        }
    }

    /// Sessions matching `query`, most recently updated first (ties broken
    /// by id, newest first). `messages` counts the active (not archived)
    /// messages and `tokens` sums their cached counts; both come from
    /// counters on the session row, so listing costs no scan of messages.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn list_sessions(&self, query: &SessionQuery) -> Result<Vec<SessionSummary>, StoreError> {
        let terms = query.search.as_deref().map(fts_terms).unwrap_or_default();
        if terms.is_empty() && query.search.as_deref().is_some_and(|t| !t.trim().is_empty()) {
            // Only punctuation was typed: nothing can match it.
            return Ok(Vec::new());
        }
        let names: Vec<String> = (0..terms.len()).map(|i| format!(":t{i}")).collect();
        let mut filters = Vec::new();
        if query.workspace.is_some() {
            filters.push("workspace = :workspace".to_owned());
        }
        for (name, term) in names.iter().zip(&terms) {
            filters.push(match term {
                Term::Fts(_) => format!(
                    "(num IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH {name})
                      OR id IN (SELECT m.session_id FROM messages_fts
                                  JOIN messages m ON m.num = messages_fts.rowid
                                 WHERE messages_fts MATCH {name}))"
                ),
                Term::Substring(_) => format!(
                    "(instr(title, {name}) > 0
                      OR id IN (SELECT session_id FROM messages WHERE instr(content, {name}) > 0))"
                ),
            });
        }
        let filter = if filters.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", filters.join(" AND "))
        };
        let sql = format!(
            "SELECT id, title, workspace, model, provider, message_count, token_count,
                    created_at, updated_at
               FROM sessions {filter}
              ORDER BY updated_at DESC, id DESC
              LIMIT :limit"
        );
        let limit = query.limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut named: Vec<(&str, &dyn rusqlite::ToSql)> = vec![(":limit", &limit)];
        if let Some(ws) = &query.workspace {
            named.push((":workspace", ws));
        }
        for (name, term) in names.iter().zip(&terms) {
            let (Term::Fts(value) | Term::Substring(value)) = term;
            named.push((name.as_str(), value));
        }
        let rows = stmt
            .query_map(named.as_slice(), summary_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// The most recently updated session of `workspace`, if any.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn latest_session(&self, workspace: &str) -> Result<Option<Session>, StoreError> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = ?1
              ORDER BY updated_at DESC, id DESC LIMIT 1"
        );
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([workspace], session_row)
            .optional()?)
    }

    /// How many sessions `workspace` has (0 means the next one is its first,
    /// which decides whether `BOOTSTRAP.md` is included).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn count_sessions_in_workspace(&self, workspace: &str) -> Result<u64, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT count(*) FROM sessions WHERE workspace = ?1")?
            .query_row([workspace], |r| uint(r, 0))?)
    }

    /// How many sessions of `workspace` started before the session `id`
    /// (created at `created_at`), ties broken by id.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn count_sessions_before(
        &self,
        workspace: &str,
        created_at: i64,
        id: SessionId,
    ) -> Result<u64, StoreError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM sessions WHERE workspace = ?1
                   AND (created_at < ?2 OR (created_at = ?2 AND id < ?3))",
            )?
            .query_row(params![workspace, created_at, id.to_string()], |r| uint(r, 0))?)
    }

    /// Records that the session now talks to `model` at `provider`; bumps
    /// `updated_at`.
    ///
    /// # Errors
    /// [`StoreError::SessionNotFound`]; [`StoreError::Sqlite`].
    pub fn update_session_model(
        &mut self,
        session: SessionId,
        provider: ProviderKind,
        model: &str,
    ) -> Result<(), StoreError> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE sessions SET provider = ?2, model = ?3, updated_at = max(updated_at, ?4)
                  WHERE id = ?1",
            )?
            .execute(params![session.to_string(), provider.as_str(), model, now_ms()])?;
        found(n, session)
    }

    /// Sets the session's title (indexed for search); bumps `updated_at`.
    ///
    /// # Errors
    /// [`StoreError::SessionNotFound`]; [`StoreError::Sqlite`].
    pub fn rename_session(&mut self, session: SessionId, title: &str) -> Result<(), StoreError> {
        let n = self
            .conn
            .prepare_cached("UPDATE sessions SET title = ?2, updated_at = max(updated_at, ?3) WHERE id = ?1")?
            .execute(params![session.to_string(), title, now_ms()])?;
        found(n, session)
    }

    /// Removes a session and everything stored with it (its prompts,
    /// messages, usage, compactions and settings go with it). Only for a
    /// session that holds nothing worth keeping: a first message that
    /// failed.
    ///
    /// # Errors
    /// [`StoreError::SessionNotFound`], or the database's error.
    pub fn delete_session(&mut self, session: SessionId) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        let n = tx.execute("DELETE FROM sessions WHERE id = ?1", params![session.to_string()])?;
        tx.commit()?;
        found(n, session)
    }
}

/// `Ok` when one row changed, [`StoreError::SessionNotFound`] when none did.
pub(crate) fn found(changed: usize, session: SessionId) -> Result<(), StoreError> {
    if changed == 0 {
        Err(StoreError::SessionNotFound {
            id: session.to_string(),
        })
    } else {
        Ok(())
    }
}
