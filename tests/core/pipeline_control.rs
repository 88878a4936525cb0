//! Pin and exclude in the per-turn pipeline (DESIGN §17): every unit case
//! of an exclusion, each compared with the request the same history makes
//! without what the exclusion leaves out; and a pinned message that stays
//! whole when it is the largest of all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::pipeline as pipeline_support;

use pipeline_support::{Hist, input, system};
use strata::domain::Role;
use strata::pipeline::{Action, Prepared, prepare};

fn actions(p: &Prepared) -> Vec<Action> {
    p.report.iter().map(|e| e.action).collect()
}

/// user, an assistant message calling `a` and `b`, both results, a reply,
/// and the next user message; real counts.
fn two_calls(call_text: &str) -> Hist {
    let mut h = Hist::new();
    h.user("read both files", None);
    h.calls(call_text, &["a", "b"], None);
    h.result("a", &"contents of a\n".repeat(50), None);
    h.result("b", &"contents of b\n".repeat(50), None);
    h.assistant("both read", None);
    h.user("now summarise them", None);
    h
}

/// `h` without the messages at `gone`.
fn without(h: &Hist, gone: &[usize]) -> Hist {
    let mut out = Hist::new();
    for (i, m) in h.msgs.iter().enumerate() {
        if !gone.contains(&i) {
            out.push(m.clone(), Some(h.counts[i]));
        }
    }
    out
}

fn prepared(h: &Hist, window: u64) -> Prepared {
    let sys = system("You are a test.");
    prepare(&input(h, &sys, window)).unwrap()
}

#[test]
fn an_excluded_call_message_leaves_out_its_results_and_costs_nothing() {
    let mut h = two_calls("");
    h.msgs[1].excluded = true;
    let p = prepared(&h, 100_000);
    use Action::*;
    assert_eq!(actions(&p), [Kept, Excluded, Excluded, Excluded, Kept, Kept]);
    for i in 1..4 {
        assert_eq!(p.report[i].tokens_after, 0);
        assert_eq!(p.prelimit_counts[i], 0);
    }
    let reference = prepared(&without(&h, &[1, 2, 3]), 100_000);
    assert_eq!(p.request, reference.request);
    assert_eq!(p.prepared_tokens, reference.prepared_tokens);
    assert_eq!(p.prelimit_tokens, reference.prelimit_tokens);
    assert!(
        p.request
            .messages
            .iter()
            .all(|m| m.role != Role::Tool && m.tool_calls.is_empty())
    );
}

#[test]
fn an_excluded_result_leaves_out_only_its_call() {
    let mut h = two_calls("");
    h.msgs[2].excluded = true;
    let p = prepared(&h, 100_000);
    use Action::*;
    assert_eq!(actions(&p), [Kept, Kept, Excluded, Kept, Kept, Kept]);
    // The same as a history whose call message only ever called `b`.
    let mut reference = Hist::new();
    reference.user("read both files", None);
    reference.calls("", &["b"], None);
    reference.result("b", &"contents of b\n".repeat(50), None);
    reference.assistant("both read", None);
    reference.user("now summarise them", None);
    let r = prepared(&reference, 100_000);
    assert_eq!(p.request, r.request);
    assert_eq!(p.prepared_tokens, r.prepared_tokens);
    assert_eq!(p.prelimit_tokens, r.prelimit_tokens);
    assert_eq!(p.report[1].tokens_after, r.report[1].tokens_after);
    assert!(p.report[1].tokens_after < p.report[1].tokens_before);
}

#[test]
fn a_call_message_with_every_result_excluded_goes_unless_it_has_text() {
    let mut h = two_calls("");
    h.msgs[2].excluded = true;
    h.msgs[3].excluded = true;
    let p = prepared(&h, 100_000);
    use Action::*;
    assert_eq!(actions(&p), [Kept, Excluded, Excluded, Excluded, Kept, Kept]);
    assert_eq!(p.request, prepared(&without(&h, &[1, 2, 3]), 100_000).request);

    let mut h = two_calls("Reading both files now.");
    h.msgs[2].excluded = true;
    h.msgs[3].excluded = true;
    let p = prepared(&h, 100_000);
    // Its text is sent, merged with the reply after it (same role).
    assert_eq!(actions(&p), [Kept, Kept, Excluded, Excluded, Merged, Kept]);
    let roles: Vec<Role> = p.request.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    assert!(p.request.messages[1].tool_calls.is_empty());
    assert!(
        p.request.messages[1]
            .content
            .starts_with("Reading both files now.")
    );
}

#[test]
fn excluded_wins_over_pinned_and_the_last_user_message_is_the_last_one_left() {
    let mut h = two_calls("");
    h.msgs[0].pinned = true;
    h.msgs[0].excluded = true;
    h.msgs[5].excluded = true;
    let p = prepared(&h, 100_000);
    use Action::*;
    assert_eq!(actions(&p), [Excluded, Kept, Kept, Kept, Kept, Excluded]);
    // Nothing user-written is left to open the request: the note does.
    assert_eq!(p.request.messages[0].role, Role::User);
    assert!(!p.request.messages.iter().any(|m| m.content.contains("summarise")));
}

#[test]
fn an_excluded_giant_takes_no_room_from_the_messages_around_it() {
    let mut h = Hist::new();
    h.user("first", None);
    h.assistant(&"a very long answer\n".repeat(4_000), None);
    h.user("second", None);
    h.assistant("short answer", None);
    h.user("third", None);
    // 3,000 tokens leave no room for the giant (about 19,000): it is sent
    // cut, taking most of the room.
    let p = prepared(&h, 3_000);
    assert_eq!(p.report[1].action, Action::Truncated);
    assert!(p.report[1].tokens_after < 3_000 && p.report[1].tokens_after > 1_000);
    h.msgs[1].excluded = true;
    let p = prepared(&h, 3_000);
    use Action::*;
    // The two user messages now meet and are sent as one.
    assert_eq!(actions(&p), [Kept, Excluded, Merged, Kept, Kept]);
    assert_eq!(p.request, prepared(&without(&h, &[1]), 3_000).request);
}

#[test]
fn a_pinned_message_is_never_cut_even_when_it_is_the_largest() {
    let block = |label: &str, lines: usize| {
        format!(
            "{label}:\n```\n{}```\n",
            (0..lines)
                .map(|i| format!("{label} line {i}\n"))
                .collect::<String>()
        )
    };
    let mut h = Hist::new();
    h.user(&block("pinned spec", 400), None);
    h.assistant(&block("answer", 200), None);
    h.user(&block("log", 150), None);
    h.assistant("ok", None);
    h.user("go on", None);
    h.msgs[0].pinned = true;
    assert!(h.counts[0] > h.counts[1] && h.counts[0] > h.counts[2]);
    // Room for the pinned message whole, not for everything.
    let window = 1_000 + u64::from(h.counts[0]) + u64::from(h.counts[1]) / 2 + 200;
    let p = prepared(&h, window);
    assert_eq!(p.report[0].action, Action::Kept);
    assert_eq!(p.report[0].tokens_after, h.counts[0]);
    assert_eq!(p.request.messages[0].content, h.msgs[0].content);
    // Something else was cut or left out to make room.
    assert!(p.report[1..].iter().any(|e| e.action != Action::Kept));
    // Unpinned, the same message does not stay whole.
    h.msgs[0].pinned = false;
    let p = prepared(&h, window);
    assert_ne!(p.report[0].action, Action::Kept);
}
