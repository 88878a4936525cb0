//! Layer 2 adapter: the SQLite session store. Owns the database file and
//! everything in it: sessions, messages, versioned system prompts,
//! compactions, usage rows, the FTS5 search index, the decisions on
//! workspaces' `.mcp.json` files and the app's input history.
//!
//! Invariants:
//! - The schema comes only from the numbered files in `migrations/`, applied
//!   in one transaction and tracked by `PRAGMA user_version`; a database with
//!   a newer version is refused before anything is written to it.
//! - Connections run in WAL mode with `foreign_keys=ON`, a 5 s busy timeout
//!   and `synchronous=NORMAL`; writes take the lock up front
//!   (`BEGIN IMMEDIATE`), so two strata processes on one file serialise
//!   instead of failing.
//! - Messages of a session have `seq` 1, 2, 3, ... assigned here, never by the
//!   caller. History is archived, never copied or deleted.
//! - The session row's `messages`/`tokens` counters are kept by triggers.
//!
//! Who may call it: the runtime and the CLI, through a [`StoreHandle`] (one
//! thread owns the [`Store`] and applies jobs in order). Core modules and the
//! TUI never touch it. Timestamps are unix milliseconds; ids are TEXT.

mod cache_prefixes;
mod changes;
mod codec;
mod compaction;
mod edits;
mod error;
mod files;
mod flags;
mod handle;
mod input_history;
mod leases;
mod mcp_names;
mod mcp_trust;
mod messages;
mod prompts;
mod records;
mod schema;
mod search;
mod served_windows;
mod sessions;

pub use changes::{SessionTools, StoredChange};
pub use compaction::CompactionWrite;
pub use edits::EditWrite;
pub use error::{AMBIGUOUS_CANDIDATES, Candidate, StoreError};
pub use files::check_writable_dir;
pub use handle::StoreHandle;
pub use leases::{Claim, Lease};
pub use mcp_names::McpToolName;
pub use mcp_trust::{McpDecision, McpTrust};
pub use schema::KNOWN_VERSION;
pub use served_windows::StoredWindow;
pub use sessions::{MIN_ID_PREFIX, SessionQuery};

use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a statement waits for another connection's lock before
/// [`StoreError::Busy`].
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The session store: one SQLite connection and the queries over it.
///
/// Not `Sync`: give it to [`StoreHandle::spawn`] to share it between threads.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    /// The database file, or `None` for an in-memory database.
    path: Option<PathBuf>,
    /// Message rows read by this connection so far (see
    /// [`Store::message_rows_read`]).
    rows_read: std::sync::atomic::AtomicU64,
}

impl Store {
    /// Opens (creating when missing) the database at `path`, creating its
    /// directory with mode 0700 and the file with mode 0600, and brings the
    /// schema up to date.
    ///
    /// # Errors
    /// [`StoreError::CreateDir`] / [`StoreError::Open`] when the directory or
    /// file cannot be created or opened for writing;
    /// [`StoreError::NotADatabase`] for a file that is not SQLite;
    /// [`StoreError::TooNew`] for a database from a newer strata (left
    /// byte-for-byte untouched); [`StoreError::Migrate`] when the schema
    /// upgrade fails (rolled back); [`StoreError::Busy`] when another process
    /// holds the lock for longer than [`BUSY_TIMEOUT`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        // Two connections opening a new file at once (the session and the
        // input history of one app) can meet while one of them switches the
        // file to WAL; SQLite answers that with SQLITE_BUSY at once, without
        // its busy handler. Such an open is tried again within the timeout.
        let path = path.as_ref();
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match Self::open_once(path) {
                Err(StoreError::Busy) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                result => return result,
            }
        }
    }

    fn open_once(path: &Path) -> Result<Self, StoreError> {
        let path = path.to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            files::create_private_dir(dir)?;
        }
        files::create_private_file(&path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags).map_err(|e| open_error(&path, &e))?;
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(StoreError::Open {
                path,
                reason: "the file can only be opened read-only".to_owned(),
            });
        }
        let store = Self::init(conn, Some(path.clone()))?;
        files::make_private(&path)?;
        Ok(store)
    }

    /// A fresh in-memory database with the current schema (for tests and
    /// dry runs).
    ///
    /// # Errors
    /// [`StoreError::Migrate`] if the schema cannot be created (a bug).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(|e| open_error(Path::new(":memory:"), &e))?;
        Self::init(conn, None)
    }

    /// Refuses newer databases, sets the pragmas and migrates, in that order:
    /// nothing is written before the version check.
    fn init(mut conn: Connection, path: Option<PathBuf>) -> Result<Self, StoreError> {
        let shown = path.clone().unwrap_or_else(|| PathBuf::from(":memory:"));
        let fail = |e: rusqlite::Error| open_error(&shown, &e);
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        let found = schema::user_version(&conn).map_err(fail)?;
        if found > KNOWN_VERSION {
            return Err(StoreError::TooNew {
                path: shown,
                found,
                known: KNOWN_VERSION,
            });
        }
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(fail)?;
        conn.pragma_update(None, "foreign_keys", true).map_err(fail)?;
        conn.set_transaction_behavior(TransactionBehavior::Immediate);
        conn.set_prepared_statement_cache_capacity(64);
        schema::migrate(&mut conn).map_err(|reason| StoreError::Migrate {
            path: shown.clone(),
            known: KNOWN_VERSION,
            reason,
        })?;
        Ok(Self {
            conn,
            path,
            rows_read: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The database file, `None` when in memory.
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The schema version of the open database (`PRAGMA user_version`).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`] if the pragma cannot be read.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(schema::user_version(&self.conn)?)
    }

    /// Runs `PRAGMA integrity_check` and returns its report: `"ok"` for a
    /// sound database, otherwise the problems found, one per line.
    ///
    /// # Errors
    /// [`StoreError::NotADatabase`] when the file is too damaged to check;
    /// [`StoreError::Sqlite`] otherwise.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        let mut stmt = self.conn.prepare("PRAGMA integrity_check")?;
        let lines = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| match &self.path {
                Some(p) => open_error(p, &e),
                None => e.into(),
            })?;
        Ok(lines.join("\n"))
    }
}

/// Maps an error met while opening to a variant naming the file.
fn open_error(path: &Path, e: &rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::NotADatabase {
            path,
            reason: e.to_string(),
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy,
        _ => StoreError::Open {
            path,
            reason: e.to_string(),
        },
    }
}

/// The current time in unix milliseconds (0 if the clock is before 1970).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_pragmas_are_set() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path().join("s.db")).unwrap();
        let get = |name: &str| -> i64 {
            store
                .conn
                .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(get("foreign_keys"), 1);
        assert_eq!(get("busy_timeout"), 5000);
        assert_eq!(get("synchronous"), 1, "NORMAL");
        let mode: String = store
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    /// The app opens the store twice at start (the session and the input
    /// history); on a new file the two opens race the switch to WAL.
    #[test]
    fn connections_opening_a_new_file_at_once_all_succeed() {
        let tmp = tempfile::tempdir().unwrap();
        for round in 0..40 {
            let path = tmp.path().join(format!("race-{round}.db"));
            let opens: Vec<_> = (0..4)
                .map(|_| {
                    let path = path.clone();
                    std::thread::spawn(move || Store::open(&path).map(|s| s.schema_version().unwrap()))
                })
                .collect();
            for open in opens {
                assert_eq!(open.join().unwrap().unwrap(), KNOWN_VERSION, "round {round}");
            }
        }
    }
}
