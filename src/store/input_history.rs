//! The app's input history: what the user entered in the composer, per
//! workspace root, oldest first, trimmed to a cap on every append. What an
//! entry is and which ones are kept is the runtime's; this module only
//! keeps them.

use super::{Store, StoreError};
use rusqlite::params;

impl Store {
    /// The newest `limit` inputs entered in `workspace`, oldest first.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn input_history(&self, workspace: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut rows: Vec<String> = self
            .conn
            .prepare_cached("SELECT text FROM input_history WHERE workspace = ?1 ORDER BY id DESC LIMIT ?2")?
            .query_map(params![workspace, limit], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        rows.reverse();
        Ok(rows)
    }

    /// Appends `text` to `workspace`'s inputs (entered at `at_ms`, unix
    /// milliseconds) unless it repeats the newest one, then deletes all but
    /// the newest `cap`, in one transaction.
    ///
    /// # Errors
    /// [`StoreError::Busy`] when another process holds the write lock past
    /// the busy timeout; [`StoreError::Sqlite`]. On error nothing changed.
    pub fn push_input(
        &mut self,
        workspace: &str,
        text: &str,
        at_ms: i64,
        cap: usize,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        let newest: Option<String> = tx
            .prepare_cached("SELECT text FROM input_history WHERE workspace = ?1 ORDER BY id DESC LIMIT 1")?
            .query_map([workspace], |r| r.get(0))?
            .next()
            .transpose()?;
        if newest.as_deref() == Some(text) {
            return Ok(());
        }
        tx.prepare_cached("INSERT INTO input_history (workspace, text, entered_at) VALUES (?1, ?2, ?3)")?
            .execute(params![workspace, text, at_ms])?;
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        tx.prepare_cached(
            "DELETE FROM input_history WHERE workspace = ?1 AND id NOT IN
               (SELECT id FROM input_history WHERE workspace = ?1 ORDER BY id DESC LIMIT ?2)",
        )?
        .execute(params![workspace, cap])?;
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_come_back_oldest_first_per_workspace_and_trimmed_to_the_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.db");
        let mut store = Store::open(&path).unwrap();
        for (i, text) in ["one", "two", "two", "three", "four"].iter().enumerate() {
            store.push_input("/w", text, i as i64, 3).unwrap();
        }
        store.push_input("/other", "elsewhere", 9, 3).unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(
            store.input_history("/w", 10).unwrap(),
            ["two", "three", "four"],
            "the repeat is kept once and the oldest went"
        );
        assert_eq!(store.input_history("/w", 2).unwrap(), ["three", "four"]);
        assert_eq!(store.input_history("/other", 10).unwrap(), ["elsewhere"]);
        assert!(store.input_history("/none", 10).unwrap().is_empty());
    }
}
