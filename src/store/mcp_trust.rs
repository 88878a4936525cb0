//! The user's decision on a workspace's `.mcp.json`, one row per workspace
//! root: accepted or declined, on which bytes (their SHA-256), and when.
//! What a decision means (it lapses when the bytes change) is the
//! runtime's; this module only keeps it.

use super::{Store, StoreError};
use rusqlite::{OptionalExtension, params};

/// Accepted or declined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpDecision {
    /// Its servers may start in the workspace's sessions.
    Accepted,
    /// Its servers are not started and the user is not asked again.
    Declined,
}

impl McpDecision {
    /// The column's value: `accepted` or `declined`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Declined => "declined",
        }
    }
}

/// One stored decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpTrust {
    /// The workspace root, its canonical path as text.
    pub workspace: String,
    /// Lower-case hex SHA-256 of the `.mcp.json` bytes decided on.
    pub sha256: String,
    /// What the user decided.
    pub decision: McpDecision,
    /// When, unix milliseconds.
    pub decided_at: i64,
}

impl Store {
    /// The decision stored for `workspace` (a canonical root path), if any.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`]; a row with an unknown decision reads as none.
    pub fn mcp_trust(&self, workspace: &str) -> Result<Option<McpTrust>, StoreError> {
        let row: Option<(String, String, i64)> = self
            .conn
            .prepare_cached("SELECT sha256, decision, decided_at FROM mcp_trust WHERE workspace = ?1")?
            .query_row([workspace], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        Ok(row.and_then(|(sha256, decision, decided_at)| {
            let decision = match decision.as_str() {
                "accepted" => McpDecision::Accepted,
                "declined" => McpDecision::Declined,
                _ => return None,
            };
            Some(McpTrust {
                workspace: workspace.to_owned(),
                sha256,
                decision,
                decided_at,
            })
        }))
    }

    /// Stores `trust`, replacing the workspace's earlier decision.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn set_mcp_trust(&mut self, trust: &McpTrust) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO mcp_trust (workspace, sha256, decision, decided_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (workspace) DO UPDATE SET sha256 = excluded.sha256,
                   decision = excluded.decision, decided_at = excluded.decided_at",
            )?
            .execute(params![
                trust.workspace,
                trust.sha256,
                trust.decision.as_str(),
                trust.decided_at
            ])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_round_trips_and_a_later_one_replaces_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.db");
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.mcp_trust("/w").unwrap(), None);
        let accepted = McpTrust {
            workspace: "/w".to_owned(),
            sha256: "ab".repeat(32),
            decision: McpDecision::Accepted,
            decided_at: 5,
        };
        store.set_mcp_trust(&accepted).unwrap();
        let declined = McpTrust {
            workspace: "/other".to_owned(),
            sha256: "cd".repeat(32),
            decision: McpDecision::Declined,
            decided_at: 6,
        };
        store.set_mcp_trust(&declined).unwrap();
        drop(store);
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.mcp_trust("/w").unwrap(), Some(accepted.clone()));
        assert_eq!(store.mcp_trust("/other").unwrap(), Some(declined));
        let later = McpTrust {
            sha256: "ef".repeat(32),
            decision: McpDecision::Declined,
            decided_at: 9,
            ..accepted
        };
        store.set_mcp_trust(&later).unwrap();
        assert_eq!(store.mcp_trust("/w").unwrap(), Some(later));
        let rows: i64 = store
            .conn
            .query_row("SELECT count(*) FROM mcp_trust", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 2, "one row per workspace");
    }

    #[test]
    fn only_the_two_decisions_are_stored() {
        let store = Store::open_in_memory().unwrap();
        let err = store.conn.execute(
            "INSERT INTO mcp_trust (workspace, sha256, decision, decided_at) VALUES ('/w', 'x', 'maybe', 1)",
            [],
        );
        assert!(err.is_err(), "the CHECK refuses other values");
    }
}
