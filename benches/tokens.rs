//! Token-counting benchmarks: raw throughput of both encodings on 1 MB of
//! mixed text, and counting a 10,000-message history with and without the
//! per-message cache.
//!
//! Run: `cargo bench --bench tokens` (add `-- --quick` for a fast pass).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use strata::domain::{Message, Role, SessionId, ToolCall};
use strata::tokens::{Encoding, TiktokenCounter, TokenCache, TokenCounter, message_tokens};

#[path = "../tests/common/mixed_text.rs"]
mod mixed_text;

const ONE_MB: usize = 1_000_000;

fn count_1mb(c: &mut Criterion) {
    let text = mixed_text::mixed_text(ONE_MB);
    let mut group = c.benchmark_group("count_1mb_mixed");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(text.len() as u64));
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let counter = TiktokenCounter::new(encoding, true);
        counter.count("warm up the BPE table");
        group.bench_function(encoding.id(), |b| b.iter(|| counter.count(black_box(&text))));
    }
    group.finish();
}

/// 10,000 messages cut from mixed text: users, assistants (every fifth with
/// a tool call) and tool results, 200 to 1,500 bytes each.
fn history() -> Vec<Message> {
    let text = mixed_text::mixed_text(10 * ONE_MB);
    let session = SessionId::new();
    let mut out = Vec::with_capacity(10_000);
    let mut at = 0;
    for i in 0..10_000usize {
        let len = 200 + (i * 7_919) % 1_300;
        let mut end = (at + len).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let content = text[at..end].to_owned();
        at = if end + 1_500 >= text.len() { 0 } else { end };
        let role = match i % 3 {
            0 => Role::User,
            1 => Role::Assistant,
            _ => Role::Tool,
        };
        let mut m = Message::new(session, role, content, 0);
        if role == Role::Tool {
            m.tool_call_id = Some(format!("call_{i}"));
        }
        if role == Role::Assistant && i % 5 == 0 {
            m.tool_calls.push(ToolCall {
                id: format!("call_{}", i + 1),
                name: "read_file".to_owned(),
                arguments: format!(r#"{{"path":"src/module_{i}.rs","line":{i}}}"#),
            });
        }
        out.push(m);
    }
    out
}

fn history_10k(c: &mut Criterion) {
    let messages = history();
    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    let mut group = c.benchmark_group("history_10k_messages");
    group.sample_size(10);
    group.throughput(Throughput::Elements(messages.len() as u64));
    group.bench_function("message_tokens_uncached", |b| {
        b.iter(|| {
            messages
                .iter()
                .map(|m| u64::from(message_tokens(&counter, m)))
                .sum::<u64>()
        })
    });
    group.bench_function("count_history_cold_cache", |b| {
        b.iter_batched(
            TokenCache::new,
            |mut cache| cache.count_history(&counter, &messages).total,
            BatchSize::PerIteration,
        )
    });
    let mut warm = TokenCache::new();
    warm.count_history(&counter, &messages);
    group.bench_function("count_history_cached", |b| {
        b.iter(|| warm.count_history(&counter, &messages).total)
    });
    group.finish();
}

criterion_group!(benches, count_1mb, history_10k);
criterion_main!(benches);
