#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]
//! The Q8_0 conversion of the pulled model, for real: `model_file::pull`
//! on a models directory that holds the pulled Q4_1 file converts it, the
//! result is the file that runs, llama.cpp loads it and it answers the
//! factual prompts as the Q4_1 file does.

use crate::support::common;

use futures::executor::block_on_stream;
use std::path::Path;
use strata::domain::{ChatRequest, RequestMessage, RequestSystem, Role, StreamEvent};
use strata::provider::Provider;
use strata::provider::local::converted::{self, RunningFile};
use strata::provider::local::model_file::{self, GGUF_NAME, GGUF_SHA256};
use strata::provider::local::{LocalConfig, LocalProvider};
use strata::tokens::TokenCounter;

/// Prompts and a word the answer must contain (ones the 135M model gets
/// right as shipped; it answers the capital of Germany in mangled German).
const FACTS: [(&str, &str); 5] = [
    ("What is the capital of France?", "Paris"),
    ("What is the capital of Italy?", "Rome"),
    ("What is the capital of Japan?", "Tokyo"),
    ("How many days are in a week?", "7"),
    ("Who wrote Romeo and Juliet?", "Shakespeare"),
];

fn answer(provider: &LocalProvider, question: &str) -> String {
    let request = ChatRequest {
        model: "smollm2".to_owned(),
        system: RequestSystem {
            text: "You are a helpful assistant. Answer briefly.".to_owned(),
            boundary_offset: None,
        },
        messages: vec![RequestMessage {
            role: Role::User,
            content: question.to_owned(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }],
        max_tokens: 24,
        tools: Vec::new(),
        temperature: None,
    };
    let mut text = String::new();
    for event in block_on_stream(provider.stream(request)) {
        if let StreamEvent::TextDelta { text: delta } = event.unwrap() {
            text.push_str(&delta);
        }
    }
    text
}

fn load(path: &Path) -> LocalProvider {
    let mut config = LocalConfig::new(path);
    config.max_context = Some(512);
    LocalProvider::load(&config).unwrap()
}

#[test]
fn a_pull_converts_the_model_to_q8_0_and_it_answers_as_the_q4_1_file_does() {
    let source = common::test_model();
    let dir = tempfile::tempdir().unwrap();
    let pulled = dir.path().join(GGUF_NAME);
    std::fs::hard_link(&source, &pulled)
        .or_else(|_| std::fs::copy(&source, &pulled).map(|_| ()))
        .unwrap();

    let mut lines = Vec::new();
    let started = std::time::Instant::now();
    let runs = model_file::pull(dir.path(), &mut |l| lines.push(l.to_owned())).unwrap();
    eprintln!("converted in {:?}", started.elapsed());
    assert_eq!(runs, dir.path().join(converted::Q8_0_NAME), "{lines:?}");
    assert_eq!(model_file::path(dir.path()), Some(runs.clone()));
    let size = std::fs::metadata(&runs).unwrap().len();
    assert!((140_000_000..150_000_000).contains(&size), "{size} bytes");
    let Some(RunningFile::Converted { record, .. }) = converted::running(dir.path()) else {
        panic!("the conversion is not what runs");
    };
    assert_eq!(record.source_sha256, GGUF_SHA256);
    assert_eq!(record.sha256, model_file::sha256_file(&runs).unwrap());
    assert_eq!(record.size, size);

    let q8 = load(&runs);
    assert_eq!(q8.model_name(), "SmolLM2-135M-Instruct.Q8_0");
    let q4 = load(&source);
    for (question, expected) in FACTS {
        let q4_answer = answer(&q4, question);
        let q8_answer = answer(&q8, question);
        assert!(q4_answer.contains(expected), "Q4_1: {question} -> {q4_answer}");
        assert!(q8_answer.contains(expected), "Q8_0: {question} -> {q8_answer}");
    }
    // Both count with the same tokenizer.
    assert_eq!(q8.tokenizer().id(), q4.tokenizer().id());
}
