//! Token-counting benchmarks: the cold start of both encodings (building the
//! process-wide table, and a first count of 1 MB of mixed text with it), raw
//! throughput on 1 MB once the table is built, and counting a 10,000-message
//! history with and without the per-message cache.
//!
//! The table is built once per process, so each cold-start iteration runs
//! this program again as a child (with [`COLD_ENV`] set), which times its
//! own first use and prints the nanoseconds; process start-up is not in the
//! figure. The cold figures are the CPU time of the thread that builds and
//! counts (Linux; wall-clock time elsewhere), which a machine busy with
//! other work changes less than wall-clock time.
//!
//! Run: `cargo bench --bench tokens` (add `-- --quick` for a fast pass).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group};
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};
use strata::domain::{Message, Role, SessionId, ToolCall};
use strata::tokens::{Encoding, TiktokenCounter, TokenCache, TokenCounter, message_tokens};

#[path = "../tests/support/mixed_text.rs"]
mod mixed_text;

const ONE_MB: usize = 1_000_000;

/// Set in a child run: `load:ENCODING` or `count:ENCODING`.
const COLD_ENV: &str = "STRATA_BENCH_TOKENS_COLD";

/// The encoding named `id`.
fn encoding(id: &str) -> Encoding {
    [Encoding::O200kBase, Encoding::Cl100kBase]
        .into_iter()
        .find(|e| e.id() == id)
        .expect("a known encoding id")
}

/// In a child run, times what [`COLD_ENV`] asks for and prints the
/// nanoseconds (of CPU time where [`thread_cpu_ns`] can read it): `load` is [`Encoding::warm`] alone, `count` a first count of
/// 1 MB (the table built on the way). Returns false in a normal run.
fn child_run() -> bool {
    let Ok(task) = std::env::var(COLD_ENV) else {
        return false;
    };
    let (what, id) = task.split_once(':').expect("WHAT:ENCODING");
    let encoding = encoding(id);
    let text = mixed_text::mixed_text(ONE_MB);
    let start = Instant::now();
    let cpu_start = thread_cpu_ns();
    match what {
        "load" => encoding.warm(),
        "count" => {
            black_box(TiktokenCounter::new(encoding, true).count(black_box(&text)));
        }
        other => panic!("unknown cold task {other}"),
    }
    let nanos = match (cpu_start, thread_cpu_ns()) {
        (Some(a), Some(b)) => u128::from(b - a),
        _ => start.elapsed().as_nanos(),
    };
    println!("{nanos}");
    true
}

/// CPU time this thread has used, nanoseconds (Linux: the first field of
/// `/proc/thread-self/schedstat`); `None` elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// One child run of `task`; the time it measured.
fn cold_once(task: &str) -> Duration {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(COLD_ENV, task)
        .output()
        .unwrap();
    assert!(out.status.success(), "cold run {task} failed");
    let nanos: u64 = String::from_utf8(out.stdout).unwrap().trim().parse().unwrap();
    Duration::from_nanos(nanos)
}

fn cold_start(c: &mut Criterion) {
    let mut group = c.benchmark_group("cold_start");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        for what in ["load", "count"] {
            let task = format!("{what}:{}", encoding.id());
            let name = match what {
                "load" => format!("load_table/{}", encoding.id()),
                _ => format!("first_count_1mb/{}", encoding.id()),
            };
            group.bench_function(name, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| cold_once(&task)).sum())
            });
        }
    }
    group.finish();
}

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

criterion_group!(benches, cold_start, count_1mb, history_10k);

fn main() {
    if child_run() {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
