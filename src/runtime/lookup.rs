//! Reading sessions for the command line: finding one by id, short id or prefix,
//! the latest of a workspace, the list (with search), and a session's
//! stored prompt and messages for `show` and `export`; and previewing the
//! prompt a new session would get. Only reads: nothing here writes.

use super::{PromptPreview, Runtime, RuntimeError};
use crate::domain::{Message, Session, SessionId, SessionSummary, SystemPrompt};
use crate::prompt::AssembledPrompt;
use crate::store::{SessionQuery, StoreError};

impl Runtime {
    /// The session named by a full id, by its short id
    /// ([`SessionId::short`]) or by an unambiguous prefix of at least
    /// [`MIN_ID_PREFIX`](crate::store::MIN_ID_PREFIX) characters of either
    /// (case-insensitive, surrounding whitespace ignored).
    ///
    /// # Errors
    /// [`StoreError::SessionNotFound`], [`StoreError::IdTooShort`],
    /// [`StoreError::AmbiguousSession`]; [`StoreError::Sqlite`].
    pub fn find_session(&self, id_or_prefix: &str) -> Result<Session, StoreError> {
        self.store.find_session(id_or_prefix)
    }

    /// The most recently updated session of `workspace` (a workspace root
    /// as stored), `None` when it has none.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn latest_session(&self, workspace: &str) -> Result<Option<Session>, StoreError> {
        self.store.latest_session(workspace)
    }

    /// The sessions `query` selects, most recently updated first, with
    /// their message and token counts.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn list_sessions(&self, query: &SessionQuery) -> Result<Vec<SessionSummary>, StoreError> {
        self.store.list_sessions(query)
    }

    /// The stored system prompt `session` currently sends (`None` for a
    /// damaged database).
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn current_prompt(&self, session: SessionId) -> Result<Option<SystemPrompt>, StoreError> {
        self.store.current_prompt(session)
    }

    /// The messages of `session` in order (`seq`), the archived ones too
    /// when `include_archived`; token counts as stored.
    ///
    /// # Errors
    /// [`StoreError::Decode`]; [`StoreError::Sqlite`].
    pub fn messages(&self, session: SessionId, include_archived: bool) -> Result<Vec<Message>, StoreError> {
        self.store.messages(session, include_archived)
    }

    /// The prompt `preview` describes, built with this store's sessions of
    /// the workspace (whether it is the first, the recent-sessions digest).
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the sessions cannot be read.
    pub fn preview_prompt(&self, preview: PromptPreview<'_>) -> Result<AssembledPrompt, RuntimeError> {
        preview.build(Some(&self.store))
    }
}
