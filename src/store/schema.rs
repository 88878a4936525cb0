//! The schema: numbered SQL files from `migrations/`, applied in order in one
//! transaction and recorded in `PRAGMA user_version`.
//!
//! Invariant: a file, once released, is never edited; a change is a new file
//! appended to [`MIGRATIONS`]. `user_version` equals the number of files
//! applied, so [`KNOWN_VERSION`] is the length of the list.

use rusqlite::Connection;
use rusqlite_migration::{M, Migrations};

/// The migration files, oldest first.
const FILES: &[M<'static>] = &[
    M::up(include_str!("../../migrations/0001_initial.sql")),
    M::up(include_str!("../../migrations/0002_stream_writer.sql")),
    M::up(include_str!("../../migrations/0003_compaction.sql")),
    M::up(include_str!("../../migrations/0004_tools.sql")),
    M::up(include_str!("../../migrations/0005_mcp_trust.sql")),
    M::up(include_str!("../../migrations/0006_input_history.sql")),
    M::up(include_str!("../../migrations/0007_context_control.sql")),
    M::up(include_str!("../../migrations/0008_served_windows.sql")),
    M::up(include_str!("../../migrations/0009_cache_prefix.sql")),
    M::up(include_str!("../../migrations/0010_mcp_tool_names.sql")),
    M::up(include_str!("../../migrations/0011_message_error.sql")),
    M::up(include_str!("../../migrations/0012_session_leases.sql")),
];

/// The migration set handed to `rusqlite_migration`. It runs every pending
/// file and the `user_version` update inside a single transaction
/// (`Migrations::to_latest` → one `conn.transaction()` around the loop).
const MIGRATIONS: Migrations<'static> = Migrations::from_slice(FILES);

/// The newest schema version this binary knows (the number of migration files).
pub const KNOWN_VERSION: i64 = FILES.len() as i64;

/// `PRAGMA user_version` of the open database.
pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// What [`migrate`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Migrated {
    /// Nothing was pending.
    UpToDate,
    /// Pending files were applied (by this connection or, in a race, by
    /// another process).
    Applied,
}

/// Brings the schema up to [`KNOWN_VERSION`]. The caller has already refused
/// databases newer than that.
///
/// Two processes may open a new database at once: both see version 0, one
/// wins the write lock and migrates, the other's migration then fails on the
/// existing tables and is rolled back. That failure is ignored when the
/// database turns out to be at [`KNOWN_VERSION`] afterwards.
pub(crate) fn migrate(conn: &mut Connection) -> Result<Migrated, String> {
    let before = user_version(conn).map_err(|e| e.to_string())?;
    if before == KNOWN_VERSION {
        return Ok(Migrated::UpToDate);
    }
    match MIGRATIONS.to_latest(conn) {
        Ok(()) => Ok(Migrated::Applied),
        Err(e) => match user_version(conn) {
            Ok(KNOWN_VERSION) => Ok(Migrated::Applied),
            _ => Err(e.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_set_is_valid() {
        assert!(MIGRATIONS.validate().is_ok());
        assert_eq!(KNOWN_VERSION, FILES.len() as i64);
    }

    #[test]
    fn migrating_an_empty_database_sets_user_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn), Ok(Migrated::Applied));
        assert_eq!(user_version(&conn).unwrap(), KNOWN_VERSION);
        assert_eq!(migrate(&mut conn), Ok(Migrated::UpToDate));
    }

    #[test]
    fn a_failing_file_leaves_nothing_behind() {
        let files = [
            M::up("CREATE TABLE a (x);"),
            M::up("CREATE TABLE b (x); THIS IS NOT SQL;"),
        ];
        let mut conn = Connection::open_in_memory().unwrap();
        assert!(Migrations::from_slice(&files).to_latest(&mut conn).is_err());
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tables, 0, "the first file must be rolled back with the second");
        assert_eq!(user_version(&conn).unwrap(), 0);
    }
}
