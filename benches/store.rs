//! Store benchmarks (DESIGN §12 targets: append ≤ 1 ms p99, listing 10,000
//! sessions ≤ 50 ms, an FTS query ≤ 30 ms). All on a file database in WAL
//! mode, as in use. The 10,000-session database is built once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};
use strata::domain::{
    Fingerprint, Message, PromptId, PromptMode, Role, Session, SessionId, SystemPrompt, TokenCount,
};
use strata::store::{SessionQuery, Store};

fn new_session(store: &mut Store, title: &str, workspace: &str) -> SessionId {
    let id = SessionId::new();
    let prompt = SystemPrompt {
        id: PromptId::new(),
        session_id: id,
        version: 1,
        text: "You are a helpful assistant.".repeat(40),
        layers: Vec::new(),
        boundary_offset: Some(100),
        sha256: "00".repeat(32),
        fingerprint: Fingerprint {
            provider: strata::domain::ProviderKind::OpenAi,
            model: "gpt-4o".into(),
            mode: PromptMode::Full,
            tool_set_hash: String::new(),
            template_version: 1,
        },
        created_at: 1_700_000_000_000,
    };
    let session = Session {
        id,
        title: title.into(),
        workspace: workspace.into(),
        model: "gpt-4o".into(),
        provider: strata::domain::ProviderKind::OpenAi,
        current_prompt_id: Some(prompt.id),
        parent_id: None,
        created_at: 1_700_000_000_000,
        updated_at: 1_700_000_000_000,
    };
    store.create_session(&session, &prompt).unwrap();
    id
}

fn message(session: SessionId, i: usize) -> Message {
    let role = if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    };
    let mut m = Message::new(
        session,
        role,
        format!(
            "Message {i}: please look at the parser in src/lib.rs line {i}; the tokenizer returns an error when the input ends mid-token and we should retry."
        ),
        1_700_000_000_000,
    );
    m.tokens = Some(TokenCount {
        tokenizer: "o200k_base".into(),
        tokens: 30,
    });
    m
}

fn bench_append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("append.db")).unwrap();
    let session = new_session(&mut store, "append", "/w");

    // Percentiles of single appends, which criterion does not report.
    let mut times: Vec<Duration> = (0..2_000)
        .map(|i| {
            let mut m = message(session, i);
            let start = Instant::now();
            store.append_message(&mut m).unwrap();
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    let pct = |p: usize| times[times.len() * p / 100 - 1];
    println!(
        "append_message over 2000 appends: p50 {:?}, p99 {:?}, max {:?}",
        pct(50),
        pct(99),
        times[times.len() - 1]
    );

    let mut i = 0;
    c.bench_function("append_message", |b| {
        b.iter(|| {
            i += 1;
            let mut m = message(session, i);
            store.append_message(black_box(&mut m)).unwrap();
        });
    });
}

fn bench_bulk_import(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("bulk");
    group.sample_size(10);
    let mut n = 0;
    group.bench_function("append_messages_10000", |b| {
        b.iter_batched(
            || {
                n += 1;
                let mut store = Store::open(dir.path().join(format!("bulk{n}.db"))).unwrap();
                let session = new_session(&mut store, "import", "/w");
                let msgs: Vec<Message> = (0..10_000).map(|i| message(session, i)).collect();
                (store, session, msgs)
            },
            |(mut store, session, mut msgs)| {
                store.append_messages(session, &mut msgs).unwrap();
                (store, msgs)
            },
            BatchSize::PerIteration,
        );
    });

    let mut store = Store::open(dir.path().join("load.db")).unwrap();
    let session = new_session(&mut store, "load", "/w");
    let mut msgs: Vec<Message> = (0..10_000).map(|i| message(session, i)).collect();
    store.append_messages(session, &mut msgs).unwrap();
    group.bench_function("load_10000_messages", |b| {
        b.iter(|| black_box(store.messages(session, false).unwrap()));
    });
    group.finish();
}

/// 10,000 sessions, each with a title and three messages; one session in a
/// hundred mentions "zanzibar".
fn ten_thousand_sessions(store: &mut Store) {
    for s in 0..10_000 {
        let topic = if s % 100 == 0 { "zanzibar" } else { "parser" };
        let session = new_session(
            store,
            &format!("Session {s} about the {topic}"),
            &format!("/w/{}", s % 20),
        );
        let mut msgs: Vec<Message> = (0..3).map(|i| message(session, s * 3 + i)).collect();
        store.append_messages(session, &mut msgs).unwrap();
    }
}

fn bench_list_and_search(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("many.db")).unwrap();
    let start = Instant::now();
    ten_thousand_sessions(&mut store);
    println!("built 10,000 sessions in {:?}", start.elapsed());

    let mut group = c.benchmark_group("sessions_10000");
    group.sample_size(20);
    group.bench_function("list_all", |b| {
        b.iter(|| black_box(store.list_sessions(&SessionQuery::default()).unwrap()));
    });
    let first_page = SessionQuery {
        limit: Some(100),
        ..SessionQuery::default()
    };
    group.bench_function("list_first_100", |b| {
        b.iter(|| black_box(store.list_sessions(&first_page).unwrap()));
    });
    let rare = SessionQuery {
        search: Some("zanzibar".into()),
        ..SessionQuery::default()
    };
    assert_eq!(store.list_sessions(&rare).unwrap().len(), 100);
    group.bench_function("fts_rare_word", |b| {
        b.iter(|| black_box(store.list_sessions(&rare).unwrap()));
    });
    let common = SessionQuery {
        search: Some("tokenizer retry".into()),
        ..SessionQuery::default()
    };
    assert_eq!(store.list_sessions(&common).unwrap().len(), 10_000);
    group.bench_function("fts_word_in_every_session", |b| {
        b.iter(|| black_box(store.list_sessions(&common).unwrap()));
    });
    group.finish();
}

criterion_group!(benches, bench_append, bench_bulk_import, bench_list_and_search);
criterion_main!(benches);
