//! Property tests of the compression invariants on generated histories:
//! the tail keeps the last real user message and the last visible assistant
//! reply; no tool group is split; a user message stays with its reply; the
//! summary is never the last message; after a first compaction only the
//! system messages are protected at the head; an empty middle is a no-op
//! strike; every shortened tool-call argument still parses as JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::compress as compress_support;

use compress_support::{Builder, QuarterCounter, engine, tokens};
use proptest::prelude::*;
use std::collections::HashSet;
use strata::compress::{
    CompressError, CompressionEngine, CompressionInput, CompressionPlan, Trigger, find_boundaries,
    find_boundaries_with, is_real_user, is_visible_assistant, split_summary, tokens_of,
};
use strata::domain::{Message, MessageId, MessageKind, Role};

#[derive(Clone, Debug)]
struct Turn {
    user_tokens: usize,
    pinned: bool,
    calls: Vec<(usize, bool)>,
    reply_tokens: usize,
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        1usize..3_000,
        prop::bool::weighted(0.05),
        prop::collection::vec((1usize..6_000, any::<bool>()), 0..4),
        0usize..800,
    )
        .prop_map(|(user_tokens, pinned, calls, reply_tokens)| Turn {
            user_tokens,
            pinned,
            calls,
            reply_tokens,
        })
}

fn build(turns: &[Turn], system: bool) -> Vec<Message> {
    let mut b = Builder::new();
    if system {
        b.push(Role::System, "imported instructions");
    }
    for (i, t) in turns.iter().enumerate() {
        b.push(Role::User, format!("request {i}: {}", tokens(t.user_tokens)))
            .pinned = t.pinned;
        if !t.calls.is_empty() {
            let a = b.push(Role::Assistant, "");
            for (j, (size, long_args)) in t.calls.iter().enumerate() {
                let args = if *long_args {
                    serde_json::json!({"path": format!("src/f{i}.rs"), "content": tokens(300)}).to_string()
                } else {
                    format!(r#"{{"path":"src/f{i}_{j}.rs"}}"#)
                };
                a.tool_calls.push(strata::domain::ToolCall {
                    id: format!("c{i}_{j}"),
                    name: "read_file".into(),
                    arguments: args,
                });
                let _ = size;
            }
            for (j, (size, _)) in t.calls.iter().enumerate() {
                b.push(Role::Tool, tokens(*size)).tool_call_id = Some(format!("c{i}_{j}"));
            }
        }
        if t.reply_tokens > 0 || t.calls.is_empty() {
            b.push(Role::Assistant, format!("reply {i} {}", tokens(t.reply_tokens)));
        }
    }
    b.build()
}

fn input(messages: &[Message]) -> CompressionInput<'_> {
    CompressionInput {
        messages,
        fixed_tokens: 1_000,
        counter: &QuarterCounter,
        topic: None,
        sent_tokens: None,
        sent_dropped: None,
    }
}

/// Whether `id` of the original history is still represented after `plan`.
fn kept(plan: &CompressionPlan, id: MessageId) -> bool {
    let rewritten: HashSet<MessageId> = plan.rewritten.iter().map(|(o, _)| *o).collect();
    plan.merged_into == Some(id) || rewritten.contains(&id) || plan.messages.iter().any(|m| m.id == id)
}

fn check_plan(history: &[Message], plan: &CompressionPlan) -> Result<(), TestCaseError> {
    if let Some(u) = history.iter().rev().find(|m| is_real_user(m)) {
        prop_assert!(kept(plan, u.id), "last real user message lost");
    }
    if let Some(a) = history.iter().rev().find(|m| is_visible_assistant(m)) {
        prop_assert!(kept(plan, a.id), "last visible assistant reply lost");
    }
    // Tool groups: every result has its call earlier, every call its results.
    let mut calls_seen = HashSet::new();
    let mut results: HashSet<&str> = HashSet::new();
    for m in &plan.messages {
        for c in &m.tool_calls {
            calls_seen.insert(c.id.as_str());
        }
        if let Some(id) = &m.tool_call_id {
            prop_assert!(calls_seen.contains(id.as_str()), "orphan result {id}");
            results.insert(id.as_str());
        }
    }
    for id in &calls_seen {
        prop_assert!(results.contains(id), "call {id} lost its result");
    }
    // A user message and its reply are kept or archived together.
    for w in history.windows(2) {
        if is_real_user(&w[0]) && matches!(w[1].role, Role::Assistant | Role::Tool) {
            prop_assert_eq!(
                kept(plan, w[0].id),
                kept(plan, w[1].id),
                "user separated from reply"
            );
        }
    }
    let last = plan.messages.last().unwrap();
    prop_assert!(
        last.kind != MessageKind::Summary || split_summary(&last.content).1.is_some(),
        "a summary is the last message"
    );
    prop_assert_eq!(
        plan.messages
            .iter()
            .filter(|m| m.kind == MessageKind::Summary)
            .count(),
        1
    );
    for (_, copy) in &plan.rewritten {
        for c in &copy.tool_calls {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&c.arguments).is_ok());
        }
    }
    for m in history.iter().filter(|m| m.pinned) {
        prop_assert!(kept(plan, m.id), "pinned message archived");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    #[test]
    fn compression_keeps_the_invariants(
        turns in prop::collection::vec(turn(), 1..40),
        system in any::<bool>(),
        window in prop::sample::select(vec![16_000u64, 32_000, 128_000, 200_000]),
        trigger in prop::sample::select(vec![Trigger::Manual, Trigger::Preflight]),
    ) {
        let history = build(&turns, system);
        let mut e = engine(window, 4_000, 0.75);
        match e.compress_extractive(trigger, &input(&history), 0) {
            Ok(plan) => {
                check_plan(&history, &plan)?;
                // A second pass: only the system messages are protected at the head.
                let counts: Vec<u32> = plan.messages.iter().map(|m| tokens_of(&QuarterCounter, m)).collect();
                let b = find_boundaries(&plan.messages, &counts, 1_000, 4);
                let system_count = plan.messages.iter().take_while(|m| m.role == Role::System).count();
                prop_assert_eq!(b.head_end, system_count);
                match e.compress_extractive(Trigger::Manual, &input(&plan.messages), 0) {
                    Ok(second) => check_plan(&plan.messages, &second)?,
                    // Nothing new to summarise: a summary merged into a
                    // message stays in the protected end (it is not
                    // summarised again), or between the protected start and
                    // the smallest protected end each turn is the summary or
                    // pinned.
                    Err(CompressError::NothingToCompress) => {
                        let m = &plan.messages;
                        let budget = e.config().threshold.effective / 5;
                        let counts: Vec<u32> = m.iter().map(|m| tokens_of(&QuarterCounter, m)).collect();
                        let mut b = find_boundaries(m, &counts, budget, 4);
                        if b.is_empty() {
                            b = find_boundaries_with(m, &counts, budget, 4, true);
                        }
                        let merged_in_tail = m[b.tail_start..]
                            .iter()
                            .any(|m| m.kind == MessageKind::Summary && split_summary(&m.content).1.is_some());
                        if !merged_in_tail {
                            for turn in m[b.middle()].chunk_by(|_, m| m.role != Role::User) {
                                let summary_only = turn.iter().all(|m| m.kind == MessageKind::Summary);
                                prop_assert!(
                                    summary_only || turn.iter().any(|m| m.pinned),
                                    "a turn left to summarise: {:?}",
                                    turn.iter().map(|m| (m.role, m.kind, m.content.len())).collect::<Vec<_>>()
                                );
                            }
                        }
                    }
                    Err(other) => prop_assert!(false, "second pass: unexpected {other}"),
                }
            }
            Err(CompressError::NothingToCompress) => {
                prop_assert_eq!(e.status().strikes, u32::from(trigger.automatic()));
            }
            Err(CompressError::NotWorthIt { .. }) => {
                prop_assert!(trigger.automatic());
                prop_assert_eq!(e.status().strikes, 1);
            }
            Err(other) => prop_assert!(false, "unexpected {other}"),
        }
    }
}
