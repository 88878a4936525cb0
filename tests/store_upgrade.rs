//! Upgrading a database written by an older strata: the data stays, the new
//! columns work, and a reply left streaming by the older, dead writer is
//! recovered as interrupted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rusqlite::Connection;
use strata::domain::MessageStatus;
use strata::store::{KNOWN_VERSION, Store};

/// A schema-1 database as the first release wrote it (migration 0001 is
/// never edited, so its SQL is that release's schema).
fn schema_one(path: &std::path::Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(include_str!("../migrations/0001_initial.sql"))
        .unwrap();
    conn.execute_batch(
        "PRAGMA user_version = 1;
         INSERT INTO sessions (id, title, workspace, model, provider, created_at, updated_at)
           VALUES ('0190c3a0-0000-7000-8000-000000000001', 'old', '/w', 'gpt-4o', 'openai', 1, 1);
         INSERT INTO messages (id, session_id, seq, role, content, kind, status, created_at)
           VALUES ('0190c3a0-0000-7000-8000-0000000000a1', '0190c3a0-0000-7000-8000-000000000001', 1, 'user', 'hello', 'normal', 'complete', 1),
                  ('0190c3a0-0000-7000-8000-0000000000a2', '0190c3a0-0000-7000-8000-000000000001', 2, 'assistant', 'half a rep', 'normal', 'streaming', 2);",
    )
    .unwrap();
}

#[test]
fn a_schema_one_database_is_upgraded_and_its_dead_stream_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strata.db");
    schema_one(&path);
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), KNOWN_VERSION);
    let session = store
        .find_session("0190c3a0-0000-7000-8000-000000000001")
        .unwrap();
    assert_eq!(session.title, "old");
    let messages = store.messages(session.id, false).unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].status, MessageStatus::Streaming);
    // No writer was recorded by the old schema: the reply cannot be live.
    assert_eq!(store.recover_interrupted(|_| true).unwrap(), 1);
    let messages = store.messages(session.id, false).unwrap();
    assert_eq!(messages[1].status, MessageStatus::Interrupted);
    assert_eq!(messages[1].content, "half a rep");
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

/// The messages table is rebuilt by migration 3 (positions unique among
/// active rows only): usage rows keep their message links, the search index
/// and the session counters keep working.
#[test]
fn a_schema_two_database_keeps_usage_links_search_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strata.db");
    schema_one(&path);
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(include_str!("../migrations/0002_stream_writer.sql"))
            .unwrap();
        conn.execute_batch(
            "PRAGMA user_version = 2;
             INSERT INTO usage (session_id, message_id, model, prompt_tokens, estimated_prompt_tokens, created_at)
               VALUES ('0190c3a0-0000-7000-8000-000000000001', '0190c3a0-0000-7000-8000-0000000000a2', 'gpt-4o', 12, 10, 3);",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), KNOWN_VERSION);
    let session = store
        .find_session("0190c3a0-0000-7000-8000-000000000001")
        .unwrap();
    let usage = store.usage(session.id).unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(
        usage[0].message_id.map(|m| m.to_string()).as_deref(),
        Some("0190c3a0-0000-7000-8000-0000000000a2")
    );
    let found = store
        .list_sessions(&strata::store::SessionQuery {
            search: Some("hello".to_owned()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].messages, 2);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}
