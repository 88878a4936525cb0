//! A 50 MB MCP result end to end: `strata chat` against the local SSE
//! server, whose scripted reply calls the misbehaving server's `big` tool.
//! The result reaches the model capped, its spill file holds all of it,
//! and strata's peak memory grows by less than the result's size. One test
//! at a time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::agent;
use crate::support::common;
use crate::support::mcp as mcp_support;
use crate::support::server;
use crate::support::tool_sse;

use agent::openai;
use common::Sandbox;
use server::{Recorded, Reply, Server};
use std::process::{Command, Output};
use tool_sse::{openai_calls, openai_text};

/// Runs `cmd` under a Python parent that waits for it with `wait4`: its
/// output, and its peak resident memory in kB as the kernel counted it.
fn measured(cmd: &Command) -> (Output, u64) {
    let script = "import os, subprocess, sys\n\
                  p = subprocess.Popen(sys.argv[1:])\n\
                  _, status, usage = os.wait4(p.pid, 0)\n\
                  sys.stderr.write('maxrss_kb=%d\\n' % usage.ru_maxrss)\n\
                  sys.exit(os.waitstatus_to_exitcode(status))";
    let mut wrapped = common::wrapped(&mcp_support::python(), &["-c", script], cmd);
    let out = wrapped.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kb = stderr
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kb="))
        .unwrap_or_else(|| panic!("no measurement: {stderr}"))
        .parse()
        .unwrap();
    (out, kb)
}

/// One chat whose model calls `bad__big` with `arguments`: the requests,
/// the output, strata's peak memory in kB, and the sandbox.
fn chat_calling_big(arguments: &str) -> (Vec<Recorded>, Output, u64, Sandbox) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let arguments = arguments.to_owned();
    let server = rt.block_on(Server::with(move |n| match n {
        0 => Reply::sse(openai_calls(&[("big_1", "bad__big", &arguments)])),
        _ => Reply::sse(openai_text("done")),
    }));
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[tools]\nenabled = true\n\n[mcp.servers.bad]\ncommand = {:?}\nargs = [{:?}]\ncall_timeout_s = 60\n",
            mcp_support::python().to_str().unwrap(),
            mcp_support::misbehaving().to_str().unwrap(),
        ),
    )
    .unwrap();
    let cmd = openai(
        &sb,
        &server,
        &["chat", "--json", "--new", "--approve", "all", "go"],
    );
    let (out, kb) = measured(&cmd);
    let requests = server.requests();
    drop(rt);
    (requests, out, kb, sb)
}

/// The tool message of the second request.
fn tool_result(requests: &[Recorded]) -> String {
    let body = requests[1].json();
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().rfind(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "big_1");
    tool["content"].as_str().unwrap().to_owned()
}

#[test]
fn a_50_mb_result_reaches_the_model_capped_and_its_spill_file_holds_all_of_it() {
    let _one = mcp_support::one_at_a_time();
    let (requests, out, idle_kb, _sb) = chat_calling_big(r#"{"mb": 0.01}"#);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let small = tool_result(&requests);
    assert_eq!(small.len(), 10_485, "a small result is sent whole");

    let (requests, out, kb, sb) = chat_calling_big(r#"{"mb": 50}"#);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sent = tool_result(&requests);
    eprintln!(
        "peak RSS: {idle_kb} kB for a 10 kB result, {kb} kB for 50 MB; {} characters sent",
        sent.len()
    );
    assert!(sent.len() < 60_000, "capped: {} characters", sent.len());
    assert!(sent.starts_with("0123456789abcdef"), "{}", &sent[..100]);
    let spill = sb
        .home
        .path()
        .join("data/spill")
        .read_dir()
        .unwrap()
        .flatten()
        .filter(|e| e.file_name() != "mcp")
        .flat_map(|session| session.path().read_dir().unwrap().flatten())
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n == "big_1.txt"))
        .expect("a spill file");
    assert!(
        sent.contains(spill.to_str().unwrap()),
        "the model is told where: {sent}"
    );
    assert_eq!(std::fs::metadata(&spill).unwrap().len(), 50 * 1024 * 1024);
    assert!(
        kb < idle_kb + 50 * 1024,
        "peak RSS grew {} kB for a 50 MB result",
        kb.saturating_sub(idle_kb)
    );
    let left: Vec<_> = sb
        .home
        .path()
        .join("data/spill/mcp")
        .read_dir()
        .unwrap()
        .collect();
    assert!(
        left.is_empty(),
        "nothing left in the transport's directory: {left:?}"
    );
}
