//! strata's side of the peer comparison (`bench/compare/README.md`): reads
//! the shared history (an OpenAI `messages` JSON file) and times, for a
//! 128,000-token window under `o200k_base`:
//!
//! - `pipeline`: the per-turn preparation ([`prepare_with`], gptme's
//!   `reduce_log` + `limit_log`), steady state (counts cached, cut memo
//!   warm), first turn (counts cached, new memo) and cold (every message
//!   tokenised first);
//! - `compress`: a whole extractive compression (free pruning, boundaries,
//!   extractive summary, redaction, assembly; hermes' `compress()` with a
//!   stubbed summariser), with counts cached and cold;
//! - `summary_input`: the summariser's input (labels, caps, redaction) over
//!   every non-system message (hermes' `_serialize_for_summary`).
//!
//! The leading system message is the frozen system prompt; the others are
//! read by `strata import`'s parser. Each figure is the median of
//! `--repeat` runs (default 9; at least [`FAST_REPEAT`] for the figures
//! that take milliseconds, the cold ones at most 3 for the compression) in
//! milliseconds, wall-clock (`*_ms`), with the mean CPU time of the thread
//! beside it (`*_cpu_ms`, Linux; `null` elsewhere), and for the cold
//! figures, whose counting runs on every core, the mean CPU time of the
//! whole process (`*_process_cpu_ms`, in ticks of 10 ms). Prints one JSON
//! object.
//!
//! Run: `cargo run --release --example compare -- HISTORY.json [--repeat N]`
#![allow(clippy::print_stdout)]

use anyhow::{Context, bail};
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;
use strata::compress::{
    CompressionInput, DefaultEngine, EngineConfig, SummarizerChoice, Trigger, summary_input,
};
use strata::domain::{Message, RequestSystem, Role, SessionId, TokenCount};
use strata::pipeline::{CutMemo, PrepareInput, prepare, prepare_with};
use strata::tokens::{
    Encoding, Threshold, TiktokenCounter, TokenCache, TokenCounter, default_reserved_output,
};

const WINDOW: u64 = 128_000;

/// Runs of each figure that takes milliseconds: a mean CPU time over few
/// runs of a few milliseconds is dominated by the scheduler's ticks and by
/// the odd slow run on a shared machine.
const FAST_REPEAT: usize = 50;

/// CPU time this thread has used, nanoseconds (Linux: the first field of
/// `/proc/thread-self/schedstat`); `None` elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// CPU time of the whole process, every thread included (ended ones too),
/// nanoseconds (Linux: `utime + stime` of `/proc/self/stat`, in ticks of
/// 10 ms: `USER_HZ` is 100); `None` elsewhere. Counting a cold history
/// runs on every core, so the calling thread's CPU time alone says too
/// little.
fn process_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000_000)
}

/// Median of `values`, rounded to microseconds (values in milliseconds).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2] * 1_000.0).round() / 1_000.0
}

/// One timed figure: median wall milliseconds of the runs, and their mean
/// CPU milliseconds (the kernel updates a thread's CPU time at scheduler
/// ticks, so one short run reads as 0 or one tick; the total over all runs
/// divided by their number does not have that error).
struct Timing {
    wall_ms: f64,
    cpu_ms: Option<f64>,
    process_cpu_ms: Option<f64>,
}

/// Times `repeat` runs of `f`; returns the timing and the last result.
fn median_ms<T>(repeat: usize, mut f: impl FnMut() -> T) -> (Timing, T) {
    let runs = repeat.max(1);
    let mut walls = Vec::with_capacity(runs);
    let mut out = None;
    let cpu_start = thread_cpu_ns();
    let process_start = process_cpu_ns();
    for _ in 0..runs {
        let start = Instant::now();
        out = Some(black_box(f()));
        walls.push(start.elapsed().as_secs_f64() * 1_000.0);
    }
    let mean_ms = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => {
            Some((b.saturating_sub(a) as f64 / 1e6 / runs as f64 * 1_000.0).round() / 1_000.0)
        }
        _ => None,
    };
    let cpu_ms = mean_ms(cpu_start, thread_cpu_ns());
    let process_cpu_ms = mean_ms(process_start, process_cpu_ns());
    let Some(out) = out else {
        unreachable!("at least one run")
    };
    let timing = Timing {
        wall_ms: median(walls),
        cpu_ms,
        process_cpu_ms,
    };
    (timing, out)
}

fn args() -> anyhow::Result<(String, usize)> {
    let mut path = None;
    let mut repeat = 9;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--repeat" => repeat = it.next().context("--repeat needs a number")?.parse()?,
            _ if path.is_none() => path = Some(a),
            _ => bail!("usage: compare HISTORY.json [--repeat N]"),
        }
    }
    Ok((path.context("usage: compare HISTORY.json [--repeat N]")?, repeat))
}

/// The preparation of `messages` for a [`WINDOW`]-token window.
fn prepare_input<'a>(
    system: &'a RequestSystem,
    system_tokens: u32,
    messages: &'a [Message],
    counts: &'a [u32],
    counter: &'a dyn TokenCounter,
    reserved: u64,
) -> PrepareInput<'a> {
    PrepareInput {
        system,
        system_tokens,
        messages,
        counts,
        counter,
        tools: &[],
        tool_tokens: 0,
        window: WINDOW,
        reserved_output: reserved,
        exact: true,
        max_messages: None,
        single_system: true,
        model: "gpt-4o",
        max_tokens: reserved,
        temperature: None,
    }
}

fn with_counts(messages: &[Message], counts: &[u32], counter: &dyn TokenCounter) -> Vec<Message> {
    let mut out = messages.to_vec();
    for (m, n) in out.iter_mut().zip(counts) {
        m.tokens = Some(TokenCount {
            tokenizer: counter.id().to_owned(),
            tokens: *n,
        });
    }
    out
}

fn main() -> anyhow::Result<()> {
    let (path, repeat) = args()?;
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    let mut messages =
        strata::runtime::parse_openai_messages(&text, SessionId::new(), 1_795_910_400_000)?.messages;
    let system_text = match messages.first() {
        Some(m) if m.role == Role::System => messages.remove(0).content,
        _ => String::new(),
    };
    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    counter.count("warm up the BPE tables");
    let system = RequestSystem {
        text: system_text,
        boundary_offset: None,
    };
    let system_tokens = u32::try_from(counter.count(&system.text))?;
    let reserved = default_reserved_output(strata::domain::ProviderKind::OpenAi, WINDOW);

    let counts = TokenCache::new().count_history(&counter, &messages);
    let input = |counts| prepare_input(&system, system_tokens, &messages, counts, &counter, reserved);

    // Pipeline.
    let inp = input(&counts.tokens);
    let mut memo = CutMemo::new();
    let first = prepare_with(&inp, &mut memo)?;
    let fast = repeat.max(FAST_REPEAT);
    let (steady, prepared) = median_ms(fast, || prepare_with(&inp, &mut memo));
    let prepared = prepared?;
    anyhow::ensure!(prepared == first, "a warm memo changed the result");
    let (first_turn, _) = median_ms(fast, || prepare(&inp));
    let (cold, _) = median_ms(repeat, || {
        let counts = TokenCache::new().count_history(&counter, &messages);
        let inp = prepare_input(
            &system,
            system_tokens,
            &messages,
            &counts.tokens,
            &counter,
            reserved,
        );
        prepare(&inp).map(|p| p.prepared_tokens)
    });
    let truncated = prepared
        .report
        .iter()
        .filter(|e| e.action == strata::pipeline::Action::Truncated)
        .count();

    // Whole compression.
    let config = EngineConfig {
        window: WINDOW,
        reserved_output: reserved,
        threshold: Threshold::compute(WINDOW, reserved, 0.75, 256_000),
        protect_last_n: 20,
        summarizer: SummarizerChoice::Extractive,
        enabled: true,
    };
    let counted = with_counts(&messages, &counts.tokens, &counter);
    let compress = |msgs: &[Message]| {
        let mut engine = DefaultEngine::new(config.clone());
        let input = CompressionInput {
            messages: msgs,
            fixed_tokens: u64::from(system_tokens),
            counter: &counter,
            topic: None,
            sent_tokens: None,
            sent_dropped: None,
        };
        engine.compress_extractive(Trigger::Manual, &input, 1_795_910_400_000)
    };
    let (compress_cached, plan) = median_ms(fast, || compress(&counted));
    let plan = plan?;
    let (compress_cold, _) = median_ms(repeat.min(3), || compress(&messages).map(|p| p.tokens_after));

    // Summariser input.
    let refs: Vec<&Message> = messages.iter().filter(|m| m.role != Role::System).collect();
    let (input_ms, transcript) = median_ms(fast, || summary_input(&refs));

    let out = json!({
        "party": "strata",
        "version": env!("CARGO_PKG_VERSION"),
        "messages_in": messages.len() + usize::from(!system.text.is_empty()),
        "tokens_in": counts.total + u64::from(system_tokens),
        "window": WINDOW,
        "reserved_output": reserved,
        "pipeline_steady_ms": steady.wall_ms,
        "pipeline_steady_cpu_ms": steady.cpu_ms,
        "pipeline_first_turn_ms": first_turn.wall_ms,
        "pipeline_first_turn_cpu_ms": first_turn.cpu_ms,
        "pipeline_cold_ms": cold.wall_ms,
        "pipeline_cold_cpu_ms": cold.cpu_ms,
        "pipeline_cold_process_cpu_ms": cold.process_cpu_ms,
        "pipeline_messages_out": prepared.request.messages.len(),
        "pipeline_truncated": truncated,
        "pipeline_tokens_out": prepared.prepared_tokens,
        "compress_cached_ms": compress_cached.wall_ms,
        "compress_cached_cpu_ms": compress_cached.cpu_ms,
        "compress_cold_ms": compress_cold.wall_ms,
        "compress_cold_cpu_ms": compress_cold.cpu_ms,
        "compress_cold_process_cpu_ms": compress_cold.process_cpu_ms,
        "compress_messages_out": plan.messages_after,
        "compress_tokens_out": plan.tokens_after,
        "summary_input_messages": refs.len(),
        "summary_input_ms": input_ms.wall_ms,
        "summary_input_cpu_ms": input_ms.cpu_ms,
        "summary_input_chars": transcript.chars().count(),
        "repeat": repeat,
        "repeat_fast": fast,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
