//! Served windows remembered per base URL and model: what a local server
//! said it serves, or what an overflow error stated (see
//! `provider::served_window`). The runtime decides which one wins; this
//! module only keeps them.

use super::{Store, StoreError};
use rusqlite::{OptionalExtension, params};

/// One remembered window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredWindow {
    /// The window, tokens.
    pub tokens: u64,
    /// `server` or `overflow_error`.
    pub source: String,
    /// Where it came from, for people.
    pub detail: String,
    /// When it was stored, unix milliseconds.
    pub updated_at: i64,
}

impl Store {
    /// The window remembered for `base_url` and `model`, if any.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn served_window(&self, base_url: &str, model: &str) -> Result<Option<StoredWindow>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT tokens, source, detail, updated_at FROM served_windows WHERE base_url = ?1 AND model = ?2",
            )?
            .query_row(params![base_url, model], |r| {
                Ok(StoredWindow {
                    tokens: r.get::<_, i64>(0)?.unsigned_abs(),
                    source: r.get(1)?,
                    detail: r.get(2)?,
                    updated_at: r.get(3)?,
                })
            })
            .optional()?)
    }

    /// Remembers `window` for `base_url` and `model` (replacing what was
    /// there).
    ///
    /// # Errors
    /// [`StoreError::OutOfRange`] for a window above `i64::MAX`;
    /// [`StoreError::Sqlite`] (a source other than `server` or
    /// `overflow_error`).
    pub fn remember_served_window(
        &mut self,
        base_url: &str,
        model: &str,
        window: &StoredWindow,
    ) -> Result<(), StoreError> {
        let tokens = i64::try_from(window.tokens).map_err(|_| StoreError::OutOfRange {
            what: "served window",
        })?;
        self.conn
            .prepare_cached(
                "INSERT INTO served_windows (base_url, model, tokens, source, detail, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (base_url, model) DO UPDATE SET tokens = excluded.tokens,
                     source = excluded.source, detail = excluded.detail, updated_at = excluded.updated_at",
            )?
            .execute(params![
                base_url,
                model,
                tokens,
                window.source,
                window.detail,
                window.updated_at
            ])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_remembered_per_base_url_and_model_and_replaced() {
        let mut store = Store::open_in_memory().unwrap();
        let url = "http://127.0.0.1:8080/v1";
        assert_eq!(store.served_window(url, "m").unwrap(), None);
        let w = StoredWindow {
            tokens: 3072,
            source: "server".into(),
            detail: "meta.n_ctx".into(),
            updated_at: 1,
        };
        store.remember_served_window(url, "m", &w).unwrap();
        assert_eq!(store.served_window(url, "m").unwrap(), Some(w.clone()));
        assert_eq!(store.served_window(url, "other").unwrap(), None);
        let smaller = StoredWindow {
            tokens: 2048,
            source: "overflow_error".into(),
            ..w
        };
        store.remember_served_window(url, "m", &smaller).unwrap();
        assert_eq!(store.served_window(url, "m").unwrap().unwrap().tokens, 2048);
    }
}
