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
