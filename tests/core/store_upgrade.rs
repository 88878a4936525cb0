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
    conn.execute_batch(include_str!("../../migrations/0001_initial.sql"))
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
        conn.execute_batch(include_str!("../../migrations/0002_stream_writer.sql"))
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

/// Migration 5 adds the `.mcp.json` decisions: a schema-4 database keeps
/// its sessions and tool settings and stores decisions afterwards.
#[test]
fn a_schema_four_database_gains_the_mcp_decisions_and_keeps_its_data() {
    use strata::store::{McpDecision, McpTrust};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strata.db");
    schema_one(&path);
    {
        let conn = Connection::open(&path).unwrap();
        for sql in [
            include_str!("../../migrations/0002_stream_writer.sql"),
            include_str!("../../migrations/0003_compaction.sql"),
            include_str!("../../migrations/0004_tools.sql"),
        ] {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute_batch(
            "PRAGMA user_version = 4;
             INSERT INTO session_tools (session_id, disabled) VALUES ('0190c3a0-0000-7000-8000-000000000001', '[\"shell\"]');",
        )
        .unwrap();
        let has_table: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'mcp_trust'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(has_table, 0, "schema 4 has no decisions table");
    }
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), KNOWN_VERSION);
    const { assert!(KNOWN_VERSION >= 5) };
    let session = store
        .find_session("0190c3a0-0000-7000-8000-000000000001")
        .unwrap();
    assert_eq!(store.session_tools(session.id).unwrap().disabled, ["shell"]);
    assert_eq!(store.messages(session.id, false).unwrap().len(), 2);
    assert_eq!(store.mcp_trust("/w").unwrap(), None);
    let trust = McpTrust {
        workspace: "/w".to_owned(),
        sha256: "0f".repeat(32),
        decision: McpDecision::Accepted,
        decided_at: 7,
    };
    store.set_mcp_trust(&trust).unwrap();
    assert_eq!(store.mcp_trust("/w").unwrap(), Some(trust));
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

/// Migration 6 adds the app's input history: a schema-5 database keeps its
/// sessions and decisions and keeps inputs afterwards.
#[test]
fn a_schema_five_database_gains_the_input_history_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strata.db");
    schema_one(&path);
    {
        let conn = Connection::open(&path).unwrap();
        for sql in [
            include_str!("../../migrations/0002_stream_writer.sql"),
            include_str!("../../migrations/0003_compaction.sql"),
            include_str!("../../migrations/0004_tools.sql"),
            include_str!("../../migrations/0005_mcp_trust.sql"),
        ] {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute_batch(
            "PRAGMA user_version = 5;
             INSERT INTO mcp_trust (workspace, sha256, decision, decided_at) VALUES ('/w', 'ab', 'declined', 3);",
        )
        .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), KNOWN_VERSION);
    const { assert!(KNOWN_VERSION >= 6) };
    let session = store
        .find_session("0190c3a0-0000-7000-8000-000000000001")
        .unwrap();
    assert_eq!(store.messages(session.id, false).unwrap().len(), 2);
    assert!(store.mcp_trust("/w").unwrap().is_some());
    assert!(store.input_history("/w", 10).unwrap().is_empty());
    store.push_input("/w", "hello", 9, 1_000).unwrap();
    assert_eq!(store.input_history("/w", 10).unwrap(), ["hello"]);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

/// Migration 7 adds `excluded`: a schema-3 database (a pinned row among its
/// messages) keeps its pin, and pinning and excluding then work and
/// survive reopening.
#[test]
fn a_schema_three_database_keeps_its_pin_and_takes_pin_and_exclude() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strata.db");
    schema_one(&path);
    {
        let conn = Connection::open(&path).unwrap();
        for sql in [
            include_str!("../../migrations/0002_stream_writer.sql"),
            include_str!("../../migrations/0003_compaction.sql"),
        ] {
            conn.execute_batch(sql).unwrap();
        }
        conn.execute_batch(
            "PRAGMA user_version = 3;
             INSERT INTO messages (id, session_id, seq, role, content, kind, status, created_at, pinned)
               VALUES ('0190c3a0-0000-7000-8000-0000000000a3', '0190c3a0-0000-7000-8000-000000000001', 3, 'user', 'keep this', 'normal', 'complete', 3, 1);",
        )
        .unwrap();
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('messages')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            !columns.iter().any(|c| c == "excluded"),
            "schema 3 has no excluded column"
        );
    }
    let id = |s: &str| s.parse::<strata::domain::MessageId>().unwrap();
    let session = {
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), KNOWN_VERSION);
        let session = store
            .find_session("0190c3a0-0000-7000-8000-000000000001")
            .unwrap();
        let messages = store.messages(session.id, false).unwrap();
        let flags: Vec<(bool, bool)> = messages.iter().map(|m| (m.pinned, m.excluded)).collect();
        assert_eq!(flags, [(false, false), (false, false), (true, false)]);
        store
            .set_pinned(session.id, &[id("0190c3a0-0000-7000-8000-0000000000a1")], true)
            .unwrap();
        store
            .set_excluded(session.id, &[id("0190c3a0-0000-7000-8000-0000000000a2")], true)
            .unwrap();
        store
            .set_pinned(session.id, &[id("0190c3a0-0000-7000-8000-0000000000a3")], false)
            .unwrap();
        session
    };
    let store = Store::open(&path).unwrap();
    let flags: Vec<(bool, bool)> = store
        .messages(session.id, false)
        .unwrap()
        .iter()
        .map(|m| (m.pinned, m.excluded))
        .collect();
    assert_eq!(flags, [(true, false), (false, true), (false, false)]);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}
