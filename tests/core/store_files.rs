#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The database on disk: migrations, refusing newer or foreign files without
//! touching them, file modes, pragmas and open errors.

use crate::support::store as store_support;

use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};
use strata::store::{KNOWN_VERSION, Store, StoreError};

fn sha256(path: &Path) -> String {
    hex::encode(Sha256::digest(fs::read(path).unwrap()))
}

fn dir_listing(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

/// The schema as SQLite records it, and the version.
fn schema_of(path: &Path) -> (i64, Vec<(String, String)>) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let version = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    let mut stmt = conn
        .prepare("SELECT name, coalesce(sql, '') FROM sqlite_schema ORDER BY name")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (version, rows)
}

#[test]
fn migrations_apply_once_and_a_second_open_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("data/strata.db");
    let store = Store::open(&db).unwrap();
    assert_eq!(store.schema_version().unwrap(), KNOWN_VERSION);
    assert_eq!(store.integrity_check().unwrap(), "ok");
    drop(store);
    let first = schema_of(&db);
    assert_eq!(first.0, KNOWN_VERSION);
    for table in [
        "sessions",
        "messages",
        "system_prompts",
        "compactions",
        "usage",
        "messages_fts",
        "sessions_fts",
    ] {
        assert!(first.1.iter().any(|(n, _)| n == table), "missing {table}");
    }

    let store = Store::open(&db).unwrap();
    drop(store);
    assert_eq!(schema_of(&db), first);
}

#[test]
fn the_file_is_left_in_wal_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("strata.db");
    let _store = Store::open(&db).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_stored_unknown_provider_is_a_decode_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("strata.db");
    let (s, p) = store_support::session("/w", "t");
    Store::open(&db).unwrap().create_session(&s, &p).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE sessions SET provider = 'gemini'", [])
        .unwrap();
    let store = Store::open(&db).unwrap();
    let err = store.session(s.id).unwrap_err();
    assert!(
        matches!(&err, StoreError::Decode { what } if what.contains("unknown provider 'gemini'")),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("the database holds a value strata cannot read"),
        "{err}"
    );
    assert!(matches!(
        store.list_sessions(&strata::store::SessionQuery::default()),
        Err(StoreError::Decode { .. })
    ));
}

#[test]
fn foreign_keys_are_enforced() {
    let mut store = Store::open_in_memory().unwrap();
    let usage = strata::domain::Usage {
        session_id: strata::domain::SessionId::new(),
        message_id: None,
        model: "m".into(),
        prompt_tokens: None,
        completion_tokens: None,
        cache_read_tokens: None,
        cache_write_tokens: None,
        reasoning_tokens: None,
        estimated_prompt_tokens: 0,
        ttft_ms: None,
        duration_ms: None,
        created_at: 0,
        tools_sha256: None,
        cache: None,
    };
    assert!(
        store.record_usage(&usage).is_err(),
        "usage for a missing session must be refused"
    );
}

#[test]
fn a_newer_database_is_refused_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("strata.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE future (x); INSERT INTO future VALUES (1); PRAGMA user_version = 999;",
        )
        .unwrap();
    }
    let before = sha256(&db);
    let files_before = dir_listing(tmp.path());

    let err = Store::open(&db).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 999,
                known: KNOWN_VERSION,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "The database at {} was written by a newer strata (schema 999, this one knows {KNOWN_VERSION}); upgrade strata or use another STRATA_HOME.",
            db.display()
        )
    );
    assert_eq!(sha256(&db), before);
    assert_eq!(
        dir_listing(tmp.path()),
        files_before,
        "no -wal/-shm/journal left behind"
    );
}

#[test]
fn a_newer_database_in_wal_mode_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("strata.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE future (x); PRAGMA user_version = 999;")
            .unwrap();
    }
    let before = sha256(&db);
    assert!(matches!(
        Store::open(&db),
        Err(StoreError::TooNew { found: 999, .. })
    ));
    assert_eq!(sha256(&db), before);
}

#[test]
fn a_file_that_is_not_a_database_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("strata.db");
    let junk: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(&db, &junk).unwrap();
    let err = Store::open(&db).unwrap_err();
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
    assert!(err.to_string().contains(&db.display().to_string()));
    assert_eq!(fs::read(&db).unwrap(), junk);
}

#[cfg(unix)]
#[test]
fn database_files_are_private_and_a_missing_data_dir_is_created_0700() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("home/data");
    let db = data.join("strata.db");
    let mut store = Store::open(&db).unwrap();
    let (s, p) = store_support::session("/w", "t");
    store.create_session(&s, &p).unwrap();

    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&db), 0o600);
    let wal = data.join("strata.db-wal");
    let shm = data.join("strata.db-shm");
    assert!(wal.exists() && shm.exists(), "WAL companions exist while open");
    assert_eq!(mode(&wal), 0o600);
    assert_eq!(mode(&shm), 0o600);
}

#[cfg(unix)]
#[test]
fn an_existing_world_readable_database_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("strata.db");
    drop(Store::open(&db).unwrap());
    fs::set_permissions(&db, fs::Permissions::from_mode(0o644)).unwrap();
    drop(Store::open(&db).unwrap());
    assert_eq!(fs::metadata(&db).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_data_dir_that_cannot_be_created_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    fs::write(&home, "a file where the directory should be").unwrap();
    let err = Store::open(home.join("data/strata.db")).unwrap_err();
    // The file in the way is named, not the parent's permissions.
    assert!(matches!(err, StoreError::NotWritable { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&home.display().to_string()), "{msg}");
    assert!(
        msg.contains("something that is not a directory is in its place"),
        "{msg}"
    );
    assert!(msg.contains("STRATA_HOME"), "{msg}");
    // A parent without write permission is still said as such (root
    // writes anywhere, so the case is built with a read-only mount of
    // nothing: a path under /proc, which no one may create in).
    let err = Store::open(std::path::Path::new("/proc/strata-test/data/strata.db")).unwrap_err();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("cannot create the data directory /proc/strata-test/data"),
        "{err}"
    );
}

#[test]
fn a_database_path_that_cannot_be_opened_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("strata.db");
    fs::create_dir(&db).unwrap();
    let err = Store::open(&db).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("cannot open/create the database at {}: ", db.display())),
        "{msg}"
    );
    assert!(
        msg.ends_with("check that the data directory is writable (STRATA_HOME)"),
        "{msg}"
    );
}
