//! strata against llama.cpp's own `llama-server` serving the test GGUF on
//! 127.0.0.1: a chat streams with usage and cached tokens; the served
//! window is discovered (`-c 3072`); counts are the server's own through
//! `POST /tokenize`, within 1 % of its `prompt_tokens` from the first
//! request; a history too long for `-c 512` is
//! compressed before the first request; an overflow the server reports is
//! recovered (the stated window wins, compress, retry); the Anthropic
//! provider streams through the server's `POST /v1/messages`.
//!
//! The server is `$LLAMA_SERVER`, else the one
//! `scripts/install-llama-server.sh` installs in strata's cache, else
//! `llama-server` on `PATH` (see `support::locate`). Without one the tests
//! are ignored, with that reason — except under `CI`, where a missing
//! server is a failure. One server runs at a time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::{common, locks, needs};

use common::{Sandbox, test_model};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// `llama-server` on the test model with a window of `ctx` tokens,
    /// once it answers `GET /health`.
    fn start(binary: &PathBuf, ctx: u32) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let model = test_model();
        let child = Command::new(binary)
            .args([
                "-m",
                model.to_str().unwrap(),
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .args([
                "-c",
                &ctx.to_string(),
                "-np",
                "1",
                "-t",
                "1",
                "-tb",
                "1",
                "--no-webui",
                // Greedy replies: the same prompt gets the same reply on
                // every run. Sampled, a reply now and then holds tokens the
                // server would not produce when tokenising its text (seen:
                // ".\n\n## Command" after 11 tokens of a 64-token reply), so
                // the next request re-uses the KV cache only up to there.
                "--temp",
                "0",
                "--seed",
                "1",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            assert!(Instant::now() < deadline, "llama-server did not become ready");
            if server.healthy() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn healthy(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        if s.write_all(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200")
    }

    fn openai_base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn root(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `strata ARGS` talking OpenAI to `server`.
fn openai(sb: &Sandbox, server: &Server, args: &[&str]) -> Output {
    sb.cmd(args)
        .env("OPENAI_BASE_URL", server.openai_base())
        .output()
        .unwrap()
}

fn chat(sb: &Sandbox, server: &Server, extra: &[&str], text: &str) -> Vec<Value> {
    let mut args = vec!["chat", "--json", "--provider", "openai", "--model", "smollm2"];
    args.extend_from_slice(extra);
    args.push(text);
    let out = openai(sb, server, &args);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    events(&out)
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// A history of `pairs` exchanges of about `words` words each, imported as
/// an OpenAI session of `smollm2`; returns its id.
fn import_history(sb: &Sandbox, server: &Server, pairs: usize, words: usize) -> String {
    let filler = "the parser keeps its state in a small table and the tests cover it ";
    let body = |i: usize| format!("{i}: {}", filler.repeat(words / 13 + 1));
    let messages: Vec<Value> = (0..pairs)
        .flat_map(|i| {
            [
                serde_json::json!({"role": "user", "content": format!("question {}", body(i))}),
                serde_json::json!({"role": "assistant", "content": format!("answer {}", body(i))}),
            ]
        })
        .collect();
    let file = sb.home.path().join("history.json");
    std::fs::write(&file, serde_json::to_string(&messages).unwrap()).unwrap();
    let out = openai(
        sb,
        server,
        &[
            "import",
            file.to_str().unwrap(),
            "--provider",
            "openai",
            "--model",
            "smollm2",
            "--prompt-mode",
            "none",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Short replies (the model runs on one thread) and the extractive
/// summariser, plus `extra` TOML.
fn config(sb: &Sandbox, extra: &str) {
    let text = format!("[model]\nmax_tokens = 64\n{extra}[compression]\nsummarizer = \"extractive\"\n");
    std::fs::write(sb.home.path().join("config.toml"), text).unwrap();
}

/// The one-at-a-time lock, a server with a window of `ctx` tokens and a
/// sandbox (configured by [`config`] with `extra` unless `None`).
fn setup(ctx: u32, extra: Option<&str>) -> (std::sync::MutexGuard<'static, ()>, Server, Sandbox) {
    let binary = needs::llama_server();
    let one = locks::llama_server();
    let server = Server::start(&binary, ctx);
    let sb = Sandbox::new();
    if let Some(extra) = extra {
        config(&sb, extra);
    }
    (one, server, sb)
}

#[test]
#[cfg_attr(
    strata_missing_llama_server,
    ignore = "needs llama-server: scripts/install-llama-server.sh"
)]
fn a_chat_streams_with_usage_and_the_frozen_prefix_is_cached() {
    let (_one, server, sb) = setup(2048, Some(""));
    let first = chat(&sb, &server, &[], "What is the capital of France?");
    assert!(!of(&first, "delta").is_empty(), "{first:?}");
    let second = chat(&sb, &server, &[], "And of Italy?");
    let usage = of(&second, "usage")[0];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(
        usage["cache_read_tokens"].as_u64().unwrap() > 0,
        "the frozen prefix is cached: {usage}"
    );
}

/// The server says what it re-used (`prompt_tokens_details.cached_tokens`,
/// the prompt tokens its KV cache already held): an oracle that is not
/// strata. Each follow-up's prediction — the shared prefix and the reply
/// the server generated, counted through its own `/tokenize` — is compared
/// with it, and must be within 4 tokens.
#[test]
#[cfg_attr(
    strata_missing_llama_server,
    ignore = "needs llama-server: scripts/install-llama-server.sh"
)]
fn predicted_cache_reads_match_what_the_server_re_used() {
    let (_one, server, sb) = setup(2048, Some(""));
    let first = chat(&sb, &server, &[], "What is the capital of France?");
    let id = first
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned();
    for (turn, text) in ["And of Italy?", "And of Spain?"].into_iter().enumerate() {
        let said = chat(&sb, &server, &["--session", &id], text);
        let reported = of(&said, "usage")[0]["cache_read_tokens"].as_u64().unwrap();
        let out = openai(&sb, &server, &["context", &id, "--json", "--no-mcp"]);
        let ctx: Value = serde_json::from_slice(&out.stdout).unwrap();
        let cache = &ctx["cache"];
        assert_eq!(cache["reported_cached_tokens"], reported, "turn {turn}: {cache}");
        let predicted = cache["predicted_cached_tokens"].as_u64().unwrap();
        assert!(reported > 0, "turn {turn}: the server re-used nothing: {cache}");
        // Within a few tokens, not exact: the server re-tokenises the whole
        // templated prompt while strata counts block by block, and the
        // end-of-turn token that stopped the reply was sampled but never
        // decoded into the KV cache. Seen here: 458 predicted for 456
        // re-used, then 479 for 478.
        assert!(
            predicted.abs_diff(reported) <= 4,
            "turn {turn}: predicted {predicted}, the server re-used {reported}: {cache}"
        );
    }
}

#[test]
#[cfg_attr(
    strata_missing_llama_server,
    ignore = "needs llama-server: scripts/install-llama-server.sh"
)]
fn the_served_window_is_discovered_and_sizes_the_session() {
    let (_one, server, sb) = setup(3072, None);
    let said = chat(&sb, &server, &[], "Hi");
    let notices: Vec<String> = of(&said, "notice")
        .iter()
        .map(|n| n["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(notices.iter().any(|n| n.contains("3,072 tokens")), "{notices:?}");
    let id = said
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned();
    let out = openai(&sb, &server, &["context", &id, "--json", "--no-mcp"]);
    let ctx: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ctx["window"], 3072, "{ctx}");
    assert_eq!(ctx["window_source"], "server");
    assert_eq!(ctx["reserved_output"], 768, "a quarter of the served window");
    assert!(ctx["threshold"]["effective"].as_u64().unwrap() < 3072 - 768);
}

#[test]
#[cfg_attr(
    strata_missing_llama_server,
    ignore = "needs llama-server: scripts/install-llama-server.sh"
)]
fn counts_are_the_server_s_own_through_tokenize_from_the_first_request() {
    let (_one, server, sb) = setup(3072, Some(""));
    let said = chat(&sb, &server, &[], "What is the capital of France?");
    let usage = of(&said, "usage")[0];
    let reported = usage["prompt_tokens"].as_u64().unwrap();
    let counted = usage["estimated_prompt_tokens"].as_u64().unwrap();
    // Only the chat template's few tokens per message are not counted (the
    // calibration learns them); o200k_base was 10 % off here.
    assert!(
        counted.abs_diff(reported) * 100 <= reported,
        "counted {counted} vs reported {reported}"
    );
    let id = said
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned();
    let out = openai(&sb, &server, &["context", &id, "--json", "--no-mcp"]);
    let ctx: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ctx["exact"], true, "{ctx}");
    assert_eq!(ctx["tokenizer"], "llama.cpp:smollm2");
}

#[test]
#[cfg_attr(
    strata_missing_llama_server,
    ignore = "needs llama-server: scripts/install-llama-server.sh"
)]
fn a_history_too_long_for_the_served_window_is_compressed_before_the_first_request() {
    let (_one, server, sb) = setup(512, Some(""));
    let id = import_history(&sb, &server, 8, 120);
    let said = chat(
        &sb,
        &server,
        &["--session", &id, "--prompt-mode", "none"],
        "Sum it up.",
    );
    let failed = |e: &&Value| {
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("400") || m.contains("exceed"))
    };
    assert!(!of(&said, "error").iter().any(failed), "no HTTP 400: {said:?}");
    assert!(!of(&said, "compressed").is_empty(), "compressed first: {said:?}");
    assert!(!of(&said, "delta").is_empty(), "{said:?}");
}

#[test]
#[cfg_attr(
    strata_missing_llama_server,
    ignore = "needs llama-server: scripts/install-llama-server.sh"
)]
fn an_overflow_the_server_reports_is_recovered_with_its_stated_window() {
    let (_one, server, sb) = setup(1024, None);
    // The config says 8,192, so strata sends what the server cannot take.
    config(&sb, "context_window = 8192\n");
    let id = import_history(&sb, &server, 10, 150);
    let said = chat(
        &sb,
        &server,
        &["--session", &id, "--prompt-mode", "none"],
        "Sum it up.",
    );
    let notices: Vec<String> = of(&said, "notice")
        .iter()
        .map(|n| n["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(notices.iter().any(|n| n.contains("1,024 tokens")), "{notices:?}");
    assert!(
        !of(&said, "delta").is_empty(),
        "answered after compressing: {said:?}"
    );
    let out = openai(&sb, &server, &["context", &id, "--json", "--no-mcp"]);
    let ctx: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        ctx["window"], 8192,
        "a new process: the config wins again over a remembered window: {ctx}"
    );
}

#[test]
#[cfg_attr(
    strata_missing_llama_server,
    ignore = "needs llama-server: scripts/install-llama-server.sh"
)]
fn the_anthropic_provider_streams_through_the_server_s_messages_api() {
    let (_one, server, sb) = setup(2048, Some(""));
    let out = sb
        .cmd(&[
            "chat",
            "--json",
            "--provider",
            "anthropic",
            "--model",
            "smollm2",
            "What is the capital of France?",
        ])
        .env("ANTHROPIC_BASE_URL", server.root())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-local")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = events(&out);
    assert!(!of(&said, "delta").is_empty(), "{said:?}");
    let usage = of(&said, "usage")[0];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0, "{usage}");

    // The server is asked its window through this API too, and its KV
    // cache is predicted as the shared prefix it is.
    let id = said
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .unwrap()
        .to_owned();
    let anthropic = |args: &[&str]| {
        let mut all = vec!["--provider", "anthropic", "--model", "smollm2"];
        all.extend_from_slice(args);
        sb.cmd(&all)
            .env("ANTHROPIC_BASE_URL", server.root())
            .env("ANTHROPIC_API_KEY", "sk-ant-test-local")
            .output()
            .unwrap()
    };
    let out = anthropic(&["chat", "--json", "--session", &id, "And of Spain?"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = anthropic(&["context", &id, "--json", "--no-mcp"]);
    let ctx: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ctx["window"], 2048, "{ctx}");
    assert_eq!(ctx["window_source"], "server");
    let cache = &ctx["cache"];
    let (predicted, reported) = (
        cache["predicted_cached_tokens"].as_u64().unwrap(),
        cache["reported_cached_tokens"].as_u64().unwrap(),
    );
    assert!(reported > 0 && predicted > 0, "{cache}");
    assert!(predicted.abs_diff(reported) * 10 <= reported, "{cache}");
}

#[test]
#[cfg_attr(
    strata_missing_llama_server,
    ignore = "needs llama-server: scripts/install-llama-server.sh"
)]
fn a_message_larger_than_the_window_is_sent_cut_and_the_server_takes_it() {
    let (_one, server, sb) = setup(3072, Some(""));
    // Code with numbers: the model's own tokenizer counts it well above the
    // o200k_base estimate, so a cut made to the estimate alone overflows.
    let text: String = (0..2_000)
        .map(|i| format!("let v{i} = table[{}] ^ 0x{:04x}; // 日本 {i}\n", i * 7, i * 31))
        .collect();
    let said = chat(&sb, &server, &[], &text);
    let overflow = |e: &&Value| e["message"].as_str().is_some_and(|m| m.contains("exceeds"));
    assert!(
        !of(&said, "error").iter().any(overflow),
        "{:?}",
        of(&said, "error")
    );
    assert!(!of(&said, "delta").is_empty(), "answered");
}
