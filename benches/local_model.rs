#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]
//! Embedded model speed: prefill and decode tokens/s and time to first token
//! for a ~400-token prompt (a first turn), for a follow-up served by a new
//! provider that loads the first turn's saved KV state (a new `strata`
//! process: a fresh context, its load timed separately), and for a further
//! follow-up in that provider (in-process re-use); the KV state's save time
//! and size per turn. For the pulled Q4_1 file and its Q8_0 conversion,
//! with 1 and 2 threads.
//!
//! A plain timing program (`harness = false`), not criterion: one sample
//! takes seconds, and with 2 threads on a busy 2-core machine it can take
//! minutes (FACTS.md), which criterion's minimum of 10 samples plus warm-up
//! turns into hours. Each configuration runs `STRATA_BENCH_REPS` times
//! (default 3) and the median is printed.
//!
//! The model comes from `$STRATA_TEST_MODEL` (that file only) or
//! `test-model/` in strata's cache (pulled and converted if absent: both files). Thread counts: `STRATA_BENCH_THREADS` (default `1,2`);
//! repetition penalty: `STRATA_BENCH_REPEAT_PENALTY` (default 1.1, as the
//! provider; 1.0 turns it off, as llama-server's default does).
//!
//! When llama.cpp's own `llama-server` is installed (`$LLAMA_SERVER`, or on
//! `PATH`), the same prompts go through it too, on 127.0.0.1 with the same
//! GGUF, threads and window, and its own `timings` are printed beside ours.

#[path = "../tests/support/locate.rs"]
mod locate;

use futures::executor::block_on_stream;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use strata::domain::{ChatRequest, RequestMessage, RequestSystem, Role, StreamEvent};
use strata::provider::Provider;
use strata::provider::local::{LocalConfig, LocalProvider, LocalStats, StateSave, model_file};

/// About 370 tokens of project instructions, as a system prompt would hold.
const SYSTEM: &str = "You are a coding assistant working in a Rust repository. \
The project is a terminal chat client that keeps sessions in SQLite and assembles a layered system prompt. \
Follow these rules. Read the relevant files before changing them, and keep each change small. \
Prefer clear names over comments, and write a comment only when the reason is not obvious from the code. \
Every public function has a documentation comment that states its inputs, outputs, units and errors. \
Errors are values: return them with context, never panic in library code, and never print from the library. \
Tests describe behaviour; each test name reads like a sentence about what the code does. \
When a test fails, read the failure before changing anything, and fix the cause rather than the symptom. \
Keep modules about one thing; a file of more than eight hundred lines needs a reason. \
The core has no input or output: it takes data and returns data, and adapters own their resources. \
The user interface only renders state and sends intents; it never waits on the network or the disk. \
Token counts are cached per message and per tokenizer, and a budget is kept for each prompt layer. \
When the history does not fit the window, old tool outputs are pruned first, then older turns are summarised. \
Pinned messages are never dropped, and a tool call is never separated from its result. \
The stable part of the system prompt is frozen for the life of a session so the provider's prompt cache stays warm. \
Configuration comes from a file in the user's config directory, from environment variables and from flags, in that order. \
Secrets are never written to the database or to logs, and are redacted before any summary is made. \
Answer in plain English, show code in fenced blocks, and say when you are unsure.";

const QUESTION: &str =
    "List twenty good names for a command-line tool, one per line, with a short reason for each.";
const FOLLOW_UP: &str = "Now pick the best three and explain why in more detail.";
const FOLLOW_UP_2: &str = "Which one would you choose for a tool that searches logs?";
const MAX_TOKENS: u64 = 64;

/// The files to measure: the pulled Q4_1 and its Q8_0 conversion.
fn model_paths() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os("STRATA_TEST_MODEL") {
        return vec![PathBuf::from(path)];
    }
    // The tests' cache (see `tests/support/locate.rs`), so a model pulled
    // for either serves both.
    let dir = locate::cache_root().map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-model"),
        |root| root.join("test-model"),
    );
    let runs = model_file::pull(&dir, &mut |line| eprintln!("model pull: {line}")).unwrap();
    let mut paths = vec![model_file::source_path(&dir).unwrap()];
    if !paths.contains(&runs) {
        paths.push(runs);
    }
    paths
}

fn message(role: Role, content: &str) -> RequestMessage {
    RequestMessage {
        role,
        content: content.to_owned(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn request(system: String, messages: Vec<RequestMessage>) -> ChatRequest {
    ChatRequest {
        model: "smollm2".to_owned(),
        system: RequestSystem {
            text: system,
            boundary_offset: None,
        },
        messages,
        max_tokens: MAX_TOKENS,
        tools: Vec::new(),
        temperature: None,
    }
}

/// Runs a request to the end; returns its text and the engine's stats.
fn run(provider: &LocalProvider, request: ChatRequest) -> (String, LocalStats) {
    let mut text = String::new();
    for event in block_on_stream(provider.stream(request)) {
        if let StreamEvent::TextDelta { text: delta } = event.unwrap() {
            text.push_str(&delta);
        }
    }
    (text, provider.last_stats().unwrap())
}

#[derive(Default)]
struct Samples {
    prompt: Vec<f64>,
    prefilled: Vec<f64>,
    reused: Vec<f64>,
    prefill_rate: Vec<f64>,
    decode_rate: Vec<f64>,
    ttft_ms: Vec<f64>,
    /// Finding, checking and loading the saved state (ms).
    state_load_ms: Vec<f64>,
    /// The KV state saved after the turn: ms and MB.
    save_ms: Vec<f64>,
    save_mb: Vec<f64>,
}

impl Samples {
    fn add(&mut self, stats: &LocalStats) {
        self.prompt.push(stats.prompt_tokens as f64);
        self.prefilled.push(stats.prefilled_tokens as f64);
        self.reused.push(stats.reused_tokens as f64);
        self.prefill_rate.push(stats.prefill_rate());
        self.decode_rate.push(stats.decode_rate());
        self.ttft_ms
            .push(stats.first_token.unwrap_or(Duration::ZERO).as_secs_f64() * 1000.0);
        self.state_load_ms.push(stats.state_load.as_secs_f64() * 1000.0);
    }

    fn add_save(&mut self, save: Option<StateSave>) {
        if let Some(save) = save {
            self.save_ms.push(save.duration.as_secs_f64() * 1000.0);
            self.save_mb.push(save.bytes as f64 / 1e6);
        }
    }

    fn print(&mut self, label: &str) {
        let mut line = format!(
            "{label:<30} prompt {:>4.0}  re-used {:>4.0}  prefilled {:>4.0}  prefill {:>7.1} tok/s  decode {:>6.1} tok/s  TTFT {:>8.1} ms",
            median(&mut self.prompt),
            median(&mut self.reused),
            median(&mut self.prefilled),
            median(&mut self.prefill_rate),
            median(&mut self.decode_rate),
            median(&mut self.ttft_ms),
        );
        if self.state_load_ms.iter().any(|&ms| ms > 0.0) {
            line.push_str(&format!(
                "  state load {:>5.1} ms",
                median(&mut self.state_load_ms)
            ));
        }
        if !self.save_ms.is_empty() {
            line.push_str(&format!(
                "  KV save {:>5.1} ms {:>5.1} MB",
                median(&mut self.save_ms),
                median(&mut self.save_mb)
            ));
        }
        println!("{line}");
    }
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let reps: usize = std::env::var("STRATA_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let threads: Vec<u32> = std::env::var("STRATA_BENCH_THREADS")
        .unwrap_or_else(|_| "1,2".to_owned())
        .split(',')
        .filter_map(|t| t.trim().parse().ok())
        .collect();
    let paths = model_paths();
    println!("max_tokens {MAX_TOKENS}  reps {reps}");
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        println!("model {}", path.display());
        for &t in &threads {
            bench_file(path, &name, t, reps);
            if let Some(binary) = llama_server() {
                server_side_by_side(&binary, path, t, reps);
            }
        }
    }
}

/// One file with `threads` threads: per rep a first turn in one provider,
/// then a new provider (same state directory) answers the follow-up from
/// the saved state and a second follow-up in-process.
fn bench_file(path: &std::path::Path, name: &str, threads: u32, reps: usize) {
    let state = tempfile::tempdir().unwrap();
    let mut config = LocalConfig::new(path);
    config.threads = threads;
    config.max_context = Some(2048);
    config.state_dir = Some(state.path().to_path_buf());
    if let Some(penalty) = std::env::var("STRATA_BENCH_REPEAT_PENALTY")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        config.repeat_penalty = penalty;
    }
    {
        // Warm-up: page the weights in, hash the file once.
        let provider = LocalProvider::load(&config).unwrap();
        run(
            &provider,
            request("Warm up.".to_owned(), vec![message(Role::User, "Hi")]),
        );
    }
    let (mut cold, mut restored, mut follow) = (Samples::default(), Samples::default(), Samples::default());
    let mut loads = Vec::new();
    for rep in 0..reps {
        // A distinct first word defeats prefix re-use across reps.
        let system = format!("R{rep}x{threads}: session of {name}. {SYSTEM}");
        let mut messages = vec![message(Role::User, QUESTION)];
        let first = LocalProvider::load(&config).unwrap();
        let (reply, stats) = run(&first, request(system.clone(), messages.clone()));
        cold.add(&stats);
        first.wait_idle();
        cold.add_save(first.last_state_save());
        drop(first);

        // A new process: a fresh context that finds the saved state.
        let started = Instant::now();
        let resumed = LocalProvider::load(&config).unwrap();
        loads.push(started.elapsed().as_secs_f64() * 1000.0);
        messages.push(message(Role::Assistant, &reply));
        messages.push(message(Role::User, FOLLOW_UP));
        let (reply, stats) = run(&resumed, request(system.clone(), messages.clone()));
        assert!(stats.restored_tokens > 0, "the saved state was not used");
        restored.add(&stats);
        resumed.wait_idle();
        restored.add_save(resumed.last_state_save());

        messages.push(message(Role::Assistant, &reply));
        messages.push(message(Role::User, FOLLOW_UP_2));
        let (_, stats) = run(&resumed, request(system, messages));
        follow.add(&stats);
        resumed.wait_idle();
        follow.add_save(resumed.last_state_save());
    }
    cold.print(&format!("{name} {threads}t, first"));
    restored.print(&format!("{name} {threads}t, new-process f-up"));
    follow.print(&format!("{name} {threads}t, in-process f-up"));
    println!(
        "{:<30} model load {:>6.1} ms (before the new-process follow-up)",
        format!("{name} {threads}t"),
        median(&mut loads)
    );
}

/// `llama-server` from `$LLAMA_SERVER` or `PATH`.
fn llama_server() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LLAMA_SERVER") {
        return Some(p.into());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("llama-server"))
            .find(|p| p.is_file())
    })
}

/// The same first and follow-up turns through llama-server, timed by the
/// server itself (`timings.prompt_per_second`, `predicted_per_second`).
fn server_side_by_side(binary: &std::path::Path, model: &std::path::Path, threads: u32, reps: usize) {
    use std::io::{Read, Write};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = threads.to_string();
    let mut child = std::process::Command::new(binary)
        .args([
            "-m",
            model.to_str().unwrap(),
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args(["-c", "2048", "-np", "1", "-t", &t, "-tb", &t, "--no-webui"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let post = |body: &serde_json::Value| -> Option<serde_json::Value> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        let body = body.to_string();
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .ok()?;
        let mut raw = String::new();
        s.read_to_string(&mut raw).ok()?;
        let json_start = raw.find("\r\n\r\n")? + 4;
        let body = &raw[json_start..];
        let start = body.find('{')?;
        let end = body.rfind('}')?;
        serde_json::from_str(&body[start..=end]).ok()
    };
    // A reply counts only when it is a completion: while the model loads,
    // the server answers HTTP 503 with an error object.
    let ask = |messages: &serde_json::Value| {
        post(
            &serde_json::json!({"messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0, "cache_prompt": true}),
        )
        .filter(|reply| reply["choices"].is_array() && reply["timings"].is_object())
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while ask(&serde_json::json!([{"role": "user", "content": "Hi"}])).is_none() {
        if std::time::Instant::now() > deadline {
            println!("llama-server did not answer within 120 s; skipped");
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let (mut cold, mut follow) = (Samples::default(), Samples::default());
    for rep in 0..reps {
        let system = format!("Session server-{threads}-{rep}. {SYSTEM}");
        let mut messages =
            serde_json::json!([{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]);
        let Some(first) = ask(&messages) else { break };
        cold.add_server(&first);
        let reply = first["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let list = messages.as_array_mut().unwrap();
        list.push(serde_json::json!({"role": "assistant", "content": reply}));
        list.push(serde_json::json!({"role": "user", "content": FOLLOW_UP}));
        let Some(second) = ask(&messages) else { break };
        follow.add_server(&second);
    }
    cold.print(&format!("llama-server {threads}t, first"));
    follow.print(&format!("llama-server {threads}t, follow"));
    let _ = child.kill();
    let _ = child.wait();
}

impl Samples {
    /// One llama-server reply's own timings.
    fn add_server(&mut self, reply: &serde_json::Value) {
        let t = &reply["timings"];
        let f = |k: &str| t[k].as_f64().unwrap_or(0.0);
        self.prompt
            .push(reply["usage"]["prompt_tokens"].as_f64().unwrap_or(0.0));
        self.reused.push(f("cache_n"));
        self.prefilled.push(f("prompt_n"));
        self.prefill_rate.push(f("prompt_per_second"));
        self.decode_rate.push(f("predicted_per_second"));
        // Time to first token as the server sees it: the prefill time.
        self.ttft_ms.push(f("prompt_ms"));
    }
}
