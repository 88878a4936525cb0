//! What a manual compression must not do without a word: make the request
//! bigger (applied only with `--force`), word a dry run as done, let the
//! embedded model write a summary, or ignore Ctrl-C. The real binary
//! against a temporary home and a local OpenAI-compatible server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::compress_cli as compress_cli_support;

use common::Sandbox;
use compress_cli_support::*;
use std::time::Duration;

#[test]
fn a_compression_that_makes_the_request_bigger_is_applied_only_with_force() {
    let sb = Sandbox::new();
    // Short messages: the summary with its notice is longer than they are.
    let id = import_openai(&sb, &history(12, 10));
    let before = state(&sb, &id);
    let out = json_of(
        &sb.cmd(&["compress", &id, "--summarizer", "extractive", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(out["noop"], true, "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Not compressed: the summary would make the request bigger")
            && reason.contains("--force"),
        "{reason}"
    );
    assert!(out["tokens_after"].as_u64().unwrap() > out["tokens_before"].as_u64().unwrap());
    assert_eq!(state(&sb, &id), before, "nothing changed");
    assert_eq!(compactions(&sb), 0);
    let forced = json_of(
        &sb.cmd(&["compress", &id, "--summarizer", "extractive", "--force", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(forced["noop"], false, "{forced}");
    assert_eq!(compactions(&sb), 1);
}

#[test]
fn a_dry_run_says_what_would_happen() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(12, 400));
    let out = sb.cmd(&["compress", &id, "--dry-run"]).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("Would compress "), "{stdout}");
    assert!(!stdout.contains("Compressed"), "{stdout}");
    assert_eq!(compactions(&sb), 0);
}

#[test]
fn the_embedded_model_is_never_asked_for_a_summary() {
    let sb = Sandbox::new();
    let file = sb.home.path().join("history.json");
    std::fs::write(&file, history(12, 400)).unwrap();
    let out = sb
        .cmd(&["--provider", "local", "import", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let out = json_of(
        &sb.cmd(&["compress", &id, "--summarizer", "model", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(out["summarizer"], "extractive", "{out}");
    let warnings = out["warnings"].to_string();
    assert!(
        warnings.contains("The embedded model cannot write summaries"),
        "{warnings}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_compression_cancels_it_and_changes_nothing() {
    let sb = Sandbox::new();
    let id = import_openai(&sb, &history(20, 400));
    let before = state(&sb, &id);
    let (_server, child) = stalled_summariser(&sb, &["compress", &id, "--summarizer", "model"]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "it stopped on Ctrl-C");
    assert_eq!(state(&sb, &id), before);
    assert_eq!(compactions(&sb), 0);
}
