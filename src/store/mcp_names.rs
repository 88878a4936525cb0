//! The names a session gave its MCP tools, one per `(server, tool)`: once
//! given, a name stays on its tool for the session's life (what the name
//! means, and how names are made, is `tooling::mcp_names`'s).

use super::{Store, StoreError};
use crate::domain::SessionId;
use rusqlite::params;

/// `(server, tool, name)`.
pub type McpToolName = (String, String, String);

impl Store {
    /// Every name `session` gave an MCP tool, sorted by server and tool.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn mcp_tool_names(&self, session: SessionId) -> Result<Vec<McpToolName>, StoreError> {
        let mut statement = self.conn.prepare_cached(
            "SELECT server, tool, name FROM mcp_tool_names WHERE session_id = ?1 ORDER BY server, tool",
        )?;
        let rows = statement.query_map([session.to_string()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Keeps `names` for `session`: a pair or a name the session has
    /// already keeps what it had. Nothing is kept for a session that is
    /// not stored (yet). Returns the rows added.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn keep_mcp_tool_names(
        &mut self,
        session: SessionId,
        names: &[McpToolName],
    ) -> Result<usize, StoreError> {
        let tx = self.conn.transaction()?;
        let mut added = 0;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR IGNORE INTO mcp_tool_names (session_id, server, tool, name)
                 SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
            )?;
            let id = session.to_string();
            for (server, tool, name) in names {
                added += insert.execute(params![id, server, tool, name])?;
            }
        }
        tx.commit()?;
        Ok(added)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::domain::{Fingerprint, PromptId, PromptMode, ProviderKind, Session, SystemPrompt};

    fn stored_session() -> (Store, SessionId) {
        let mut store = Store::open_in_memory().unwrap();
        let id = SessionId::new();
        let prompt = SystemPrompt {
            id: PromptId::new(),
            session_id: id,
            version: 1,
            text: "p".into(),
            layers: Vec::new(),
            boundary_offset: None,
            sha256: String::new(),
            fingerprint: Fingerprint {
                provider: ProviderKind::OpenAi,
                model: "m".into(),
                mode: PromptMode::Full,
                tool_set_hash: String::new(),
                template_version: 1,
            },
            created_at: 0,
        };
        let session = Session {
            id,
            title: String::new(),
            workspace: "/w".into(),
            model: "m".into(),
            provider: ProviderKind::OpenAi,
            current_prompt_id: Some(prompt.id),
            parent_id: None,
            created_at: 0,
            updated_at: 0,
        };
        store.create_session(&session, &prompt).unwrap();
        (store, id)
    }

    fn pair(server: &str, tool: &str, name: &str) -> McpToolName {
        (server.to_owned(), tool.to_owned(), name.to_owned())
    }

    #[test]
    fn a_name_once_kept_stays_and_a_session_not_stored_keeps_nothing() {
        let (mut store, id) = stored_session();
        let first = [pair("col", "a_b", "col__a_b")];
        assert_eq!(store.keep_mcp_tool_names(id, &first).unwrap(), 1);
        // The same pair under another name, and another pair under a name
        // taken: both keep what the session had.
        let later = [pair("col", "a_b", "col__a_b_2"), pair("col", "a.b", "col__a_b")];
        assert_eq!(store.keep_mcp_tool_names(id, &later).unwrap(), 0);
        let more = [pair("col", "a.b", "col__a_b_2")];
        assert_eq!(store.keep_mcp_tool_names(id, &more).unwrap(), 1);
        assert_eq!(
            store.mcp_tool_names(id).unwrap(),
            [pair("col", "a.b", "col__a_b_2"), pair("col", "a_b", "col__a_b")]
        );
        let unsaved = SessionId::new();
        assert_eq!(store.keep_mcp_tool_names(unsaved, &first).unwrap(), 0);
        assert!(store.mcp_tool_names(unsaved).unwrap().is_empty());
    }
}
