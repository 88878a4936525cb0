//! The agent turn end to end: `strata chat` against the local SSE server
//! (OpenAI and Anthropic shapes) with scripted tool calls, the real
//! built-in tools on a temporary workspace, and every request body checked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::agent;
use crate::support::common;
use crate::support::server;
use crate::support::tool_sse;

use agent::{anthropic, events, of_type, openai, processes_running, run};
use common::Sandbox;
use serde_json::Value;
use server::{Reply, Server};
use tool_sse::{anthropic_calls, anthropic_text, openai_calls, openai_text};

/// The first words of the `model_guidance` layer's tool-use notes.
const TOOL_GUIDANCE: &str = include_str!("../../assets/prompts/model_guidance/tool_use.md");

fn workspace(sb: &Sandbox) {
    std::fs::write(
        sb.ws().join("notes.txt"),
        "first line\nthe needle is here\nlast line\n",
    )
    .unwrap();
    std::fs::create_dir(sb.ws().join("src")).unwrap();
    std::fs::write(sb.ws().join("src/lib.rs"), "// a needle in code\nfn main() {}\n").unwrap();
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_three_rounds_read_grep_and_answer_with_valid_bodies() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[(
            "call_r",
            "read_file",
            r#"{"path":"notes.txt"}"#,
        )])),
        1 => Reply::sse(openai_calls(&[("call_g", "grep", r#"{"pattern":"needle"}"#)])),
        _ => Reply::sse(openai_text("The needle is on line 2.")),
    })
    .await;
    let sb = Sandbox::new();
    workspace(&sb);
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "where", "is", "the", "needle?"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ev = events(&out);
    let calls = of_type(&ev, "tool_call");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["name"], "read_file");
    assert_eq!(
        calls[0]["arguments"], r#"{"path":"notes.txt"}"#,
        "the raw string the model sent"
    );
    let results = of_type(&ev, "tool_result");
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["status"] == "ok"), "{results:?}");
    assert!(results[0]["tokens"].as_u64().unwrap() > 0);
    assert_eq!(results[0]["truncated"], false);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let bodies: Vec<Value> = requests.iter().map(server::Recorded::json).collect();
    // The tools array: built-in tools first, in a fixed order, byte-identical
    // between rounds; `tool_choice` is `auto`.
    let prompt = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        prompt.contains(TOOL_GUIDANCE.trim()),
        "a session created with tools gets the guidance layer"
    );
    let names = tool_names(&bodies[0]);
    assert_eq!(&names[..4], ["read_file", "list_dir", "glob", "grep"]);
    for b in &bodies {
        assert_eq!(b["tools"].to_string(), bodies[0]["tools"].to_string());
        assert_eq!(b["tool_choice"], "auto");
    }
    // Round two carries the read's call and its result, paired.
    let m = bodies[1]["messages"].as_array().unwrap();
    let n = m.len();
    assert_eq!(m[n - 2]["role"], "assistant");
    assert_eq!(m[n - 2]["tool_calls"][0]["id"], "call_r");
    assert_eq!(m[n - 1]["role"], "tool");
    assert_eq!(m[n - 1]["tool_call_id"], "call_r");
    let read = m[n - 1]["content"].as_str().unwrap();
    assert!(read.contains("2\tthe needle is here"), "numbered lines: {read}");
    // Round three: both pairs in order, the grep's hits from both files.
    let m = bodies[2]["messages"].as_array().unwrap();
    let n = m.len();
    assert_eq!(m[n - 3]["tool_call_id"], "call_r");
    assert_eq!(m[n - 2]["tool_calls"][0]["id"], "call_g");
    assert_eq!(m[n - 1]["tool_call_id"], "call_g");
    let hits = m[n - 1]["content"].as_str().unwrap();
    assert!(
        hits.contains("notes.txt:2:") && hits.contains("lib.rs:1:"),
        "{hits}"
    );

    // A second process continues the session: the same tools bytes.
    let again = Server::start(vec![Reply::sse(openai_text("still here"))]).await;
    let out = run(openai(&sb, &again, &["chat", "--json", "-c", "and", "now?"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let body = again.requests()[0].json();
    assert_eq!(body["tools"].to_string(), bodies[0]["tools"].to_string());
    // `strata show` lists the calls and their results.
    let session = ev[0]["session_id"].as_str().unwrap();
    let shown = sb.ok(&["show", session]);
    assert!(shown.contains("read_file") && shown.contains("call_g"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_three_rounds_send_tool_use_and_tool_result_blocks() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(anthropic_calls(&[(
            "toolu_1",
            "read_file",
            r#"{"path":"notes.txt"}"#,
        )])),
        1 => Reply::sse(anthropic_calls(&[("toolu_2", "grep", r#"{"pattern":"needle"}"#)])),
        _ => Reply::sse(anthropic_text("Line 2.")),
    })
    .await;
    let sb = Sandbox::new();
    workspace(&sb);
    let out = run(anthropic(
        &sb,
        &server,
        &["chat", "--json", "--new", "read", "notes"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = requests[0].json();
    let second = requests[1].json();
    let third = requests[2].json();
    assert_eq!(tool_names(&first)[0], "read_file");
    assert!(first["tools"][0].get("input_schema").is_some());
    assert_eq!(first["tools"].to_string(), second["tools"].to_string());
    assert_eq!(first["tools"].to_string(), third["tools"].to_string());
    // Round three: the grep's call and its hits, after the first pair.
    let m3 = third["messages"].as_array().unwrap();
    let k = m3.len();
    assert_eq!(m3[k - 1]["content"][0]["tool_use_id"], "toolu_2");
    assert!(m3[k - 1]["content"][0].to_string().contains("notes.txt:2:"));
    assert_eq!(m3[k - 3]["content"][0]["tool_use_id"], "toolu_1");
    let markers = second.to_string().matches("cache_control").count();
    assert!(markers <= 4, "at most four cache_control markers, saw {markers}");
    let m = second["messages"].as_array().unwrap();
    let n = m.len();
    let assistant = &m[n - 2];
    assert_eq!(assistant["role"], "assistant");
    let tool_use = assistant["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(tool_use["id"], "toolu_1");
    assert_eq!(tool_use["input"]["path"], "notes.txt");
    let user = &m[n - 1];
    assert_eq!(user["role"], "user");
    let result = &user["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert!(result.to_string().contains("the needle is here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_bad_arguments_and_unknown_tools_are_answered_in_call_order() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[
            ("c1", "read_file", r#"{"path":"notes.txt"}"#),
            ("c2", "list_dir", r#"{"path":"src"}"#),
            ("c3", "read_file", r#"{"path": "notes.txt""#),
            ("c4", "launch_rockets", r#"{"count":3}"#),
        ])),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let sb = Sandbox::new();
    workspace(&sb);
    let out = run(openai(&sb, &server, &["chat", "--json", "--new", "go"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ev = events(&out);
    let statuses: Vec<(&str, &str)> = of_type(&ev, "tool_result")
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [("c1", "ok"), ("c2", "ok"), ("c3", "error"), ("c4", "error")]
    );
    let body = server.requests()[1].json();
    let m = body["messages"].as_array().unwrap();
    let ids: Vec<&str> = m.iter().filter_map(|x| x["tool_call_id"].as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    let texts: Vec<&str> = m
        .iter()
        .filter(|x| x["role"] == "tool")
        .map(|x| x["content"].as_str().unwrap())
        .collect();
    assert!(texts[1].contains("lib.rs"));
    assert!(texts[2].contains("not valid JSON"));
    assert!(texts[3].contains("launch_rockets"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_denies_shell_by_default_and_the_model_is_told_how_to_allow_it() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[(
            "s1",
            "shell",
            r#"{"command":"touch made-by-shell"}"#,
        )])),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let sb = Sandbox::new();
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "make", "a", "file"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "tool_result")[0]["status"], "denied");
    assert!(!sb.ws().join("made-by-shell").exists(), "nothing ran");
    let body = server.requests()[1].json();
    let denial = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(denial.contains("--approve all"), "{denial}");

    // `--approve all` runs it.
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[(
            "s2",
            "shell",
            r#"{"command":"touch made-by-shell && echo done"}"#,
        )])),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "-c", "--approve", "all", "again"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(sb.ws().join("made-by-shell").exists());
    let body = server.requests()[1].json();
    let result = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("done"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_round_limit_ends_the_turn_and_answers_the_last_calls_not_run() {
    let server = Server::with(|n| {
        Reply::sse(openai_calls(&[(
            &format!("loop{n}"),
            "list_dir",
            r#"{"path":"."}"#,
        )]))
    })
    .await;
    let sb = Sandbox::new();
    std::fs::write(sb.home.path().join("config.toml"), "[tools]\nmax_rounds = 2\n").unwrap();
    let out = run(openai(&sb, &server, &["chat", "--json", "--new", "loop"])).await;
    let ev = events(&out);
    let statuses: Vec<&str> = of_type(&ev, "tool_result")
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok", "not_run"]);
    assert_eq!(server.requests().len(), 3);
    let notice = of_type(&ev, "error");
    assert!(
        notice
            .iter()
            .any(|e| e["message"].as_str().unwrap().contains("max_rounds")),
        "{ev:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_off_for_one_command_sends_no_tools() {
    let server = Server::start(vec![Reply::sse(openai_text("plain"))]).await;
    let sb = Sandbox::new();
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--tools", "off", "--new", "hi"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let body = server.requests()[0].json();
    assert!(body.get("tools").is_none());
    let prompt = body["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(
        !prompt.contains(TOOL_GUIDANCE.trim()),
        "no tool guidance in a session created without tools"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refuses_tools_gets_the_request_again_without_them() {
    let server = Server::with(|n| match n {
        0 => Reply::json(
            400,
            r#"{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools","type":"api_error"}}"#,
        ),
        _ => Reply::sse(openai_text("without tools")),
    })
    .await;
    let sb = Sandbox::new();
    let out = run(openai(&sb, &server, &["chat", "--json", "--new", "hi"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].json().get("tools").is_some());
    assert!(requests[1].json().get("tools").is_none());
    let ev = events(&out);
    assert!(
        of_type(&ev, "notice")
            .iter()
            .any(|e| e["message"].as_str().unwrap().contains("tools are off"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_long_command_leaves_no_process_and_the_call_interrupted() {
    // A duration no other test uses, to find the command in /proc.
    let marker = ["sleep", "617"];
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[(
            "slow",
            "shell",
            r#"{"command":"sleep 617","timeout":600}"#,
        )])),
        _ => Reply::sse(openai_text("unused")),
    })
    .await;
    let sb = Sandbox::new();
    let mut child = openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "--approve", "all", "wait"],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let started = std::time::Instant::now();
    while processes_running(&marker) == 0 {
        assert!(started.elapsed().as_secs() < 30, "the command never started");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let killed = std::time::Instant::now();
    while processes_running(&marker) > 0 {
        assert!(killed.elapsed().as_secs() < 10, "the command outlived strata");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // The next run sends the call with an `interrupted` result.
    let next = Server::start(vec![Reply::sse(openai_text("ok"))]).await;
    let out = run(openai(&sb, &next, &["chat", "--json", "-c", "what", "happened?"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let interrupted = events(&out);
    let reported = of_type(&interrupted, "tool_result");
    assert!(
        reported
            .iter()
            .any(|r| r["id"] == "slow" && r["status"] == "interrupted"),
        "the repaired call is reported: {interrupted:?}"
    );
    let body = next.requests()[0].json();
    let m = body["messages"].as_array().unwrap();
    let user = m
        .iter()
        .position(|x| x["content"] == "wait")
        .expect("the user's message was stored");
    assert_eq!(m[user + 1]["tool_calls"][0]["id"], "slow");
    assert_eq!(m[user + 2]["tool_call_id"], "slow");
    let result = m[user + 2]["content"].as_str().unwrap();
    assert!(result.starts_with("Interrupted"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_inside_a_call_runs_nothing_and_says_it_was_cut() {
    let call = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "cut", "type": "function",
         "function": {"name": "shell", "arguments": "{\"command\":\"touch cut-ran\"}"}}
    ]}, "finish_reason": null}]});
    // Complete arguments, then the connection ends: no finish_reason, no [DONE].
    let server = Server::with(move |n| match n {
        0 => Reply::sse(format!("data: {call}\n\n")),
        _ => Reply::sse(openai_text("unused")),
    })
    .await;
    let sb = Sandbox::new();
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "--approve", "all", "go"],
    ))
    .await;
    assert!(
        !sb.ws().join("cut-ran").exists(),
        "a call of a cut reply never runs"
    );
    let ev = events(&out);
    let results = of_type(&ev, "tool_result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["status"], "interrupted");
    assert!(!of_type(&ev, "error").is_empty(), "the cut is reported: {ev:?}");
    assert_eq!(server.requests().len(), 1, "no further request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_denial_tells_the_user_the_flag_or_rule_that_allows_it() {
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[(
            "s1",
            "shell",
            r#"{"command":"touch made-by-shell"}"#,
        )])),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let sb = Sandbox::new();
    let out = run(openai(&sb, &server, &["chat", "make a file"])).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("strata: shell denied"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains("approval is read-only")
            && line.contains("--approve all")
            && line.contains("[tools] allow"),
        "{line}"
    );
}
