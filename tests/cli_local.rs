//! `strata chat` on the embedded model (llama.cpp's own `llama-server`
//! serving the same GGUF is tested in `tests/llama_server.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Sandbox, test_model};

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

#[test]
fn a_follow_up_in_a_new_process_reuses_the_saved_kv_state() {
    let sb = Sandbox::new();
    let model = test_model();
    let model = model.to_str().unwrap();
    let first = sb.run(&[
        "chat",
        "--json",
        "--model-path",
        model,
        "What is the capital of France?",
    ]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let events = json_lines(&first);
    let session = events[0]["session_id"].as_str().unwrap().to_owned();

    let second = sb.run(&[
        "chat",
        "--json",
        "--model-path",
        model,
        "--session",
        &session,
        "And what is the capital of Germany?",
    ]);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let events = json_lines(&second);
    let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
    let prompt = usage["prompt_tokens"].as_u64().unwrap();
    let read = usage["cache_read_tokens"].as_u64().unwrap();
    assert!(
        read * 10 >= prompt * 9,
        "the new process re-used only {read} of {prompt} prompt tokens"
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(text.contains("Berlin"), "{text}");

    let checks = sb.json(&["doctor", "--json", "--model-path", model]);
    let kv = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "kv state")
        .unwrap();
    let detail = kv["detail"].as_str().unwrap();
    assert!(
        detail.contains(" in 1 saved state(s) of a 1000.0 MB cap"),
        "{detail}"
    );
}
