//! The user's per-message flags: `pinned` (never truncated, dropped or
//! summarised) and `excluded` (left out of every request until included).
//! Both are set on a set of a session's active messages in one
//! transaction, all or nothing; archived messages keep the flags they had
//! when they were archived.

use super::{Store, StoreError, now_ms};
use crate::domain::{MessageId, SessionId};
use rusqlite::params;

/// A flag column of `messages` the user sets.
#[derive(Clone, Copy)]
enum Flag {
    Pinned,
    Excluded,
}

impl Flag {
    fn sql(self) -> &'static str {
        match self {
            Self::Pinned => {
                "UPDATE messages SET pinned = ?3
                  WHERE id = ?1 AND session_id = ?2 AND archived_by IS NULL"
            }
            Self::Excluded => {
                "UPDATE messages SET excluded = ?3
                  WHERE id = ?1 AND session_id = ?2 AND archived_by IS NULL"
            }
        }
    }
}

impl Store {
    /// Sets `pinned` to `on` on `messages` of `session`, in one transaction;
    /// bumps the session's `updated_at`. Setting a flag a message already
    /// has is not an error.
    ///
    /// # Errors
    /// [`StoreError::NotActive`] naming the first message that is not an
    /// active message of `session` (nothing is changed);
    /// [`StoreError::Busy`]; [`StoreError::Sqlite`].
    pub fn set_pinned(
        &mut self,
        session: SessionId,
        messages: &[MessageId],
        on: bool,
    ) -> Result<(), StoreError> {
        self.set_flag(session, messages, Flag::Pinned, on)
    }

    /// Sets `excluded` to `on` on `messages` of `session`, in one
    /// transaction; bumps the session's `updated_at`. The caller decides
    /// which messages stand for a unit (all results of a call, for
    /// instance); the store only writes the flags.
    ///
    /// # Errors
    /// As [`Store::set_pinned`].
    pub fn set_excluded(
        &mut self,
        session: SessionId,
        messages: &[MessageId],
        on: bool,
    ) -> Result<(), StoreError> {
        self.set_flag(session, messages, Flag::Excluded, on)
    }

    fn set_flag(
        &mut self,
        session: SessionId,
        messages: &[MessageId],
        flag: Flag,
        on: bool,
    ) -> Result<(), StoreError> {
        let sid = session.to_string();
        let tx = self.conn.transaction()?;
        {
            let mut update = tx.prepare_cached(flag.sql())?;
            for m in messages {
                if update.execute(params![m.to_string(), sid, on])? != 1 {
                    return Err(StoreError::NotActive {
                        id: m.to_string(),
                        session: sid,
                    });
                }
            }
        }
        tx.prepare_cached("UPDATE sessions SET updated_at = max(updated_at, ?2) WHERE id = ?1")?
            .execute(params![sid, now_ms()])?;
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::{Message, Role, Session, SessionId};
    use crate::store::{Store, StoreError};

    fn store_with(n: usize) -> (Store, SessionId, Vec<Message>) {
        let mut store = Store::open_in_memory().unwrap();
        let session = Session {
            id: SessionId::new(),
            title: String::new(),
            workspace: "/w".into(),
            model: "m".into(),
            provider: crate::domain::ProviderKind::OpenAi,
            current_prompt_id: None,
            parent_id: None,
            created_at: 0,
            updated_at: 0,
        };
        let prompt = crate::domain::SystemPrompt {
            id: crate::domain::PromptId::new(),
            session_id: session.id,
            version: 1,
            text: "p".into(),
            layers: Vec::new(),
            boundary_offset: None,
            sha256: String::new(),
            fingerprint: crate::domain::Fingerprint {
                provider: crate::domain::ProviderKind::OpenAi,
                model: "m".into(),
                mode: crate::domain::PromptMode::Full,
                tool_set_hash: String::new(),
                template_version: 1,
            },
            created_at: 0,
        };
        let mut session = session;
        session.current_prompt_id = Some(prompt.id);
        store.create_session(&session, &prompt).unwrap();
        let mut msgs: Vec<Message> = (0..n)
            .map(|i| Message::new(session.id, Role::User, format!("m{i}"), 0))
            .collect();
        store.append_messages(session.id, &mut msgs).unwrap();
        (store, session.id, msgs)
    }

    #[test]
    fn flags_are_set_together_or_not_at_all() {
        let (mut store, session, msgs) = store_with(3);
        let ids = [msgs[0].id, msgs[2].id];
        store.set_pinned(session, &ids, true).unwrap();
        store.set_excluded(session, &[msgs[1].id], true).unwrap();
        let read = store.messages(session, false).unwrap();
        assert_eq!(
            read.iter().map(|m| (m.pinned, m.excluded)).collect::<Vec<_>>(),
            [(true, false), (false, true), (true, false)]
        );
        // One unknown id: nothing of the batch is written.
        let stranger = crate::domain::MessageId::new();
        let err = store.set_excluded(session, &[msgs[0].id, stranger], true).err();
        assert!(matches!(err, Some(StoreError::NotActive { .. })), "{err:?}");
        let read = store.messages(session, false).unwrap();
        assert!(!read[0].excluded);
        // Another session's message is not this session's.
        let (mut other, other_session, _) = store_with(1);
        assert!(other.set_pinned(other_session, &[msgs[0].id], true).is_err());
    }
}
