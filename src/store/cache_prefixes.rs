//! The block hashes of each session's last answered request
//! ([`PrefixSnapshot`]), so the next request — in this process or the
//! next — is compared with it. One row per session, replaced each time.

use super::{Store, StoreError};
use crate::domain::{PrefixSnapshot, SessionId};
use rusqlite::{OptionalExtension, params};

impl Store {
    /// Remembers `snapshot` as `session`'s last answered request.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] for an unknown session.
    pub fn save_cache_prefix(
        &mut self,
        session: SessionId,
        snapshot: &PrefixSnapshot,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(snapshot).map_err(|e| StoreError::Decode {
            what: format!("cache prefix: {e}"),
        })?;
        self.conn
            .prepare_cached(
                "INSERT INTO cache_prefixes (session_id, snapshot, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_id) DO UPDATE SET snapshot = excluded.snapshot, updated_at = excluded.updated_at",
            )?
            .execute(params![session.to_string(), text, snapshot.at_ms])?;
        Ok(())
    }

    /// `session`'s last answered request, if one was remembered. A row
    /// that no longer decodes (written by another version) reads as none.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn cache_prefix(&self, session: SessionId) -> Result<Option<PrefixSnapshot>, StoreError> {
        let text: Option<String> = self
            .conn
            .prepare_cached("SELECT snapshot FROM cache_prefixes WHERE session_id = ?1")?
            .query_row([session.to_string()], |r| r.get(0))
            .optional()?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }
}
