//! `strata chat` on real models: the embedded one, and — when it is
//! installed — llama.cpp's own `llama-server` serving the same GGUF as an
//! OpenAI-compatible server on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod common;

use common::{Sandbox, test_model};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn json_lines(out: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn chat_with_the_embedded_model_streams_and_counts_exactly() {
    let sb = Sandbox::new();
    let model = test_model();
    let out = sb.run(&[
        "chat",
        "--json",
        "--model-path",
        model.to_str().unwrap(),
        "What is the capital of France?",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = json_lines(&out);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(!text.trim().is_empty());
    let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
    let actual = usage["prompt_tokens"].as_u64().unwrap();
    let estimate = usage["estimated_prompt_tokens"].as_u64().unwrap();
    // The estimate uses the model's own tokenizer: only ChatML framing differs.
    assert!(
        actual.abs_diff(estimate) <= 16,
        "estimate {estimate} vs actual {actual}"
    );
    let session = events[0]["session_id"].as_str().unwrap();
    let context = sb.json(&[
        "context",
        session,
        "--json",
        "--model-path",
        model.to_str().unwrap(),
    ]);
    assert_eq!(context["exact"], true);
    assert_eq!(context["window"], 8192);
    assert_ne!(context["tokenizer"], "o200k_base");
}

/// `llama-server` from `$LLAMA_SERVER` or `PATH`.
fn llama_server() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("LLAMA_SERVER") {
        return Some(p.into());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("llama-server"))
            .find(|p| p.is_file())
    })
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn chat_against_a_real_llama_server() {
    let Some(binary) = llama_server() else {
        eprintln!(
            "skipped: llama-server is not installed (see the README, \"A real OpenAI-compatible server\")"
        );
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = test_model();
    let _server = Server(
        Command::new(binary)
            .args([
                "-m",
                model.to_str().unwrap(),
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .args(["-c", "2048", "-np", "1", "-t", "1", "-tb", "1", "--no-webui"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "llama-server did not start");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let sb = Sandbox::new();
    let base = format!("http://127.0.0.1:{port}/v1");
    let turn = |text: &str| {
        let out = sb
            .cmd(&[
                "chat",
                "--json",
                "--provider",
                "openai",
                "--model",
                "smollm2",
                text,
            ])
            .env("OPENAI_BASE_URL", &base)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        json_lines(&out)
    };
    let first = turn("What is the capital of France?");
    assert!(first.iter().any(|e| e["type"] == "delta"));
    let second = turn("And of Italy?");
    let usage = second.iter().find(|e| e["type"] == "usage").unwrap();
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(
        usage["cache_read_tokens"].as_u64().unwrap() > 0,
        "the frozen prefix should be cached: {usage}"
    );
}
