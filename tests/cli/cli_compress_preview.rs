//! `strata compress --preview`, `--summary-file`, `--keep-last` and
//! `--up-to`, run as the real binary against a temporary home and, where a
//! model summarises, a local OpenAI-compatible server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::server;

use crate::support::compress_cli as compress_cli_support;

use common::Sandbox;
use compress_cli_support::*;
use serde_json::Value;
use server::{Reply, Server};
use std::io::Write as _;
use strata::compress::{END_MARKER, NOTICE, split_summary};

const SUMMARY: &str = "## Completed work\n- Fixed src/mod0.rs to src/mod13.rs.\n- Ran `cargo test -p m3`.";

fn summary_message(sb: &Sandbox, id: &str) -> String {
    let summaries: Vec<String> = active(sb, id)
        .into_iter()
        .filter(|m| m.2 == "summary")
        .map(|m| m.3)
        .collect();
    assert_eq!(summaries.len(), 1, "exactly one active summary");
    summaries[0].clone()
}

/// The whole of `show --json` but the session row (its `updated_at` moves).
fn shown(sb: &Sandbox, id: &str) -> (Value, Value) {
    let show = sb.json(&["show", id, "--json", "--archived"]);
    (show["messages"].clone(), show["system_prompt"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_changes_nothing_and_its_summary_is_then_stored_exactly_without_a_second_call() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(20, 400));
    let server = Server::start(vec![Reply::sse(sse(SUMMARY, None))]).await;
    let ids: Vec<String> = state(&sb, &id).0.into_iter().map(|m| m.0).collect();
    let before = store_checksum(&sb);

    let preview = json_of(
        &run(openai(
            &sb,
            &server.base_url(),
            &["compress", &id, "--preview", "--json"],
        ))
        .await,
    );
    assert_eq!(store_checksum(&sb), before, "a preview writes nothing");
    assert_eq!(server.requests().len(), 1, "the preview ran the model");
    assert_eq!(preview["preview"], true);
    assert_eq!(preview["noop"], false);
    assert_eq!(preview["compaction_id"], Value::Null);
    assert_eq!(preview["summarizer"], "gpt-4o");
    assert_eq!(preview["summary"], SUMMARY, "the body alone, without the notice");
    assert!(
        preview["feedback"]
            .as_str()
            .unwrap()
            .starts_with("Would compress 40 → ")
    );
    let kept = preview["kept_verbatim"].as_array().unwrap();
    let positions: Vec<u64> = kept.iter().map(|k| k["pos"].as_u64().unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert_eq!(positions.last(), Some(&40), "the tail stays");
    for k in kept {
        let pos = k["pos"].as_u64().unwrap() as usize;
        assert_eq!(k["id"].as_str().unwrap(), ids[pos - 1], "pos counts from 1");
        assert!(k["tokens"].as_u64().unwrap() > 0);
    }
    // The tail's first message (a user's, after the head's reply) takes in
    // the summary to keep the alternation; its own text stays whole after
    // the summary, so it is listed as kept.
    let tail_from = preview["tail_from"].as_u64().unwrap();
    assert_eq!(tail_from, 35);
    // The protected start (1, 2) comes before the summary: not listed.
    assert_eq!(positions, [35, 36, 37, 38, 39, 40]);

    let file = sb.home.path().join("summary.md");
    std::fs::write(&file, preview["summary"].as_str().unwrap()).unwrap();
    let applied = json_of(
        &run(openai(
            &sb,
            &server.base_url(),
            &[
                "compress",
                &id,
                "--summary-file",
                file.to_str().unwrap(),
                "--json",
            ],
        ))
        .await,
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the previewed summary is not generated again"
    );
    assert_eq!(applied["edited"], true);
    assert_eq!(applied["preview"], false);
    assert!(applied["compaction_id"].is_string());
    for figure in ["messages_after", "tokens_after", "tail_from", "kept_verbatim"] {
        assert_eq!(applied[figure], preview[figure], "{figure} as previewed");
    }
    let stored = summary_message(&sb, &id);
    assert!(stored.starts_with(NOTICE.trim()), "{stored}");
    assert!(stored.contains(END_MARKER.trim()), "{stored}");
    let (body, merged) = split_summary(&stored);
    assert_eq!(body, SUMMARY, "exactly the previewed summary");
    assert!(
        merged.is_some_and(|m| m.starts_with("Request 17: ")),
        "merged into message {tail_from}, the 18th request: {stored}"
    );
    let context = sb.json(&["context", &id, "--json"]);
    let row = &context["compression"]["last_compaction"];
    assert_eq!(row["id"], applied["compaction_id"]);
    assert_eq!(row["edited"], true);
    assert_eq!(row["kind"], "summary");
}

#[test]
fn an_edited_summary_is_redacted_framed_and_marked_and_undo_restores_everything() {
    let sb = Sandbox::new();
    let id = sb.import(&history(30, 600));
    let before = shown(&sb, &id);
    let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef";
    let edited = format!("## Decisions\n- Keep the parser's table.\n- The key {key} was rotated.\n\n");
    let mut child = sb
        .cmd(&["compress", &id, "--summary-file", "-", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(edited.as_bytes()).unwrap();
    let out = json_of(&child.wait_with_output().unwrap());
    assert_eq!(out["edited"], true);
    assert!(!out.to_string().contains(key));
    let stored = summary_message(&sb, &id);
    assert!(stored.starts_with(NOTICE.trim()), "{stored}");
    let body = split_summary(&stored).0;
    assert!(
        body.starts_with("## Decisions\n- Keep the parser's table.\n- The key [REDACTED"),
        "{body}"
    );
    assert!(!stored.contains(key));
    let conn = rusqlite::Connection::open(sb.db()).unwrap();
    let (edited_flag, kind): (bool, String) = conn
        .query_row("SELECT edited, kind FROM compactions", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(edited_flag);
    assert_eq!(kind, "summary");
    drop(conn);

    let undone = sb.json(&["undo-compress", &id, "--json"]);
    assert_eq!(undone["compaction_id"], out["compaction_id"]);
    assert_eq!(
        shown(&sb, &id),
        before,
        "every message and the prompt as they were"
    );
}

#[test]
fn an_empty_summary_file_is_refused_and_nothing_changes() {
    let sb = Sandbox::new();
    let id = sb.import(&history(20, 300));
    let before = store_checksum(&sb);
    let file = sb.home.path().join("empty.md");
    std::fs::write(&file, " \n\n").unwrap();
    let out = sb.run(&["compress", &id, "--summary-file", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = common::one_line_error(&out);
    assert!(
        err.contains("is empty") && err.contains("--preview --json"),
        "{err}"
    );
    let missing = sb.run(&["compress", &id, "--summary-file", "/nonexistent/summary.md"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(common::one_line_error(&missing).contains("cannot read the summary file"));
    assert_eq!(store_checksum(&sb), before);

    // A preview for people says what stays and how to apply it.
    let text = sb.ok(&["compress", &id, "--preview", "--summarizer", "extractive"]);
    assert!(text.starts_with("Would compress 40 → "), "{text}");
    assert!(
        text.contains("kept verbatim (") && text.contains("--summary-file FILE"),
        "{text}"
    );
    assert_eq!(store_checksum(&sb), before);
}

#[test]
fn keep_last_2_keeps_exactly_the_last_two_exchanges() {
    let sb = Sandbox::new();
    let id = sb.import(&history(10, 300));
    let before = active(&sb, &id);
    assert_eq!(before.len(), 20);
    let out = sb.json(&[
        "compress",
        &id,
        "--keep-last",
        "2",
        "--summarizer",
        "extractive",
        "--json",
    ]);
    assert_eq!(out["noop"], false, "{out}");
    assert_eq!(out["tail_from"], 17, "the request of the second-last exchange");
    let after = active(&sb, &id);
    let n = after.len();
    // The head (the first request and its reply), the summary merged into
    // the first kept request, then the rest of the two exchanges verbatim.
    assert_eq!(n, 2 + 4);
    assert_eq!(after[..2], before[..2]);
    assert_eq!(after[n - 3..], before[17..]);
    let merged = &after[n - 4];
    assert_eq!((merged.1.as_str(), merged.2.as_str()), ("user", "summary"));
    assert_eq!(split_summary(&merged.3).1, Some(before[16].3.as_str()));
    let kept: Vec<u64> = out["kept_verbatim"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["pos"].as_u64().unwrap())
        .collect();
    // 17 holds the summary with its own text whole after it.
    assert_eq!(kept, [17, 18, 19, 20], "only what follows the summary");
    sb.json(&["undo-compress", &id, "--json"]);

    // Keeping every exchange leaves nothing to compress; none is refused.
    let all = sb.json(&["compress", &id, "--keep-last", "10", "--json"]);
    assert_eq!(all["noop"], true);
    assert!(
        all["reason"].as_str().unwrap().contains("protected start"),
        "{all}"
    );
    let none = sb.run(&["compress", &id, "--keep-last", "0"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(common::one_line_error(&none).contains("at least 1"));
    assert_eq!(compactions(&sb), 0);
}

#[test]
fn up_to_a_request_summarises_its_exchange_and_says_where_it_landed() {
    let sb = Sandbox::new();
    let id = sb.import(&history(10, 300));
    let before = active(&sb, &id);
    // Position 9 is request 4; its reply goes into the summary with it.
    let out = sb.json(&[
        "compress",
        &id,
        "--up-to",
        "9",
        "--summarizer",
        "extractive",
        "--json",
    ]);
    assert_eq!(out["tail_from"], 11, "{out}");
    let warnings = out["warnings"].to_string();
    assert!(warnings.contains("ends at message 10"), "{warnings}");
    let after = active(&sb, &id);
    assert_eq!(
        after[after.len() - 9..],
        before[11..],
        "from the reply of request 5 on, verbatim"
    );
    assert_eq!(
        split_summary(&after[after.len() - 10].3).1,
        Some(before[10].3.as_str())
    );
    sb.json(&["undo-compress", &id, "--json"]);

    // The same message by its id; one inside the protected head is nothing to compress.
    let by_id = sb.json(&["compress", &id, "--up-to", &before[8].0, "--dry-run", "--json"]);
    assert_eq!(by_id["tail_from"], 11);
    let head = sb.json(&["compress", &id, "--up-to", "1", "--json"]);
    assert_eq!(head["noop"], true);
    let far = sb.run(&["compress", &id, "--up-to", "99"]);
    assert_eq!(far.status.code(), Some(2));
    assert!(common::one_line_error(&far).contains("20 active messages"));
    assert_eq!(compactions(&sb), 0);
}
