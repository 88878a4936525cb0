//! Per-turn preparation benchmarks (DESIGN §12): a 10,000-message session
//! of about 2.4 million tokens, prepared for a 200,000-, a 1,000,000- and a
//! 4,000,000-token window (where it all fits):
//!
//! - `cached_*`: per-message counts cached and the session's [`CutMemo`]
//!   warm, the steady state of a conversation, turn after turn (target
//!   ≤ 5 ms per turn);
//! - `cached_counts_new_memo_*`: counts cached, memo empty (the first turn
//!   after opening a session, and `strata context`): truncated copies are
//!   tokenised;
//! - `cold_*`: nothing cached, every message tokenised first.
//!
//! The history is real mixed text: users, assistants (every fifth calls a
//! tool, every 25th holds a 40-line code block) and tool results (every
//! tenth a 12 KB log), so that reduce has real work to do.
//!
//! Run: `cargo bench --bench pipeline` (add `-- --quick` for a fast pass).
#![allow(clippy::print_stderr)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use strata::domain::{Message, RequestSystem, Role, SessionId, ToolCall};
use strata::pipeline::{CutMemo, PrepareInput, prepare, prepare_with};
use strata::tokens::{Encoding, TiktokenCounter, TokenCache, TokenCounter};

#[path = "../tests/support/mixed_text.rs"]
mod mixed_text;

const MESSAGES: usize = 10_000;

/// A slice of `text` of about `len` bytes starting at `*at`, advancing it.
fn cut(text: &str, at: &mut usize, len: usize) -> String {
    if *at + len + 8 >= text.len() {
        *at = 0;
    }
    let mut start = *at;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let mut end = start + len;
    while !text.is_char_boundary(end) {
        end += 1;
    }
    *at = end;
    text[start..end].to_owned()
}

fn history() -> Vec<Message> {
    let text = mixed_text::mixed_text(12_000_000);
    let code: String = (0..40)
        .map(|i| format!("    let value_{i} = compute({i});\n"))
        .collect();
    let session = SessionId::new();
    let mut out = Vec::with_capacity(MESSAGES);
    let mut at = 0;
    let mut i = 0;
    while out.len() < MESSAGES {
        out.push(Message::new(
            session,
            Role::User,
            cut(&text, &mut at, 110 + i % 190),
            0,
        ));
        let mut reply = Message::new(session, Role::Assistant, cut(&text, &mut at, 270 + i % 350), 0);
        if i % 25 == 0 {
            reply.content.push_str(&format!("\n```rust\n{code}```\n"));
        }
        if i % 5 == 0 {
            let id = format!("call_{i}");
            reply.tool_calls.push(ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"src/module_{i}.rs"}}"#),
            });
            out.push(reply);
            let len = if i % 10 == 0 { 12_000 } else { 450 };
            let mut result = Message::new(session, Role::Tool, cut(&text, &mut at, len), 0);
            result.tool_call_id = Some(id);
            out.push(result);
            out.push(Message::new(
                session,
                Role::Assistant,
                cut(&text, &mut at, 150),
                0,
            ));
        } else {
            out.push(reply);
        }
        i += 1;
    }
    out.truncate(MESSAGES);
    if out.last().is_some_and(|m| m.role != Role::User) {
        out.push(Message::new(session, Role::User, "and now?", 0));
    }
    out
}

fn input<'a>(
    system: &'a RequestSystem,
    system_tokens: u32,
    messages: &'a [Message],
    counts: &'a [u32],
    counter: &'a dyn TokenCounter,
    window: u64,
) -> PrepareInput<'a> {
    PrepareInput {
        system,
        system_tokens,
        messages,
        counts,
        counter,
        tools: &[],
        tool_tokens: 3_000,
        window,
        reserved_output: 8_192,
        exact: true,
        max_messages: None,
        single_system: false,
        model: "gpt-4o",
        max_tokens: 8_192,
        temperature: None,
    }
}

fn pipeline_10k(c: &mut Criterion) {
    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    let messages = history();
    let system = RequestSystem {
        text: mixed_text::mixed_text(8_000),
        boundary_offset: None,
    };
    let system_tokens = counter.count(&system.text) as u32;
    let counts = TokenCache::new().count_history(&counter, &messages);
    eprintln!(
        "history: {} messages, {} tokens",
        messages.len(),
        strata::text::group_digits(counts.total)
    );
    let mut group = c.benchmark_group("prepare_10k_messages");
    group.sample_size(10);
    // 4,000,000: the whole history fits, nothing to reduce (the steady
    // state when compression keeps a session under its threshold).
    for window in [200_000u64, 1_000_000, 4_000_000] {
        let inp = input(
            &system,
            system_tokens,
            &messages,
            &counts.tokens,
            &counter,
            window,
        );
        let p = prepare(&inp).unwrap_or_else(|e| panic!("prepare failed: {e}"));
        let truncated = p
            .report
            .iter()
            .filter(|e| e.action == strata::pipeline::Action::Truncated)
            .count();
        eprintln!(
            "window {window}: {} messages sent, {truncated} truncated, {} tokens",
            p.request.messages.len(),
            p.prepared_tokens
        );
        let mut memo = CutMemo::new();
        let warm = prepare_with(&inp, &mut memo).unwrap_or_else(|e| panic!("prepare failed: {e}"));
        assert_eq!(warm, p, "a memo must not change the result");
        group.bench_function(format!("cached_window_{window}"), |b| {
            b.iter(|| prepare_with(black_box(&inp), &mut memo).map(|p| p.prepared_tokens))
        });
        if window < 4_000_000 {
            group.bench_function(format!("cached_counts_new_memo_window_{window}"), |b| {
                b.iter(|| prepare(black_box(&inp)).map(|p| p.prepared_tokens))
            });
        }
    }
    for window in [200_000u64, 1_000_000] {
        group.bench_function(format!("cold_window_{window}"), |b| {
            b.iter_batched(
                TokenCache::new,
                |mut cache| {
                    let counts = cache.count_history(&counter, &messages);
                    let inp = input(
                        &system,
                        system_tokens,
                        &messages,
                        &counts.tokens,
                        &counter,
                        window,
                    );
                    prepare(&inp).map(|p| p.prepared_tokens)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, pipeline_10k);
criterion_main!(benches);
