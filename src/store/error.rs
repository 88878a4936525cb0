//! [`StoreError`]: everything the store can report, each variant one sentence
//! for the user saying what happened and what to do.

use crate::domain::SessionId;
use std::path::PathBuf;

/// How many candidates [`StoreError::AmbiguousSession`] names.
pub const AMBIGUOUS_CANDIDATES: usize = 5;

/// Longest title shown for a candidate, in characters.
const CANDIDATE_TITLE_CHARS: usize = 30;

/// A session an ambiguous id could mean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Its id.
    pub id: SessionId,
    /// Its title (may be empty).
    pub title: String,
}

/// `1a2b3c4d "fix the parser", 5e6f7a8b "notes" and 3 more`: each
/// candidate by its short id (its full id when another candidate has the
/// same short id) and title, one line, terminal controls removed.
fn candidate_list(candidates: &[Candidate], count: u64) -> String {
    let named: Vec<String> = candidates
        .iter()
        .map(|c| {
            let short = c.id.short();
            let shared = candidates.iter().filter(|o| o.id.short() == short).count() > 1;
            let id = if shared { c.id.to_string() } else { short };
            let title = crate::text::strip_terminal_controls(&c.title, false);
            let title = if title.chars().count() > CANDIDATE_TITLE_CHARS {
                let cut: String = title.chars().take(CANDIDATE_TITLE_CHARS - 1).collect();
                format!("{}…", cut.trim_end())
            } else {
                title
            };
            if title.is_empty() {
                id
            } else {
                format!("{id} \"{title}\"")
            }
        })
        .collect();
    let more = count.saturating_sub(named.len() as u64);
    if more == 0 {
        named.join(", ")
    } else {
        format!("{} and {more} more", named.join(", "))
    }
}

/// An error from the session store.
///
/// Retry semantics are given per variant. No variant leaves a half-written
/// change behind: every write runs in a transaction that is rolled back on
/// error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory could not be created. Not retryable until the
    /// permissions or `STRATA_HOME` change.
    #[error(
        "cannot create the data directory {}: {reason}; check that its parent is writable (STRATA_HOME)",
        path.display()
    )]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// What the operating system said.
        reason: String,
    },

    /// The data directory exists but no file can be created in it. Not
    /// retryable until the permissions or `STRATA_HOME` change.
    #[error(
        "cannot write to the data directory {} ({reason}); make it writable, or set STRATA_HOME to a directory you can write",
        path.display()
    )]
    NotWritable {
        /// The directory.
        path: PathBuf,
        /// What the operating system said.
        reason: String,
    },

    /// SQLite could not open or create the database file. Not retryable until
    /// the permissions or `STRATA_HOME` change.
    #[error(
        "cannot open/create the database at {}: {reason}; check that the data directory is writable (STRATA_HOME)",
        path.display()
    )]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite or the operating system said.
        reason: String,
    },

    /// The file is not an SQLite database, or is damaged. Not retryable; the
    /// file was not modified.
    #[error(
        "the file at {} is not a strata database or is damaged ({reason}); move it aside or use another STRATA_HOME",
        path.display()
    )]
    NotADatabase {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },

    /// The database was written by a newer strata. Not retryable; the file was
    /// not modified.
    #[error(
        "The database at {} was written by a newer strata (schema {found}, this one knows {known}); upgrade strata or use another STRATA_HOME.",
        path.display()
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// `PRAGMA user_version` found in the file.
        found: i64,
        /// The newest schema version this binary knows.
        known: i64,
    },

    /// Applying the schema migrations failed; they were rolled back, so the
    /// database is as it was. Not retryable without a fix.
    #[error(
        "cannot upgrade the database at {} to schema {known}: {reason}; it was left unchanged",
        path.display()
    )]
    Migrate {
        /// The database file.
        path: PathBuf,
        /// The schema version being applied.
        known: i64,
        /// What went wrong.
        reason: String,
    },

    /// Another process held the database lock for longer than the busy
    /// timeout. Retryable.
    #[error("the database is busy (another strata is writing to it); try again in a moment")]
    Busy,

    /// No session has this id or id prefix. Not retryable.
    #[error("no session matches '{id}'; run `strata sessions` to list them")]
    SessionNotFound {
        /// What the user gave.
        id: String,
    },

    /// The id prefix is too short to look up. Not retryable.
    #[error(
        "the session id '{id}' is too short; give the short id `strata sessions` shows, the full id, or at least {min} characters of either"
    )]
    IdTooShort {
        /// What the user gave.
        id: String,
        /// The minimum prefix length.
        min: usize,
    },

    /// The id, short id or prefix matches more than one session. Not
    /// retryable; give one of the candidates' ids.
    #[error(
        "the session id '{id}' matches {count} sessions ({}); give one of these ids instead",
        candidate_list(candidates, *count)
    )]
    AmbiguousSession {
        /// What the user gave.
        id: String,
        /// How many sessions it matches (at least 2).
        count: u64,
        /// The most recently updated of them (at most
        /// [`AMBIGUOUS_CANDIDATES`]), newest first.
        candidates: Vec<Candidate>,
    },

    /// No message has this id. Not retryable.
    #[error("no message with id {id} is stored; it may belong to a deleted session")]
    MessageNotFound {
        /// The message id.
        id: String,
    },

    /// A stored value could not be decoded (bad JSON, unknown enum text, a
    /// number out of range). Not retryable; check the database.
    #[error(
        "the database holds a value strata cannot read ({what}); the database may be damaged; restore a backup or use another STRATA_HOME"
    )]
    Decode {
        /// Which value, and why.
        what: String,
    },

    /// A value is too large to store (a count above `i64::MAX`). Not retryable.
    #[error("the value of {what} is too large to store; nothing was saved")]
    OutOfRange {
        /// Which field.
        what: &'static str,
    },

    /// SQLite found the file damaged while reading or writing it. Not
    /// retryable; nothing was changed.
    #[error(
        "the database is damaged ({0}); nothing was changed; restore a backup, or move the file aside to start a new one (strata doctor names it)"
    )]
    Corrupt(#[source] rusqlite::Error),

    /// Any other SQLite failure; a change in progress was rolled back.
    /// Retryable only if the cause was transient (disk full, I/O error).
    #[error("a database operation failed ({0}); nothing was changed")]
    Sqlite(#[source] rusqlite::Error),

    /// The messages a compaction was planned over changed before it could
    /// be stored (another strata wrote to the session). Retryable.
    #[error("the session changed while it was being compressed; nothing was changed, try again")]
    SessionChanged,

    /// A message to pin, unpin, exclude or include is not an active message
    /// of the session (archived by a compression or an edit, deleted, or of
    /// another session). Nothing was changed; not retryable with the same
    /// id.
    #[error(
        "message {id} is not an active message of session {session}, so nothing was changed; pick one of the messages `strata show` lists"
    )]
    NotActive {
        /// The message id.
        id: String,
        /// The session id.
        session: String,
    },

    /// `undo-compress` on a session with no compaction left to undo.
    #[error(
        "session {id} has no compression to undo (every compression of it is undone already, or there was none)"
    )]
    NothingToUndo {
        /// The session id.
        id: String,
    },

    /// `undo-compress` when the latest change of the session is an edit
    /// and resend: that edit is undone first. Not retryable as asked.
    #[error(
        "the latest change of session {id} is an edited message, not a compression; undo the edit first (`strata undo-edit-message {id}`), then the compression"
    )]
    LatestIsEdit {
        /// The session id.
        id: String,
    },

    /// `undo-edit-message` on a session with no edit left to undo.
    #[error(
        "session {id} has no edited message to undo (every edit of it is undone already, or there was none)"
    )]
    NothingToUndoEdit {
        /// The session id.
        id: String,
    },

    /// `undo-edit-message` when the session was compressed after its
    /// latest edit: the compression is undone first. Not retryable as asked.
    #[error(
        "session {id} was compressed after its latest edit; undo that compression first (`strata undo-compress {id}`), then the edit"
    )]
    CompressedAfterEdit {
        /// The session id.
        id: String,
    },

    /// The thread that owns the database has stopped. Not retryable in this
    /// process; restart strata.
    #[error("the database thread has stopped; restart strata")]
    Closed,

    /// A job on the database thread panicked; its transaction was rolled
    /// back. Not retryable; this is a bug in strata.
    #[error("a database job failed unexpectedly and was rolled back; please report this bug")]
    JobPanicked,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::Error as E;
        match e {
            E::FromSqlConversionFailure(column, _, ref cause) => Self::Decode {
                what: format!("column {column}: {cause}"),
            },
            E::IntegralValueOutOfRange(column, value) => Self::Decode {
                what: format!("column {column}: {value} is out of range"),
            },
            E::InvalidColumnType(column, ref name, ty) => Self::Decode {
                what: format!("column {column} ({name}) holds {ty}"),
            },
            _ => match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => Self::Busy,
                Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
                    Self::Corrupt(e)
                }
                _ => Self::Sqlite(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: std::ffi::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn a_damaged_file_is_said_as_such_and_no_error_claims_a_lost_change() {
        let corrupt = StoreError::from(sqlite(rusqlite::ffi::SQLITE_CORRUPT));
        assert!(matches!(corrupt, StoreError::Corrupt(_)));
        assert!(
            corrupt.to_string().starts_with("the database is damaged"),
            "{corrupt}"
        );
        let other = StoreError::from(sqlite(rusqlite::ffi::SQLITE_IOERR)).to_string();
        assert!(other.ends_with("nothing was changed"), "{other}");
        assert!(
            !other.contains("not saved"),
            "a read has no change to lose: {other}"
        );
    }
}
