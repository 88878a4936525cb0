//! Chat-pane rendering cost: a 200-message Markdown transcript at width 100
//! (plain, and with every code block highlighted), the same served from the
//! wrap cache, one 1,000-line code block, and highlighting a 200-line Rust
//! block on the worker thread (request to result).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, Instant};
use strata::render::{
    Highlight, HighlightLookup, Highlighter, NoHighlights, WrapCache, content_hash, render_markdown,
};

fn rust_block(i: usize, lines: usize) -> String {
    let mut s = String::from("```rust\n");
    for j in 0..lines {
        s.push_str(&format!(
            "    let total_{j} = items.iter().filter(|x| x.id > {i}).map(|x| x.cost * {j}).sum::<u64>();\n"
        ));
    }
    s.push_str("```\n");
    s
}

/// Message `i` of a synthetic transcript: prose with inline markup, lists,
/// quotes, code in two languages, tables and some CJK.
fn message(i: usize) -> String {
    let mut m = format!(
        "## Step {i}\n\nThe **pipeline** keeps the *system prompt* byte-stable so the provider's cache hits; \
         see `prepare()` and [the design](https://example.com/design#{i}). Long sentences like this one wrap \
         across several rows of the chat pane at a hundred columns.\n\n"
    );
    match i % 5 {
        0 => m.push_str(&rust_block(i, 12)),
        1 => m.push_str("- first point about tokens\n- second point, with `code`\n  - nested detail\n1. ordered\n2. list\n"),
        2 => m.push_str("```python\ndef f(x):\n    return [y * 2 for y in x if y > 0]\n\nprint(f(range(10)))\n```\n"),
        3 => m.push_str(
            "| layer | tokens | status |\n|---|---:|---|\n| project | 1204 | found |\n| memory | 88 | truncated |\n",
        ),
        _ => m.push_str("> 中文和日本語のテキストが混ざった段落。🙂 emoji too.\n"),
    }
    m
}

fn transcript() -> Vec<String> {
    (0..200).map(message).collect()
}

/// A highlighter with every block of `messages` finished.
fn warmed(messages: &[String]) -> Highlighter {
    let mut h = Highlighter::spawn();
    let keys: Vec<_> = messages.iter().flat_map(|m| h.request_markdown(m)).collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while keys.iter().any(|k| h.lookup(*k) == Highlight::Pending) && Instant::now() < deadline {
        h.wait(Duration::from_secs(1));
    }
    h
}

fn bench(c: &mut Criterion) {
    let messages = transcript();
    let highlighter = warmed(&messages);
    let total_lines: usize = messages
        .iter()
        .map(|m| render_markdown(m, 100, &highlighter).lines.len())
        .sum();
    eprintln!("transcript: 200 messages, {total_lines} lines at width 100");

    c.bench_function("render_200_messages_w100_plain", |b| {
        b.iter(|| {
            for m in &messages {
                black_box(render_markdown(black_box(m), 100, &NoHighlights));
            }
        });
    });
    c.bench_function("render_200_messages_w100_highlighted", |b| {
        b.iter(|| {
            for m in &messages {
                black_box(render_markdown(black_box(m), 100, &highlighter));
            }
        });
    });

    let mut cache = WrapCache::new(1_000_000);
    let keys: Vec<u64> = messages.iter().map(|m| content_hash(m)).collect();
    for (m, k) in messages.iter().zip(&keys) {
        cache.get_or_render(*k, 100, |w| render_markdown(m, w, &highlighter));
    }
    c.bench_function("wrap_cache_hit_200_messages", |b| {
        b.iter(|| {
            for (m, k) in messages.iter().zip(&keys) {
                black_box(cache.get_or_render(*k, 100, |w| render_markdown(m, w, &highlighter)));
            }
        });
    });

    let big = rust_block(0, 1_000);
    c.bench_function("render_1000_line_code_block_plain", |b| {
        b.iter(|| black_box(render_markdown(black_box(&big), 100, &NoHighlights)));
    });

    let mut hl = Highlighter::spawn();
    let mut n = 0usize;
    let mut group = c.benchmark_group("highlight_worker");
    group.sample_size(10);
    group.bench_function("rust_200_lines_request_to_result", |b| {
        b.iter(|| {
            n += 1;
            let code = rust_block(n, 200);
            let key = hl.request(&code["```rust\n".len()..code.len() - "```\n".len()], "rust");
            while hl.lookup(key) == Highlight::Pending {
                hl.wait(Duration::from_secs(5));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
