//! The log file: the real binary writes `DATA/logs/strata.log.*` with the
//! request, its phases, timings and retries for a session, never the key or
//! the words of the conversation; `STRATA_LOG` sets the level and a bad
//! value falls back to `info`; `strata doctor` names the directory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::server;

use common::Sandbox;
use server::{Reply, Server};
use std::path::PathBuf;
use std::process::{Command, Output};

const KEY: &str = "sk-test-PLANTED-1234567890";
const MESSAGE: &str = "tell me about the quokka-PLANTED-message of Rottnest";
const REPLY: &str = "Wombat-PLANTED-reply";

fn sse(text: &str) -> String {
    let delta =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 321, "completion_tokens": 7}});
    format!(
        "data: {delta}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: {usage}\n\ndata: [DONE]\n\n"
    )
}

fn logs_dir(sb: &Sandbox) -> PathBuf {
    sb.home.path().join("data/logs")
}

/// The log files' names and their text, concatenated.
fn read_logs(sb: &Sandbox) -> (Vec<String>, String) {
    let mut names = Vec::new();
    let mut text = String::new();
    for entry in std::fs::read_dir(logs_dir(sb)).unwrap() {
        let entry = entry.unwrap();
        names.push(entry.file_name().to_string_lossy().into_owned());
        text.push_str(&std::fs::read_to_string(entry.path()).unwrap());
    }
    (names, text)
}

async fn run(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_turn_is_logged_with_its_phases_and_without_the_key_or_the_words() {
    // The first attempt fails with a retryable 529 whose message echoes the key.
    let busy = format!(r#"{{"error":{{"message":"busy serving {KEY}"}}}}"#);
    let server = Server::start(vec![
        Reply::json(529, &busy).with_header("retry-after", "0"),
        Reply::sse(sse(REPLY)),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.cmd(&["chat", "--json", MESSAGE]);
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.base_url()))
        .env("OPENAI_API_KEY", KEY);
    let out = run(cmd).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("INFO") && !stderr.contains("WARN"),
        "log lines on stderr: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(REPLY), "the reply reached the user: {stdout}");
    let start: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    let session = start["session_id"].as_str().unwrap();
    assert_eq!(server.requests().len(), 2);

    let (names, log) = read_logs(&sb);
    assert_eq!(names.len(), 1, "{names:?}");
    let date = names[0].strip_prefix("strata.log.").unwrap();
    assert!(jiff::civil::Date::strptime("%Y-%m-%d", date).is_ok(), "{names:?}");

    let line = |needle: &str| {
        log.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{log}"))
    };
    let turn = format!("turn{{session={session}}}");
    assert!(line(r#"command="chat""#).contains("strata started"));
    let request = line(" request messages=");
    assert!(request.contains(&turn), "{request}");
    assert!(
        request.contains(r#"request{provider="openai" model="gpt-4o"}"#),
        "{request}"
    );
    assert!(line("connecting attempt=1").contains(&turn));
    let retry = line("retrying");
    assert!(retry.contains("retry=1 max_retries=3 wait_ms=0"), "{retry}");
    assert!(retry.contains("overloaded (busy serving [redacted])"), "{retry}");
    assert!(line("connecting attempt=2").contains(&turn));
    assert!(line(" connected elapsed_ms=").contains(&turn));
    assert!(line(" first token ttft_ms=").contains(&turn));
    let done = line(" done duration_ms=");
    assert!(done.contains(&turn), "{done}");
    for field in [
        "ttft_ms=",
        "finish_reason=\"stop\"",
        "prompt_tokens=321",
        "completion_tokens=7",
    ] {
        assert!(done.contains(field), "{field} missing: {done}");
    }
    let finished = line("turn finished");
    assert!(
        finished.contains(&turn) && finished.contains("status=Complete"),
        "{finished}"
    );
    let estimate: u64 = finished
        .split("estimated_prompt_tokens=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(estimate > 0, "{finished}");

    assert!(!log.contains(KEY), "the key is in the log:\n{log}");
    assert!(
        !log.contains("sk-test-PLANTED"),
        "part of the key is in the log:\n{log}"
    );
    for words in ["quokka", "Rottnest", REPLY] {
        assert!(
            !log.contains(words),
            "conversation text {words:?} is in the log:\n{log}"
        );
    }

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(logs_dir(&sb)), 0o700);
        assert_eq!(mode(logs_dir(&sb).join(&names[0])), 0o600);
    }
}

#[test]
fn strata_log_sets_the_level_and_a_bad_value_falls_back_to_info() {
    let sb = Sandbox::new();
    let out = sb.cmd(&["sessions"]).env("STRATA_LOG", "degub").output().unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let (_, log) = read_logs(&sb);
    assert!(
        log.contains(r#"STRATA_LOG="degub" is not a valid filter"#),
        "{log}"
    );
    assert!(log.contains(r#"strata started version="#), "info applies: {log}");

    let quiet = Sandbox::new();
    let out = quiet
        .cmd(&["sessions"])
        .env("STRATA_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success());
    let (names, log) = read_logs(&quiet);
    assert_eq!(names.len(), 1);
    assert!(!log.contains("strata started"), "info lines at warn: {log}");
}

#[test]
fn doctor_names_the_log_directory() {
    let sb = Sandbox::new();
    let out = sb.ok(&["doctor"]);
    let dir = logs_dir(&sb);
    let line = out
        .lines()
        .find(|l| l.starts_with("ok    log"))
        .unwrap_or_else(|| panic!("no log check in:\n{out}"));
    assert!(line.contains(&dir.display().to_string()), "{line}");
    assert!(line.contains("STRATA_LOG"), "{line}");
}
