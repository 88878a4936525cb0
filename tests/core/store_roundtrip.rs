#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every domain type goes into the store and comes back equal; the session
//! counters, lookups and small updates behave as documented.

use crate::support::store as store_support;

use store_support::{prompt, rich_assistant, session, tool_result, user};
use strata::domain::{
    Compaction, CompactionId, CompactionTrigger, MessageStatus, Role, SessionId, TokenCount, Usage,
};
use strata::store::{SessionQuery, Store, StoreError};

#[test]
fn session_and_prompt_round_trip() {
    let mut store = Store::open_in_memory().unwrap();
    let (mut s, p) = session("/w/a", "first");
    s.current_prompt_id = None; // the store sets it from the prompt
    s.parent_id = Some(SessionId::new());
    // A parent that exists, so the foreign key holds.
    let (mut parent, parent_prompt) = session("/w/a", "parent");
    parent.id = s.parent_id.unwrap();
    let parent_prompt = strata::domain::SystemPrompt {
        session_id: parent.id,
        ..parent_prompt
    };
    store.create_session(&parent, &parent_prompt).unwrap();
    store.create_session(&s, &p).unwrap();

    let back = store.session(s.id).unwrap().unwrap();
    assert_eq!(back.current_prompt_id, Some(p.id));
    assert_eq!(
        back,
        strata::domain::Session {
            current_prompt_id: Some(p.id),
            ..s.clone()
        }
    );
    assert_eq!(store.current_prompt(s.id).unwrap(), Some(p.clone()));
    assert_eq!(store.prompt_versions(s.id).unwrap(), vec![p]);
    assert_eq!(store.session(SessionId::new()).unwrap(), None);
}

#[test]
fn messages_round_trip_with_every_field() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();

    let mut plain = user(s.id, "hello");
    let mut rich = rich_assistant(s.id);
    let mut tool = tool_result(s.id);
    store.append_message(&mut plain).unwrap();
    store.append_message(&mut rich).unwrap();
    store.append_message(&mut tool).unwrap();
    assert_eq!((plain.seq, rich.seq, tool.seq), (1, 2, 3));

    let back = store.messages(s.id, true).unwrap();
    assert_eq!(back, vec![plain.clone(), rich.clone(), tool.clone()]);
    assert_eq!(store.message(rich.id).unwrap(), Some(rich));
}

#[test]
fn archived_messages_round_trip_and_leave_the_counters() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();
    let mut first = rich_assistant(s.id); // 42 tokens
    store.append_message(&mut first).unwrap();

    let c = Compaction {
        id: CompactionId::new(),
        session_id: s.id,
        trigger: CompactionTrigger::Overflow,
        topic: Some("the parser".into()),
        first_message_id: Some(first.id),
        last_message_id: Some(first.id),
        summary_message_id: None,
        summarizer: strata::domain::Summarizer::Extractive,
        tokens_before: 2_000_000,
        tokens_after: 90_000,
        messages_before: 10_000,
        messages_after: 120,
        prompt_before_id: Some(p.id),
        prompt_after_id: None,
        undone_at: Some(1_700_000_009_000),
        created_at: 1_700_000_008_000,
        kind: strata::domain::CompactionKind::Edit,
        edited: true,
    };
    store.insert_compaction(&c).unwrap();
    assert_eq!(store.compactions(s.id).unwrap(), vec![c.clone()]);

    let mut archived = tool_result(s.id); // 8 tokens
    archived.archived_by = Some(c.id);
    store.append_message(&mut archived).unwrap();

    assert_eq!(store.messages(s.id, false).unwrap(), vec![first.clone()]);
    assert_eq!(store.messages(s.id, true).unwrap(), vec![first, archived]);
    let row = &store.list_sessions(&SessionQuery::default()).unwrap()[0];
    assert_eq!((row.messages, row.tokens), (1, 42));
}

#[test]
fn usage_round_trips_in_order() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();
    let mut m = rich_assistant(s.id);
    store.append_message(&mut m).unwrap();
    let full = Usage {
        session_id: s.id,
        message_id: Some(m.id),
        model: "gpt-4o".into(),
        prompt_tokens: Some(1234),
        completion_tokens: Some(56),
        cache_read_tokens: Some(1024),
        cache_write_tokens: Some(0),
        reasoning_tokens: Some(7),
        estimated_prompt_tokens: 1240,
        ttft_ms: Some(310),
        duration_ms: Some(2200),
        created_at: 1_700_000_000_999,
        tools_sha256: Some("9f2c".into()),
        cache: Some(strata::domain::CacheCheck {
            predicted_cached_tokens: 1024,
            shared_tokens: 1100,
            cache_break: Some(strata::domain::CacheBreak {
                at: strata::domain::BreakAt::Message {
                    pos: Some(3),
                    message_id: Some(m.id),
                },
                reason: strata::domain::BreakReason::Exclusion,
            }),
        }),
    };
    let sparse = Usage {
        message_id: None,
        tools_sha256: None,
        cache: None,
        prompt_tokens: None,
        completion_tokens: None,
        cache_read_tokens: None,
        cache_write_tokens: None,
        reasoning_tokens: None,
        ttft_ms: None,
        duration_ms: None,
        ..full.clone()
    };
    store.record_usage(&full).unwrap();
    store.record_usage(&sparse).unwrap();
    assert_eq!(store.usage(s.id).unwrap(), vec![full, sparse]);

    // The last answered request's blocks: replaced each time, kept per session.
    assert_eq!(store.cache_prefix(s.id).unwrap(), None);
    let mut snapshot = strata::domain::PrefixSnapshot {
        model: "gpt-4o".into(),
        at_ms: 5,
        prompt_version: 1,
        blocks: vec![strata::domain::PrefixBlock {
            kind: strata::domain::BlockKind::Tools,
            chain: 0xfeed,
            tokens: 300,
        }],
        markers: Vec::new(),
    };
    store.save_cache_prefix(s.id, &snapshot).unwrap();
    snapshot.at_ms = 9;
    store.save_cache_prefix(s.id, &snapshot).unwrap();
    assert_eq!(store.cache_prefix(s.id).unwrap(), Some(snapshot));
}

#[test]
fn a_tool_result_keeps_its_status_and_limits_record() {
    use strata::domain::{ToolResultMeta, ToolStatus};
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();
    let mut m = strata::domain::Message::new(s.id, strata::domain::Role::Tool, "preview…", 5);
    m.tool_call_id = Some("call_1".into());
    m.tool = Some(ToolResultMeta {
        name: "shell".into(),
        status: ToolStatus::Interrupted,
        truncated: true,
        previewed: true,
        spilled_to: Some("/d/spill/s/call_1.txt".into()),
        output_chars: 300_000,
        duration_ms: Some(1_200),
        sandbox: None,
        network: false,
    });
    store.append_message(&mut m).unwrap();
    let back = store.messages(s.id, false).unwrap();
    assert_eq!(back[0].tool, m.tool);
}

#[test]
fn file_changes_are_undone_newest_first() {
    use strata::store::StoredChange;
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();
    assert_eq!(store.last_change(s.id).unwrap(), None);
    for (i, before) in [Some(b"old".to_vec()), None].into_iter().enumerate() {
        store
            .record_change(&StoredChange {
                num: 0,
                session_id: s.id,
                tool_call_id: format!("call_{i}"),
                path: format!("/w/file{i}"),
                before,
                after_sha256: format!("sha{i}"),
                created_at: i64::try_from(i).unwrap(),
            })
            .unwrap();
    }
    let last = store.last_change(s.id).unwrap().unwrap();
    assert_eq!(
        (last.tool_call_id.as_str(), last.before.as_ref()),
        ("call_1", None)
    );
    store.mark_change_undone(last.num, 10).unwrap();
    let next = store.last_change(s.id).unwrap().unwrap();
    assert_eq!(next.before.as_deref(), Some(&b"old"[..]));
}

#[test]
fn counters_follow_appends_and_token_updates() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();
    let mut msgs = vec![user(s.id, "a"), user(s.id, "b"), rich_assistant(s.id)];
    store.append_messages(s.id, &mut msgs).unwrap();
    assert_eq!(msgs.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![1, 2, 3]);

    let row = &store.list_sessions(&SessionQuery::default()).unwrap()[0];
    assert_eq!((row.messages, row.tokens), (3, 42));

    let count = |n| TokenCount {
        tokenizer: "o200k_base".into(),
        tokens: n,
    };
    store
        .set_message_tokens(&[(msgs[0].id, count(5)), (msgs[2].id, count(40))])
        .unwrap();
    let row = &store.list_sessions(&SessionQuery::default()).unwrap()[0];
    assert_eq!((row.messages, row.tokens), (3, 45));
    assert_eq!(store.message(msgs[0].id).unwrap().unwrap().tokens, Some(count(5)));
}

#[test]
fn unknown_message_in_token_update_stores_nothing() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();
    let mut m = user(s.id, "a");
    store.append_message(&mut m).unwrap();
    let count = TokenCount {
        tokenizer: "o200k_base".into(),
        tokens: 9,
    };
    let err = store
        .set_message_tokens(&[(m.id, count.clone()), (strata::domain::MessageId::new(), count)])
        .unwrap_err();
    assert!(matches!(err, StoreError::MessageNotFound { .. }), "{err}");
    assert_eq!(store.message(m.id).unwrap().unwrap().tokens, None);
}

#[test]
fn streaming_updates_replace_content_and_status() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "t");
    store.create_session(&s, &p).unwrap();
    let mut m = strata::domain::Message::new(s.id, Role::Assistant, "", 1);
    m.status = MessageStatus::Streaming;
    store.append_message(&mut m).unwrap();
    m.tokens = Some(strata::domain::TokenCount {
        tokenizer: "o200k_base".into(),
        tokens: 5,
    });
    store
        .set_message_tokens(&[(m.id, m.tokens.clone().unwrap())])
        .unwrap();
    let call = strata::domain::ToolCall {
        id: "c1".into(),
        name: "ls".into(),
        arguments: "{}".into(),
    };
    store
        .update_message(
            m.id,
            "partial ans",
            std::slice::from_ref(&call),
            MessageStatus::Streaming,
        )
        .unwrap();
    let streaming = store.message(m.id).unwrap().unwrap();
    assert_eq!(streaming.tool_calls, vec![call]);
    assert_eq!(
        streaming.tokens, None,
        "a changed content forgets its cached count"
    );
    // The writer (this process) is alive: nothing to recover.
    assert_eq!(store.recover_interrupted(|_| true).unwrap(), 0);
    assert_eq!(
        store
            .recover_interrupted(|pid| pid != std::process::id())
            .unwrap(),
        1
    );
    let back = store.message(m.id).unwrap().unwrap();
    assert_eq!(
        (back.content.as_str(), back.status),
        ("partial ans", MessageStatus::Interrupted)
    );
    store
        .update_message(m.id, "partial answer", &[], MessageStatus::Complete)
        .unwrap();
    assert_eq!(store.messages(s.id, false).unwrap()[0].content, "partial answer");
    let q = SessionQuery {
        search: Some("answer".into()),
        ..SessionQuery::default()
    };
    assert_eq!(
        store.list_sessions(&q).unwrap().len(),
        1,
        "the index follows the update"
    );

    let err = store
        .update_message(
            strata::domain::MessageId::new(),
            "x",
            &[],
            MessageStatus::Complete,
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::MessageNotFound { .. }));
}

#[test]
fn appending_to_a_missing_session_is_a_clear_error() {
    let mut store = Store::open_in_memory().unwrap();
    let mut m = user(SessionId::new(), "lost?");
    let err = store.append_message(&mut m).unwrap_err();
    assert!(matches!(err, StoreError::SessionNotFound { .. }), "{err}");
    assert_eq!(m.seq, 0);
}

#[test]
fn new_prompt_version_becomes_current_and_bumps_updated_at() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p1) = session("/w", "t");
    store.create_session(&s, &p1).unwrap();
    let mut p2 = prompt(s.id, 7, "gpt-4.1");
    store.add_prompt_version(&mut p2).unwrap();
    assert_eq!(p2.version, 2, "the store numbers versions");
    assert_eq!(store.current_prompt(s.id).unwrap(), Some(p2.clone()));
    assert_eq!(store.prompt_versions(s.id).unwrap(), vec![p1, p2.clone()]);
    let back = store.session(s.id).unwrap().unwrap();
    assert_eq!(back.current_prompt_id, Some(p2.id));
    assert!(back.updated_at > s.updated_at);

    // Another process built "version 2" from the same state: it becomes 3.
    let mut again = prompt(s.id, 2, "other");
    store.add_prompt_version(&mut again).unwrap();
    assert_eq!(again.version, 3);
    assert_eq!(store.current_prompt(s.id).unwrap(), Some(again));
    assert_eq!(store.prompt_versions(s.id).unwrap().len(), 3);
}

#[test]
fn model_change_and_rename_update_the_row() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = session("/w", "old title");
    store.create_session(&s, &p).unwrap();
    store
        .update_session_model(s.id, strata::domain::ProviderKind::Anthropic, "claude-sonnet-4-5")
        .unwrap();
    store.rename_session(s.id, "new title").unwrap();
    let back = store.session(s.id).unwrap().unwrap();
    assert_eq!(
        (back.provider.as_str(), back.model.as_str(), back.title.as_str()),
        ("anthropic", "claude-sonnet-4-5", "new title")
    );
    let search = |text: &str| {
        store
            .list_sessions(&SessionQuery {
                search: Some(text.into()),
                ..SessionQuery::default()
            })
            .unwrap()
            .len()
    };
    assert_eq!((search("new"), search("old")), (1, 0));
    let missing = SessionId::new();
    assert!(matches!(
        store.rename_session(missing, "x"),
        Err(StoreError::SessionNotFound { .. })
    ));
}

#[test]
fn find_session_by_full_id_or_unique_prefix() {
    let mut store = Store::open_in_memory().unwrap();
    let (a, pa) = session("/w", "a");
    let (b, pb) = session("/w", "b");
    store.create_session(&a, &pa).unwrap();
    store.create_session(&b, &pb).unwrap();
    let a_id = a.id.to_string();
    let b_id = b.id.to_string();

    assert_eq!(store.find_session(&a_id).unwrap().id, a.id);
    assert_eq!(
        store
            .find_session(&format!(" {} ", a_id.to_uppercase()))
            .unwrap()
            .id,
        a.id
    );
    // The two ids share their time prefix; the first differing character
    // makes a unique prefix.
    let common = a_id.chars().zip(b_id.chars()).take_while(|(x, y)| x == y).count();
    let unique = &b_id[..(common + 1).max(4)];
    assert_eq!(store.find_session(unique).unwrap().id, b.id);
    if common >= 4 {
        let shared = &a_id[..common];
        assert!(matches!(
            store.find_session(shared),
            Err(StoreError::AmbiguousSession { count: 2, .. })
        ));
    }
    assert!(matches!(
        store.find_session("abc"),
        Err(StoreError::IdTooShort { min: 4, .. })
    ));
    assert!(matches!(
        store.find_session("zzzz"),
        Err(StoreError::SessionNotFound { .. })
    ));
    assert!(matches!(
        store.find_session("01*"),
        Err(StoreError::IdTooShort { .. })
    ));
    assert!(matches!(
        store.find_session("0*1?"),
        Err(StoreError::SessionNotFound { .. })
    ));
    let missing = SessionId::new().to_string();
    let err = store.find_session(&missing).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("no session matches '{missing}'; run `strata sessions` to list them")
    );
}

/// A session stored under `id` (so tests can make ids collide).
fn stored_as(store: &mut Store, id: &str, title: &str, updated_at: i64) -> SessionId {
    let (mut s, _) = session("/w", title);
    s.id = id.parse().unwrap();
    s.updated_at = updated_at;
    let p = store_support::prompt(s.id, 1, "gpt-4o");
    s.current_prompt_id = Some(p.id);
    store.create_session(&s, &p).unwrap();
    s.id
}

#[test]
fn find_session_by_short_id_or_its_prefix() {
    let mut store = Store::open_in_memory().unwrap();
    // Made in the same millisecond: the first 8 characters are the same.
    let a = stored_as(&mut store, "0190c3a0-1b2c-7d3e-8f40-5e6f1a2b3c4d", "a", 1);
    let b = stored_as(&mut store, "0190c3a0-1b2c-7d3e-8f40-5e709f8e7d6c", "b", 2);
    assert_eq!(a.short(), "1a2b3c4d");
    assert_eq!(store.find_session("1a2b3c4d").unwrap().id, a);
    assert_eq!(store.find_session(" 9F8E7D6C ").unwrap().id, b);
    assert_eq!(store.find_session("9f8e").unwrap().id, b);
    // Prefixes of the full id still work.
    assert_eq!(store.find_session("0190c3a0-1b2c-7d3e-8f40-5e6f").unwrap().id, a);
    let err = store.find_session("0190c3a0").unwrap_err();
    assert!(
        matches!(err, StoreError::AmbiguousSession { count: 2, .. }),
        "{err}"
    );
    // One sentence naming both by their short ids, newest first.
    assert_eq!(
        err.to_string(),
        "the session id '0190c3a0' matches 2 sessions (9f8e7d6c \"b\", 1a2b3c4d \"a\"); give one of these ids instead"
    );
}

#[test]
fn sessions_sharing_a_short_id_are_named_by_their_full_ids() {
    let mut store = Store::open_in_memory().unwrap();
    let a = stored_as(
        &mut store,
        "0190c3a0-1b2c-7d3e-8f40-00001a2b3c4d",
        "first \u{1b}[2J",
        1,
    );
    let b = stored_as(&mut store, "0190f000-1b2c-7d3e-8f40-00001a2b3c4d", "", 2);
    let err = store.find_session("1a2b3c4d").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the session id '1a2b3c4d' matches 2 sessions ({b}, {a} \"first [2J\"); give one of these ids instead"
        )
    );
    assert_eq!(store.find_session(&a.to_string()).unwrap().id, a);
}

#[test]
fn an_ambiguous_id_names_the_newest_five_and_counts_the_rest() {
    let mut store = Store::open_in_memory().unwrap();
    for i in 0..7 {
        let title = format!("a title long enough to be cut at thirty characters {i}");
        stored_as(
            &mut store,
            &format!("0190c3a0-0000-7000-8000-00000000000{i}"),
            &title,
            i,
        );
    }
    let err = store.find_session("0190").unwrap_err().to_string();
    assert!(
        err.starts_with(
            "the session id '0190' matches 7 sessions (00000006 \"a title long enough to be cut…\", 00000005 "
        ),
        "{err}"
    );
    assert!(
        err.ends_with(
            "00000002 \"a title long enough to be cut…\" and 2 more); give one of these ids instead"
        ),
        "{err}"
    );
}

#[test]
fn listing_is_newest_first_and_filters_by_workspace() {
    let mut store = Store::open_in_memory().unwrap();
    let mut ids = Vec::new();
    for (i, ws) in ["/w/a", "/w/b", "/w/a", "/w/a"].iter().enumerate() {
        let (mut s, p) = session(ws, &format!("s{i}"));
        s.updated_at += i64::try_from(i).unwrap() * 1000;
        store.create_session(&s, &p).unwrap();
        ids.push(s.id);
    }
    let all = store.list_sessions(&SessionQuery::default()).unwrap();
    assert_eq!(
        all.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![ids[3], ids[2], ids[1], ids[0]]
    );
    let in_a = store
        .list_sessions(&SessionQuery {
            workspace: Some("/w/a".into()),
            limit: Some(2),
            ..SessionQuery::default()
        })
        .unwrap();
    assert_eq!(
        in_a.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![ids[3], ids[2]]
    );
    assert_eq!(store.count_sessions_in_workspace("/w/a").unwrap(), 3);
    assert_eq!(store.count_sessions_in_workspace("/w/none").unwrap(), 0);
    assert_eq!(store.latest_session("/w/a").unwrap().unwrap().id, ids[3]);
    assert_eq!(store.latest_session("/w/none").unwrap(), None);

    // Appending to the oldest session moves it to the top.
    let mut m = user(ids[0], "bump");
    store.append_message(&mut m).unwrap();
    assert_eq!(
        store.list_sessions(&SessionQuery::default()).unwrap()[0].id,
        ids[0]
    );
    assert_eq!(store.latest_session("/w/a").unwrap().unwrap().id, ids[0]);
}
