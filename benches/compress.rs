//! Compression benchmarks: a whole extractive compression (free pruning,
//! boundaries, extractive summary, redaction) of a 2,000-message history
//! with code blocks and 200-line tool outputs, and the summariser-input
//! preparation (serialisation, caps, redaction) alone.
//!
//! Run: `cargo bench --bench compress` (add `-- --quick` for a fast pass).

use criterion::{Criterion, criterion_group, criterion_main};
use std::borrow::Cow;
use std::hint::black_box;
use strata::compress::{
    CompressionInput, DefaultEngine, EngineConfig, Pruner, SummarizerChoice, Trigger, find_boundaries,
    summary_input, tokens_of,
};
use strata::domain::{Message, Role, SessionId, TokenCount, ToolCall};
use strata::tokens::{Encoding, Threshold, TiktokenCounter, TokenCounter};

/// 2,000 messages in 400 turns: a user request, an assistant call to
/// `shell` or `read_file`, its 200-line result, an assistant reply with a
/// code block and a planted secret now and then.
fn history(counter: &dyn TokenCounter) -> Vec<Message> {
    let session = SessionId::new();
    let mut out = Vec::with_capacity(2_000);
    for turn in 0..400usize {
        let at = 1_795_910_400_000 + turn as i64 * 60_000;
        out.push(Message::new(
            session,
            Role::User,
            format!("Please fix the failing test in src/module_{turn}.rs; the CI key is sk-proj-{turn:0>32}"),
            at,
        ));
        let mut call = Message::new(session, Role::Assistant, "Let me run the tests first.", at);
        let (name, args) = if turn % 2 == 0 {
            ("shell", format!(r#"{{"command":"cargo test -p module_{turn}"}}"#))
        } else {
            (
                "read_file",
                format!(r#"{{"path":"src/module_{turn}.rs","offset":1}}"#),
            )
        };
        call.tool_calls.push(ToolCall {
            id: format!("c{turn}"),
            name: name.into(),
            arguments: args,
        });
        out.push(call);
        let lines: Vec<String> = (0..200)
            .map(|l| match l {
                150 => format!("error[E0308]: mismatched types in src/module_{turn}.rs:{l}"),
                _ => format!(
                    "   Compiling crate_{l} v0.{turn}.{l} (/srv/build/crate_{l}) AUTH_TOKEN=t{l}x{turn}"
                ),
            })
            .collect();
        let mut result = Message::new(session, Role::Tool, lines.join("\n"), at);
        result.tool_call_id = Some(format!("c{turn}"));
        out.push(result);
        out.push(Message::new(
            session,
            Role::Assistant,
            format!(
                "The test fails because the parser returns early. We decided to keep the early return.\n\
                 ```rust\nfn parse_{turn}(input: &str) -> Option<u32> {{\n    input.trim().parse().ok()\n}}\n```\n\
                 I fixed it in src/module_{turn}.rs and `cargo test` now passes."
            ),
            at,
        ));
        out.push(Message::new(
            session,
            Role::User,
            format!("Thanks, next one ({turn})."),
            at,
        ));
    }
    for m in &mut out {
        let n = strata::tokens::message_tokens(counter, m);
        m.tokens = Some(TokenCount {
            tokenizer: counter.id().to_owned(),
            tokens: n,
        });
    }
    out
}

fn config() -> EngineConfig {
    EngineConfig {
        window: 200_000,
        reserved_output: 8_192,
        threshold: Threshold::compute(200_000, 8_192, 0.75, 256_000),
        protect_last_n: 4,
        summarizer: SummarizerChoice::Extractive,
        enabled: true,
    }
}

fn whole_compression(c: &mut Criterion) {
    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    let messages = history(&counter);
    let mut group = c.benchmark_group("compress_2000_messages");
    group.sample_size(10);
    group.bench_function("extractive_whole", |b| {
        b.iter(|| {
            let mut engine = DefaultEngine::new(config());
            let input = CompressionInput {
                messages: &messages,
                fixed_tokens: 5_000,
                counter: &counter,
                topic: None,
                sent_tokens: None,
                sent_dropped: None,
            };
            black_box(engine.compress_extractive(Trigger::Manual, &input, 0))
        });
    });
    group.bench_function("prune_and_boundaries", |b| {
        let tokens: Vec<u32> = messages.iter().map(|m| tokens_of(&counter, m)).collect();
        b.iter(|| {
            let bounds = find_boundaries(&messages, &tokens, 28_771, 4);
            let pruner = Pruner::new(&messages, bounds.tail_start);
            let rewritten = (0..messages.len())
                .filter(|&i| matches!(pruner.message(i), Cow::Owned(_)))
                .count();
            black_box(rewritten)
        });
    });
    group.bench_function("summary_input_with_redaction", |b| {
        let refs: Vec<&Message> = messages.iter().collect();
        b.iter(|| black_box(summary_input(black_box(&refs))));
    });
    group.finish();
}

criterion_group!(benches, whole_compression);
criterion_main!(benches);
