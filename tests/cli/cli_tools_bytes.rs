//! What reaches the model of a command's bytes, end to end: escape
//! sequences shown (colours stripped) in the request but stored as
//! captured, a short control-heavy output read as text, binary output
//! spilled as its raw bytes with its real size, and long lines folded in a
//! text spill file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::agent;
use crate::support::common;
use crate::support::server;
use crate::support::tool_sse;

use agent::{events, openai, run};
use common::Sandbox;
use serde_json::{Value, json};
use server::{Recorded, Reply, Server};
use tool_sse::{openai_calls, openai_text};

/// The `tool` message the request sent after the call carried.
fn tool_content(request: &Recorded) -> String {
    request.json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs `command` with the shell tool in one round, then the model answers;
/// gives the requests, the events and the sandbox.
async fn one_command(command: &str) -> (Vec<Recorded>, Vec<Value>, Sandbox) {
    let args = json!({ "command": command }).to_string();
    let server = Server::answering(move |n, _| match n {
        0 => Reply::sse(openai_calls(&[("c1", "shell", &args)])),
        _ => Reply::sse(openai_text("Done.")),
    })
    .await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[model]\ncontext_window = 128000\nmax_tokens = 1024\n[tools]\nenabled = true\n[tools.sandbox]\nmode = \"off\"\n",
    )
    .unwrap();
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "--approve", "all", "go"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (server.requests(), events(&out), sb)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_reads_output_with_colours_stripped_and_other_escapes_visible() {
    let (requests, ev, sb) =
        one_command(r"printf '\033]0;owned\007\033[2J\033[1;31mred\033[0m done\n'").await;
    assert_eq!(requests.len(), 2);
    let sent = tool_content(&requests[1]);
    assert!(!sent.contains('\u{1b}') && !sent.contains('\u{7}'), "{sent:?}");
    assert!(sent.contains("^[]0;owned^G^[[2Jred done"), "{sent:?}");
    // The store keeps what the command printed.
    let session = ev
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned();
    let shown = sb.json(&["show", &session, "--json"]);
    let stored = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stored.contains("\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[1;31mred"),
        "{stored:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_control_heavy_output_is_text_the_model_reads() {
    // 52 bytes, most of them escapes and controls.
    let (requests, _, _) = one_command(
        r"printf '\033[2J\033[H\033[?25l\033]0;t\007\033[31m\033[1m\033[4mhi there\033[0m\033[K\b\b\r'",
    )
    .await;
    let sent = tool_content(&requests[1]);
    assert!(!sent.contains("binary output"), "{sent:?}");
    assert!(sent.contains("hi there"), "{sent:?}");
    assert!(sent.contains("^[[2J^[[H^[[?25l^[]0;t^G"), "{sent:?}");
}

/// The path a result names after `in ` (`… is in /…/<id>.txt]`).
fn named_path(text: &str) -> String {
    let start = text.find(" in /").unwrap() + 4;
    let end = start + text[start..].find(".txt").unwrap() + 4;
    text[start..end].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_output_is_spilled_byte_for_byte_with_its_real_size_and_type() {
    let (requests, ev, _sb) = one_command("cat /bin/ls").await;
    let original = std::fs::read("/bin/ls").unwrap();
    let sent = tool_content(&requests[1]);
    let size = strata::text::group_digits(original.len() as u64);
    assert!(
        sent.starts_with(&format!(
            "[binary output (application/x-executable), {size} bytes"
        )),
        "{sent}"
    );
    assert!(sent.contains("[exit code 0]"), "{sent}");
    let path = named_path(&sent);
    assert!(
        std::fs::read(&path).unwrap() == original,
        "the spill file is /bin/ls"
    );
    let result = ev.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["spilled_to"], path.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_lines_are_folded_in_the_spill_file_whether_small_or_streamed() {
    // One 10,000-character line (kept in memory), then sixty of them (600 kB,
    // streamed to the spill file as it comes).
    for lines in [1, 60] {
        let command = format!("for i in $(seq {lines}); do printf 'é%.0s' $(seq 10000); echo; done");
        let (requests, _, _sb) = one_command(&command).await;
        let sent = tool_content(&requests[1]);
        let spill = std::fs::read_to_string(named_path(&sent)).expect(&sent);
        assert!(spill.lines().all(|l| l.chars().count() <= 2_000), "{lines} lines");
        let body: String = spill.lines().take_while(|l| !l.starts_with('[')).collect();
        assert_eq!(
            body.chars().filter(|&c| c == 'é').count(),
            10_000 * lines,
            "nothing lost"
        );
    }
}
