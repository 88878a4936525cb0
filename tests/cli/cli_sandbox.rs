//! Leaving the sandbox headless, end to end: `strata chat` against the
//! local SSE server with a model that asks for `sandbox: "off"` or
//! `network: true`. Such a call is denied under an allow rule and under
//! `--approve all` alone, and runs with `--approve all --sandbox off` (or
//! `--network`); `--approve sandboxed` runs a sandboxed command and denies
//! the rest; `tool_result` events say which sandbox a command ran in.
//! Needs Landlock: fails, never skips, without it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::agent;
use crate::support::common;
use crate::support::server;
use crate::support::tool_sse;

use agent::{events, of_type, openai, run};
use common::Sandbox;
use serde_json::{Value, json};
use server::{Reply, Server};
use tool_sse::{openai_calls, openai_text};

fn needs_landlock() {
    assert!(
        strata::tools::sandbox::support().available(),
        "this kernel has no Landlock: the sandbox cannot be tested (it needs Linux 5.13 or later with Landlock enabled)"
    );
}

/// A server whose model calls `shell` once with `arguments`, then answers.
async fn one_shell_call(arguments: &Value) -> Server {
    let arguments = arguments.to_string();
    Server::with(move |n| match n {
        0 => Reply::sse(openai_calls(&[("s1", "shell", &arguments)])),
        _ => Reply::sse(openai_text("ok")),
    })
    .await
}

/// The chat's one `tool_result` event and the text the model got back.
async fn chat(sb: &Sandbox, server: &Server, flags: &[&str]) -> (Value, String) {
    let mut args = vec!["chat", "--json", "--new"];
    args.extend_from_slice(flags);
    args.push("go");
    let out = run(openai(sb, server, &args)).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ev = events(&out);
    let result = of_type(&ev, "tool_result")[0].clone();
    let body = server.requests()[1].json();
    let text = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    (result, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_off_from_the_model_needs_the_users_flag_not_a_rule_nor_approve_all() {
    needs_landlock();
    let sb = Sandbox::new();
    let outside = sb.home.path().join("outside.txt");
    let call = json!({
        "command": format!("echo x > {}", outside.display()),
        "sandbox": "off",
        "reason": "writes outside",
    });
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[tools]\nallow = [\"shell\"]\n",
    )
    .unwrap();
    for flags in [&[][..], &["--approve", "all"][..]] {
        let server = one_shell_call(&call).await;
        let (result, text) = chat(&sb, &server, flags).await;
        assert_eq!(result["status"], "denied", "{flags:?}: {result}");
        assert!(text.contains("--approve all --sandbox off"), "{text}");
        assert!(!outside.exists(), "{flags:?}: it ran");
    }
    let server = one_shell_call(&call).await;
    let (result, text) = chat(&sb, &server, &["--approve", "all", "--sandbox", "off"]).await;
    assert_eq!(result["status"], "ok", "{result}: {text}");
    assert_eq!(result["sandbox"], "off");
    assert!(outside.exists());
    let log = std::fs::read_dir(sb.home.path().join("data/logs"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(log.contains("a shell command ran outside the sandbox"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_all_runs_a_plain_command_sandboxed_and_it_cannot_write_outside() {
    needs_landlock();
    let sb = Sandbox::new();
    let outside = sb.home.path().join("outside.txt");
    let call = json!({"command": format!("touch inside.txt; echo x > {}", outside.display())});
    let server = one_shell_call(&call).await;
    let (result, text) = chat(&sb, &server, &["--approve", "all"]).await;
    assert_eq!(result["sandbox"], "workspace-write", "{result}");
    assert!(text.contains("Permission denied"), "{text}");
    assert!(sb.ws().join("inside.txt").exists() && !outside.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_from_the_model_runs_only_with_the_network_flag_and_then_connects() {
    needs_landlock();
    let sb = Sandbox::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let call = json!({
        "command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"),
        "network": true,
        "reason": "talks to the test server",
    });
    let server = one_shell_call(&call).await;
    let (result, text) = chat(&sb, &server, &["--approve", "all"]).await;
    assert_eq!(result["status"], "denied", "{result}");
    assert!(text.contains("--approve all --network"), "{text}");
    let server = one_shell_call(&call).await;
    let (result, text) = chat(&sb, &server, &["--approve", "all", "--network"]).await;
    assert_eq!(result["status"], "ok", "{result}: {text}");
    assert!(text.contains("CONNECTED"), "{text}");
    assert_eq!(result["sandbox"], "workspace-write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_sandboxed_runs_a_sandboxed_command_and_denies_an_edit() {
    needs_landlock();
    let sb = Sandbox::new();
    let server = Server::with(|n| match n {
        0 => Reply::sse(openai_calls(&[
            ("s1", "shell", r#"{"command":"echo made > made.txt"}"#),
            ("s2", "write_file", r#"{"path":"w.txt","content":"x"}"#),
            ("s3", "shell", r#"{"command":"echo net","network":true}"#),
        ])),
        _ => Reply::sse(openai_text("ok")),
    })
    .await;
    let out = run(openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "--approve", "sandboxed", "go"],
    ))
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ev = events(&out);
    let results = of_type(&ev, "tool_result");
    let statuses: Vec<&str> = results.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["ok", "denied", "denied"], "{results:?}");
    assert!(sb.ws().join("made.txt").exists() && !sb.ws().join("w.txt").exists());
}

/// The variable a provider's key is read from (`api_key_env`) does not
/// reach a command, whatever its name; a command that ran outside the
/// sandbox says it had the network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_providers_key_variable_never_reaches_a_command() {
    needs_landlock();
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        "[providers.openai]\napi_key_env = \"MY_PROVIDER_CRED\"\n",
    )
    .unwrap();
    let server = one_shell_call(&json!({"command": "env | grep -c PLANTED-CRED || true"})).await;
    let mut cmd = openai(
        &sb,
        &server,
        &[
            "chat",
            "--json",
            "--new",
            "--approve",
            "all",
            "--sandbox",
            "off",
            "go",
        ],
    );
    cmd.env("MY_PROVIDER_CRED", "PLANTED-CRED");
    let out = run(cmd).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ev = events(&out);
    let result = &of_type(&ev, "tool_result")[0];
    assert_eq!(result["sandbox"], "off", "{result}");
    assert_eq!(
        result["network"], true,
        "outside the sandbox nothing holds it: {result}"
    );
    let body = server.requests()[1].json();
    let text = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.starts_with("0\n"), "{text}");
}
