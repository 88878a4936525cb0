#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Writers that race: two OS processes appending to one session through
//! their own connections, and several threads sharing one `StoreHandle`.

use crate::support::store as store_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use strata::domain::SessionId;
use strata::store::{Store, StoreHandle};

const PER_WRITER: usize = 200;
const DB_VAR: &str = "STRATA_TEST_WRITER_DB";
const SESSION_VAR: &str = "STRATA_TEST_WRITER_SESSION";
const NAME_VAR: &str = "STRATA_TEST_WRITER_NAME";

/// Waits (bounded) until every file in `paths` exists, so both writers start
/// appending at about the same moment.
fn wait_for(paths: &[PathBuf]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !paths.iter().all(|p| p.exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The body of a child writer process (run only by
/// `two_processes_appending_to_one_session_lose_nothing`).
#[test]
#[ignore = "run as a child process by two_processes_appending_to_one_session_lose_nothing"]
fn child_writer() {
    let db = PathBuf::from(std::env::var(DB_VAR).expect("run by the parent test"));
    let session: SessionId = std::env::var(SESSION_VAR).unwrap().parse().unwrap();
    let name = std::env::var(NAME_VAR).unwrap();
    let mut store = Store::open(&db).unwrap();
    let dir = db.parent().unwrap();
    std::fs::write(dir.join(format!("ready-{name}")), b"").unwrap();
    wait_for(&[dir.join("ready-a"), dir.join("ready-b")]);
    for i in 0..PER_WRITER {
        let mut m = store_support::user(session, &format!("{name} {i}"));
        store.append_message(&mut m).unwrap();
    }
}

fn spawn_writer(db: &Path, session: SessionId, name: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store_concurrency::child_writer",
            "--ignored",
            "--test-threads=1",
        ])
        .env(DB_VAR, db)
        .env(SESSION_VAR, session.to_string())
        .env(NAME_VAR, name)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn two_processes_appending_to_one_session_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("strata.db");
    let (s, p) = store_support::session("/w", "shared");
    Store::open(&db).unwrap().create_session(&s, &p).unwrap();

    let a = spawn_writer(&db, s.id, "a");
    let b = spawn_writer(&db, s.id, "b");
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "writer failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("1 passed"), "the child ran no writer: {stdout}");
    }

    let store = Store::open(&db).unwrap();
    let msgs = store.messages(s.id, false).unwrap();
    assert_eq!(msgs.len(), 2 * PER_WRITER);
    let seqs: Vec<i64> = msgs.iter().map(|m| m.seq).collect();
    assert_eq!(
        seqs,
        (1..=i64::try_from(2 * PER_WRITER).unwrap()).collect::<Vec<_>>()
    );
    for name in ["a", "b"] {
        let mine: Vec<&str> = msgs
            .iter()
            .filter_map(|m| m.content.strip_prefix(&format!("{name} ")))
            .collect();
        let expected: Vec<String> = (0..PER_WRITER).map(|i| i.to_string()).collect();
        assert_eq!(
            mine, expected,
            "writer {name}'s messages are all there, in its order"
        );
    }
    let row = &store.list_sessions(&Default::default()).unwrap()[0];
    assert_eq!(row.messages, 2 * PER_WRITER as u64);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn writes_from_many_threads_through_one_handle_are_applied_in_order() {
    let mut store = Store::open_in_memory().unwrap();
    let (s, p) = store_support::session("/w", "t");
    store.create_session(&s, &p).unwrap();
    let handle = StoreHandle::spawn(store).unwrap();

    let threads: Vec<_> = (0..4)
        .map(|t| {
            let handle = handle.clone();
            std::thread::spawn(move || {
                let mut seqs = Vec::new();
                for i in 0..100 {
                    let mut m = store_support::user(s.id, &format!("t{t} {i}"));
                    let seq = handle
                        .call(move |store| store.append_message(&mut m).map(|()| m.seq))
                        .unwrap()
                        .unwrap();
                    seqs.push(seq);
                }
                seqs
            })
        })
        .collect();
    let per_thread: Vec<Vec<i64>> = threads.into_iter().map(|t| t.join().unwrap()).collect();

    for seqs in &per_thread {
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "each thread's writes land in its order"
        );
    }
    let mut all: Vec<i64> = per_thread.concat();
    all.sort_unstable();
    assert_eq!(all, (1..=400).collect::<Vec<_>>());

    let msgs = handle
        .call(move |store| store.messages(s.id, false))
        .unwrap()
        .unwrap();
    assert_eq!(msgs.len(), 400);
    for (t, seqs) in per_thread.iter().enumerate() {
        for (i, seq) in seqs.iter().enumerate() {
            let m = &msgs[usize::try_from(*seq).unwrap() - 1];
            assert_eq!(m.content, format!("t{t} {i}"));
        }
    }
}
