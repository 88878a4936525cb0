//! The context list over a 10,000-message session (issue "context
//! control", target ≤ 30 ms to open and to re-sort): the first 3,000
//! messages archived behind a summary, every fifth reply calling a tool
//! (every tenth result a 12 KB log), some messages pinned and excluded.
//!
//! - `rows`: the rows from the loaded messages, the next request's report
//!   and the compaction records (what the app does when the list opens: it
//!   has the report from the context pane already);
//! - `open`: the report made again (counts cached, the session's cut memo
//!   warm, as a live conversation holds them) plus the rows;
//! - `resort_by_cost`: the rows ordered by cost, then back by position.
//!
//! Run: `cargo bench --bench context_list` (add `-- --quick` for a fast pass).
#![allow(clippy::print_stderr)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use strata::domain::{
    Compaction, CompactionId, CompactionKind, CompactionTrigger, Message, MessageKind, RequestSystem, Role,
    SessionId, Summarizer, TokenCount, ToolCall,
};
use strata::pipeline::{CutMemo, PrepareInput, context_rows, report_with, sort_by_cost, sort_by_position};
use strata::tokens::{Encoding, TiktokenCounter, TokenCache, TokenCounter};

#[path = "../tests/support/mixed_text.rs"]
mod mixed_text;

const MESSAGES: usize = 10_000;
const ARCHIVED: usize = 3_000;

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

/// The session's messages (archived ones first, then the summary and the
/// active ones, as the store reads them) and its one compaction.
fn session() -> (Vec<Message>, Compaction) {
    let text = mixed_text::mixed_text(12_000_000);
    let session = SessionId::new();
    let mut out = Vec::with_capacity(MESSAGES + 1);
    let mut at = 0;
    let mut i = 0;
    while out.len() < MESSAGES {
        let mut user = Message::new(session, Role::User, cut(&text, &mut at, 110 + i % 190), 0);
        user.pinned = i % 400 == 7;
        out.push(user);
        let mut reply = Message::new(session, Role::Assistant, cut(&text, &mut at, 270 + i % 350), 0);
        if i % 5 == 0 {
            let id = format!("call_{i}");
            reply.tool_calls.push(ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"src/module_{i}.rs"}}"#),
            });
            reply.excluded = i % 45 == 0;
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
    out.push(Message::new(session, Role::User, "and now?", 0));
    let mut summary = Message::new(session, Role::User, cut(&text, &mut at, 8_000), 0);
    summary.kind = MessageKind::Summary;
    let compaction = Compaction {
        id: CompactionId::new(),
        session_id: session,
        trigger: CompactionTrigger::Auto,
        topic: None,
        first_message_id: Some(out[0].id),
        last_message_id: Some(out[ARCHIVED - 1].id),
        summary_message_id: Some(summary.id),
        summarizer: Summarizer::Extractive,
        tokens_before: 0,
        tokens_after: 0,
        messages_before: 0,
        messages_after: 0,
        prompt_before_id: None,
        prompt_after_id: None,
        undone_at: None,
        created_at: 0,
        kind: CompactionKind::Summary,
        edited: false,
    };
    for (seq, m) in (1..).zip(out.iter_mut()) {
        m.seq = seq;
        if (seq as usize) <= ARCHIVED {
            m.archived_by = Some(compaction.id);
        }
    }
    summary.seq = 1;
    out.insert(ARCHIVED, summary);
    (out, compaction)
}

fn context_list_10k(c: &mut Criterion) {
    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    let (mut all, compaction) = session();
    let counts = TokenCache::new().count_history(&counter, &all);
    for (m, n) in all.iter_mut().zip(&counts.tokens) {
        m.tokens = Some(TokenCount {
            tokenizer: counter.id().to_owned(),
            tokens: *n,
        });
    }
    let active: Vec<Message> = all.iter().filter(|m| m.archived_by.is_none()).cloned().collect();
    let active_counts: Vec<u32> = active
        .iter()
        .map(|m| m.tokens.as_ref().map_or(0, |t| t.tokens))
        .collect();
    let system = RequestSystem {
        text: mixed_text::mixed_text(8_000),
        boundary_offset: None,
    };
    let input = PrepareInput {
        system: &system,
        system_tokens: counter.count(&system.text) as u32,
        messages: &active,
        counts: &active_counts,
        counter: &counter,
        tools: &[],
        tool_tokens: 3_000,
        window: 200_000,
        reserved_output: 8_192,
        exact: true,
        max_messages: None,
        single_system: false,
        model: "gpt-4o",
        max_tokens: 8_192,
        temperature: None,
    };
    let mut memo = CutMemo::new();
    let report = report_with(&input, &mut memo)
        .unwrap_or_else(|e| panic!("report failed: {e}"))
        .report;
    let compactions = [compaction];
    let rows = context_rows(&all, &report, &compactions);
    eprintln!(
        "{} rows ({} active, {} excluded, {} pinned)",
        rows.len(),
        active.len(),
        rows.iter()
            .filter(|r| r.state == strata::pipeline::RowState::Excluded)
            .count(),
        rows.iter().filter(|r| r.pinned).count()
    );
    let mut group = c.benchmark_group("context_list_10k_messages");
    group.sample_size(20);
    group.bench_function("rows", |b| {
        b.iter(|| context_rows(black_box(&all), black_box(&report), &compactions).len())
    });
    group.bench_function("open", |b| {
        b.iter(|| {
            let report = report_with(black_box(&input), &mut memo)
                .map(|p| p.report)
                .unwrap_or_default();
            context_rows(&all, &report, &compactions).len()
        })
    });
    let mut sorted = rows.clone();
    group.bench_function("resort_by_cost", |b| {
        b.iter(|| {
            sort_by_cost(black_box(&mut sorted));
            sort_by_position(&mut sorted);
            sorted.len()
        })
    });
    group.finish();
}

criterion_group!(benches, context_list_10k);
criterion_main!(benches);
