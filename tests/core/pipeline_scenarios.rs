//! The per-turn pipeline on small handmade histories: each test is one
//! behaviour a user would notice (issue scenarios 2 and 11, reminders,
//! truncation, the report).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::pipeline as pipeline_support;

use pipeline_support::{Hist, Quarter, input, system};
use std::sync::atomic::{AtomicUsize, Ordering};
use strata::domain::{Message, Role};
use strata::pipeline::{Action, CutMemo, PrepareError, prepare, prepare_with};
use strata::tokens::{TokenCounter, message_tokens, request_overhead};

fn actions(report: &[strata::pipeline::ReportEntry]) -> Vec<Action> {
    report.iter().map(|e| e.action).collect()
}

fn roles(p: &strata::pipeline::Prepared) -> Vec<Role> {
    p.request.messages.iter().map(|m| m.role).collect()
}

/// Two parallel calls whose results are 3,000 tokens each.
fn parallel_calls() -> Hist {
    let mut h = Hist::new();
    h.user("read both files", Some(10));
    h.calls("", &["a", "b"], Some(50));
    h.result("a", "contents of a", Some(3_000));
    h.result("b", "contents of b", Some(3_000));
    h.assistant("both read", Some(20));
    h.user("now summarise them", Some(10));
    h
}

#[test]
fn parallel_calls_and_both_results_go_together_when_only_one_result_fits() {
    let h = parallel_calls();
    let sys = system("You are a test.");
    // About 4,000 tokens for messages: one result would fit, both do not.
    let p = prepare(&input(&h, &sys, 5_050)).unwrap();
    use Action::*;
    assert_eq!(
        actions(&p.report),
        [Dropped, Dropped, Dropped, Dropped, Dropped, Kept]
    );
    assert_eq!(roles(&p), [Role::User]);
    // With room for everything, everything stays.
    let p = prepare(&input(&h, &sys, 10_000)).unwrap();
    assert_eq!(actions(&p.report), [Kept; 6]);
    assert_eq!(
        roles(&p),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant,
            Role::User
        ]
    );
}

#[test]
fn an_unfinished_tool_loop_that_does_not_fit_leaves_only_the_user_message() {
    let mut h = parallel_calls();
    h.msgs.truncate(4);
    h.counts.truncate(4);
    let sys = system("You are a test.");
    let p = prepare(&input(&h, &sys, 5_050)).unwrap();
    assert_eq!(roles(&p), [Role::User]);
    assert_eq!(p.request.messages[0].content, "read both files");
}

#[test]
fn a_long_tool_loop_keeps_its_newest_whole_units_when_the_turn_does_not_fit() {
    let mut h = Hist::new();
    h.user("run the migration steps", Some(10));
    for step in 0..6 {
        let id = format!("s{step}");
        h.calls("", &[id.as_str()], Some(50));
        h.result(&id, &format!("output of step {step}"), Some(1_000));
    }
    let sys = system("You are a test.");
    let p = prepare(&input(&h, &sys, 5_050)).unwrap();
    use Action::*;
    // The user message, then the newest steps that fit; older ones go whole.
    let acts = actions(&p.report);
    assert_eq!(acts[0], Kept);
    let kept_from = acts.iter().skip(1).position(|a| *a == Kept).unwrap() + 1;
    assert!(acts[1..kept_from].iter().all(|a| *a == Dropped), "{acts:?}");
    assert!(acts[kept_from..].iter().all(|a| *a == Kept), "{acts:?}");
    assert_eq!(kept_from % 2, 1, "a call and its result go together: {acts:?}");
    assert!(acts.len() - kept_from >= 4, "at least two steps kept: {acts:?}");
    let r = roles(&p);
    assert_eq!(r[0], Role::User);
    assert!(
        r[1..].chunks(2).all(|c| c == [Role::Assistant, Role::Tool]),
        "{r:?}"
    );
    assert_eq!(p.request.messages.last().unwrap().content, "output of step 5");
}

#[test]
fn a_pinned_result_keeps_its_call_and_sibling_results_when_older_turns_go() {
    let mut h = Hist::new();
    h.user("read both files", Some(2_000));
    h.calls("", &["a", "b"], Some(50));
    h.result("a", "contents of a", Some(3_000));
    let pinned = h.result("b", "contents of b", Some(3_000));
    h.assistant("both read", Some(20));
    h.user("summarise a", Some(10));
    h.assistant("a is ...", Some(10));
    h.user("and b?", Some(10));
    h.msgs[pinned].pinned = true;
    let sys = system("You are a test.");
    let p = prepare(&input(&h, &sys, 8_000)).unwrap();
    use Action::*;
    assert_eq!(
        actions(&p.report),
        [Dropped, Kept, Kept, Kept, Dropped, Kept, Kept, Kept]
    );
    assert!(p.request.messages[0].content.contains("1 earlier messages"));
    // Without the pin the old turn is too large and goes as a whole.
    h.msgs[pinned].pinned = false;
    let p = prepare(&input(&h, &sys, 8_000)).unwrap();
    assert_eq!(
        actions(&p.report),
        [Dropped, Dropped, Dropped, Dropped, Dropped, Kept, Kept, Kept]
    );
}

#[test]
fn an_imported_history_with_broken_tool_pairs_is_repaired_and_reported() {
    let mut h = Hist::new();
    h.system("You are the old assistant.", None);
    h.user("what is in the repo?", None);
    h.result("ghost", "a result whose call was lost", None);
    h.calls("checking two files", &["a", "b"], None);
    h.result("a", "fn main() {}", None);
    h.assistant("it has a main function", None);
    h.user("thanks", None);
    h.calls("", &["c"], None); // an interrupted reply: its call never ran
    let sys = system("You are a test.");
    let mut inp = input(&h, &sys, 100_000);
    inp.single_system = true;
    let p = prepare(&inp).unwrap();
    use Action::*;
    assert_eq!(
        actions(&p.report),
        [Merged, Kept, Dropped, Repaired, Kept, Kept, Kept, Dropped]
    );
    assert_eq!(
        p.request.system.text,
        "You are a test.\n\nYou are the old assistant."
    );
    assert_eq!(
        roles(&p),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User
        ]
    );
    let repaired = &p.request.messages[1];
    assert_eq!(repaired.tool_calls.len(), 1);
    assert_eq!(repaired.tool_calls[0].id, "a");
    assert!(p.report[3].tokens_after < p.report[3].tokens_before);
    // Providers taking several system messages get the imported one in place.
    inp.single_system = false;
    let p = prepare(&inp).unwrap();
    assert_eq!(p.report[0].action, Kept);
    assert_eq!(p.request.messages[0].role, Role::System);
    assert_eq!(p.request.system.text, "You are a test.");
}

#[test]
fn a_fixed_part_larger_than_the_window_is_a_clear_error() {
    let mut h = Hist::new();
    h.user("hello", None);
    let sys = system("You are a test.");
    let mut inp = input(&h, &sys, 8_192);
    inp.system_tokens = 5_000;
    inp.tool_tokens = 3_000;
    let err = prepare(&inp).unwrap_err();
    assert!(
        matches!(
            err,
            PrepareError::WindowTooSmall {
                system: 5_000,
                tools: 3_000,
                reserve: 1_000,
                window: 8_192,
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("context window of 8192 tokens is too small"),
        "{text}"
    );
    let need = err.fixed_tokens().unwrap();
    assert!(need > 9_000, "{err:?}");
    assert!(text.contains(&format!("alone need {need};")), "{text}");
}

#[test]
fn a_reminder_rides_on_its_user_message_for_one_turn_then_is_pruned() {
    let mut h = Hist::new();
    h.user("fix the failing test", None);
    h.reminder("<system-reminder>\ngit status: M src/lib.rs\n</system-reminder>");
    h.calls("", &["a"], None);
    h.result("a", "test output", None);
    let sys = system("You are a test.");
    let p = prepare(&input(&h, &sys, 100_000)).unwrap();
    assert_eq!(p.report[1].action, Action::Merged);
    assert_eq!(
        p.request.messages[0].content,
        "fix the failing test\n\n<system-reminder>\ngit status: M src/lib.rs\n</system-reminder>"
    );
    h.assistant("fixed", None);
    h.user("thanks, now commit", None);
    h.reminder("<system-reminder>\ngit status: clean\n</system-reminder>");
    let p = prepare(&input(&h, &sys, 100_000)).unwrap();
    assert_eq!(p.report[1].action, Action::Pruned);
    assert_eq!(p.report[1].tokens_after, 0);
    assert_eq!(p.request.messages[0].content, "fix the failing test");
    assert!(
        p.request
            .messages
            .last()
            .unwrap()
            .content
            .ends_with("git status: clean\n</system-reminder>")
    );
}

#[test]
fn a_long_tool_result_is_cut_in_the_middle_before_any_turn_is_dropped() {
    let log: String = (0..4_000).map(|i| format!("log line {i}\n")).collect();
    let mut h = Hist::new();
    h.user("run the tests", None);
    h.calls("", &["t"], None);
    h.result("t", &log, None);
    h.assistant("they pass", None);
    h.user("great", None);
    let sys = system("You are a test.");
    let p = prepare(&input(&h, &sys, 8_000)).unwrap();
    assert_eq!(p.report[2].action, Action::Truncated);
    assert_eq!(p.report[0].action, Action::Kept);
    let sent = &p.request.messages[2].content;
    assert!(sent.starts_with("log line 0\nlog line 1\n"));
    assert!(sent.ends_with("log line 3999\n"));
    assert!(sent.contains("from the middle of this tool result"));
    assert_eq!(h.msgs[2].content, log, "the stored history is never changed");
}

#[test]
fn code_blocks_are_cut_and_prepared_tokens_match_a_recount() {
    let code: String = (0..200).map(|i| format!("    let x{i} = {i};\n")).collect();
    let mut h = Hist::new();
    h.user(&format!("look:\n```rust\n{code}```\nwhy?"), None);
    h.assistant("because", None);
    h.user("ok", None);
    let sys = system("You are a test.");
    let mut inp = input(&h, &sys, 1_100);
    inp.reserved_output = 100;
    let p = prepare(&inp).unwrap();
    assert_eq!(p.report[0].action, Action::Truncated);
    let sent = &p.request.messages[0].content;
    assert!(sent.contains("    let x9 = 9;\n[...]\n    let x190 = 190;\n"));
    // The estimate is what a from-scratch count of the request gives.
    let recount: u64 = p
        .request
        .messages
        .iter()
        .map(|m| {
            let mut msg = Message::new(h.msgs[0].session_id, m.role, m.content.clone(), 0);
            msg.tool_calls = m.tool_calls.clone();
            msg.tool_call_id = m.tool_call_id.clone();
            u64::from(message_tokens(&Quarter, &msg))
        })
        .sum();
    let system_tokens = Quarter.count(&sys.text) as u64;
    assert_eq!(
        p.prepared_tokens,
        system_tokens + recount + u64::from(request_overhead(true))
    );
    let after: u64 = p.report.iter().map(|e| u64::from(e.tokens_after)).sum();
    assert_eq!(after, recount);
}

#[test]
fn an_old_pinned_reply_is_kept_behind_a_note_about_what_was_left_out() {
    let mut h = Hist::new();
    // A long question in two parts, each small enough to be sent whole
    // (a message too large for any request is sent cut instead).
    h.user("a long question", Some(1_000));
    h.user("and its second half", Some(1_000));
    let pinned = h.assistant("remember: the API key lives in the vault", Some(20));
    h.msgs[pinned].pinned = true;
    h.user("where was the key?", Some(10));
    let sys = system("You are a test.");
    let p = prepare(&input(&h, &sys, 3_000)).unwrap();
    use Action::*;
    assert_eq!(actions(&p.report), [Dropped, Dropped, Kept, Kept]);
    assert_eq!(roles(&p), [Role::User, Role::Assistant, Role::User]);
    assert!(
        p.request.messages[0].content.contains("2 earlier messages"),
        "{:?}",
        p.request.messages[0]
    );
}

#[test]
fn a_history_opening_with_an_assistant_greeting_gets_a_note_without_a_count() {
    let mut h = Hist::new();
    h.assistant("Hello! How can I help?", None);
    h.user("hi", None);
    let sys = system("");
    let p = prepare(&input(&h, &sys, 10_000)).unwrap();
    assert_eq!(roles(&p), [Role::User, Role::Assistant, Role::User]);
    assert!(p.request.messages[0].content.contains("continues from here"));
    assert_eq!(actions(&p.report), [Action::Kept, Action::Kept]);
}

#[test]
fn max_messages_caps_the_history_by_whole_turns() {
    let mut h = Hist::new();
    for i in 0..5 {
        h.user(&format!("question {i}"), None);
        h.assistant(&format!("answer {i}"), None);
    }
    let sys = system("s");
    let mut inp = input(&h, &sys, 100_000);
    inp.max_messages = Some(5);
    let p = prepare(&inp).unwrap();
    let sent: Vec<&str> = p.request.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(sent, ["question 3", "answer 3", "question 4", "answer 4"]);
}

#[test]
fn the_report_serialises_as_the_context_json_contract() {
    let mut h = Hist::new();
    h.user("hi", Some(7));
    let sys = system("s");
    let p = prepare(&input(&h, &sys, 10_000)).unwrap();
    let json = serde_json::to_value(&p.report).unwrap();
    assert_eq!(
        json,
        serde_json::json!([{
            "message_id": h.msgs[0].id.to_string(),
            "action": "kept",
            "tokens_before": 7,
            "tokens_after": 7
        }])
    );
}

/// A compaction summary merged into a huge user message (the first message
/// after the summarised range) is never dropped: it is cut in the middle,
/// its notice at the start kept.
#[test]
fn a_summary_merged_into_a_huge_message_is_cut_not_dropped() {
    let mut h = Hist::new();
    let body = "word ".repeat(200_000);
    let mut merged = strata::domain::Message::new(
        strata::domain::SessionId::new(),
        strata::domain::Role::User,
        format!(
            "{}\n\nEarlier work: fixed the parser.\n\n{}\n\n{body}",
            strata::compress::NOTICE,
            strata::compress::END_MARKER
        ),
        0,
    );
    merged.kind = strata::domain::MessageKind::Summary;
    h.push(merged, None);
    h.assistant("ok", None);
    h.user("after", None);
    let sys = system("s");
    let p = prepare(&input(&h, &sys, 32_000)).unwrap();
    assert_eq!(p.report[0].action, Action::Truncated, "{:?}", p.report[0]);
    let first = &p.request.messages[0].content;
    assert!(first.contains("Earlier work: fixed the parser."));
    assert!(p.prepared_tokens <= 32_000);
    assert_eq!(p.request.messages.last().unwrap().content, "after");
}

/// [`Quarter`] that counts how many bytes it was asked to tokenise.
struct Metered(AtomicUsize);

impl TokenCounter for Metered {
    fn id(&self) -> &str {
        Quarter.id()
    }
    fn exact(&self) -> bool {
        true
    }
    fn count(&self, text: &str) -> usize {
        self.0.fetch_add(text.len(), Ordering::Relaxed);
        Quarter.count(text)
    }
}

#[test]
fn a_memo_of_cut_counts_changes_nothing_and_spares_recounting_on_the_next_turn() {
    let log: String = (0..600).map(|i| format!("log line {i}: ok\n")).collect();
    let mut h = Hist::new();
    for turn in 0..6 {
        h.user(&format!("run step {turn}"), None);
        h.calls("", &[&format!("c{turn}")], None);
        h.result(&format!("c{turn}"), &log, None);
        h.assistant("done", None);
    }
    h.user("and now?", None);
    let sys = system("You are a test.");
    let metered = Metered(AtomicUsize::new(0));
    let mut memo = CutMemo::new();
    let mut inp = input(&h, &sys, 12_000);
    inp.counter = &metered;
    let first = prepare_with(&inp, &mut memo).unwrap();
    let cut = first
        .report
        .iter()
        .filter(|e| e.action == Action::Truncated)
        .count();
    assert!(cut >= 3, "{:?}", actions(&first.report));
    assert_eq!(first, prepare(&input(&h, &sys, 12_000)).unwrap());
    assert!(memo.len() >= cut);

    // Next turn: the same copies are counted from the memo, not tokenised.
    h.assistant("it is fine", None);
    h.user("one more thing", None);
    let mut inp = input(&h, &sys, 12_000);
    inp.counter = &metered;
    metered.0.store(0, Ordering::Relaxed);
    let second = prepare_with(&inp, &mut memo).unwrap();
    assert_eq!(second, prepare(&input(&h, &sys, 12_000)).unwrap());
    assert!(
        metered.0.load(Ordering::Relaxed) < 2_000,
        "tokenised {} bytes again for {} cut copies",
        metered.0.load(Ordering::Relaxed),
        cut
    );
}

#[test]
fn messages_too_large_to_send_are_named_as_what_they_are() {
    use strata::domain::MessageKind;
    let mut h = Hist::new();
    let mut summary = Message::new(Default::default(), Role::User, "what happened so far", 0);
    summary.kind = MessageKind::Summary;
    h.push(summary, Some(50));
    let pinned = h.assistant("a long answer worth keeping", Some(3_000));
    h.msgs[pinned].pinned = true;
    h.user("hello", Some(5));
    let sys = system("You are a test.");
    let err = prepare(&input(&h, &sys, 2_500)).unwrap_err();
    assert!(
        matches!(
            err,
            PrepareError::TooLargeToSend {
                pinned: 1,
                summary: true,
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with("the last message, the pinned message and the compaction summary need "),
        "{text}"
    );
    assert!(text.contains("unpin messages, /undo-compress"), "{text}");

    // Only the last message: it is named alone.
    let mut h = Hist::new();
    let big = "word ".repeat(400);
    h.user(&big, None);
    let err = prepare(&input(&h, &sys, 1_014)).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("the last message needs "), "{text}");
}
