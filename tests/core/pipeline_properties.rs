//! Invariants of the per-turn pipeline over generated histories: all roles,
//! assistant messages with 1–4 parallel tool calls and their results,
//! pinned and excluded messages, TTLs, reminders, imported system messages, messages of
//! 4 to 500,000 tokens (synthetic counts: the counter only measures
//! truncated copies), windows of 4,096 to 1,000,000 tokens.
//!
//! Whatever the input, the prepared request fits its budget, pairs every
//! tool call with its result, keeps every pinned message and the last user
//! message that is not excluded, leaves out every excluded message (with
//! the unit it stands for) at no cost, and passes validation; the only
//! refusals are the two "does not
//! fit" errors, and only when the fixed part, the pinned messages and a
//! minimal last user message really cannot fit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::pipeline as pipeline_support;

use pipeline_support::{Hist, input, system};
use proptest::prelude::*;
use strata::domain::{MessageKind, RequestMessage, Role};
use strata::pipeline::{Action, CutMemo, PrepareError, exclusions, prepare, prepare_with, report_with};

/// What a generated message holds.
#[derive(Clone, Copy, Debug)]
enum Body {
    Plain,
    /// A 40-line fenced code block.
    Code,
    /// A 12,000-byte log (long for a tool result).
    Log,
}

#[derive(Clone, Debug)]
struct Spec {
    tokens: u32,
    pinned: bool,
    excluded: bool,
    ttl: Option<u32>,
    body: Body,
}

#[derive(Clone, Debug)]
enum Step {
    Reply(Spec),
    Calls { call: Spec, results: Vec<Spec> },
}

#[derive(Clone, Debug)]
struct Turn {
    system: Option<Spec>,
    user: Spec,
    reminder: bool,
    steps: Vec<Step>,
}

fn tokens() -> impl Strategy<Value = u32> {
    prop_oneof![
        8 => 4u32..400,
        3 => 400u32..20_000,
        1 => 20_000u32..=500_000,
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        tokens(),
        prop::bool::weighted(0.06),
        prop::bool::weighted(0.07),
        prop::option::weighted(0.1, 0u32..3),
        prop_oneof![6 => Just(Body::Plain), 2 => Just(Body::Code), 1 => Just(Body::Log)],
    )
        .prop_map(|(tokens, pinned, excluded, ttl, body)| Spec {
            tokens,
            pinned,
            excluded,
            ttl,
            body,
        })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        spec().prop_map(Step::Reply),
        (spec(), prop::collection::vec(spec(), 1..=4))
            .prop_map(|(call, results)| Step::Calls { call, results }),
    ]
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        prop::option::weighted(0.05, spec()),
        spec(),
        prop::bool::weighted(0.2),
        prop::collection::vec(step(), 0..4),
    )
        .prop_map(|(system, user, reminder, steps)| Turn {
            system,
            user,
            reminder,
            steps,
        })
}

fn text(body: Body, label: &str) -> String {
    match body {
        Body::Plain => format!("{label}: plain words"),
        Body::Code => format!(
            "{label}:\n```\n{}```\n",
            (0..40).map(|i| format!("code line {i}\n")).collect::<String>()
        ),
        Body::Log => (0..400).map(|i| format!("{label} log line {i:05}\n")).collect(),
    }
}

/// A built history and, for the checks, the tool call unit of each message.
struct Built {
    hist: Hist,
    /// Per message: the index of its tool call unit (a call message and its
    /// results), `None` outside one.
    unit: Vec<Option<usize>>,
}

impl Built {
    /// Messages that are pinned or in a tool call unit with a pinned one,
    /// except those the exclusions leave out (`out`), whose pins do not
    /// count either.
    fn pinned_units(&self, out: &[bool]) -> Vec<bool> {
        let msgs = &self.hist.msgs;
        let pins = |i: usize| msgs[i].pinned && !out[i];
        let pinned_unit: std::collections::HashSet<usize> = (0..msgs.len())
            .filter(|&i| pins(i))
            .filter_map(|i| self.unit[i])
            .collect();
        (0..msgs.len())
            .map(|i| !out[i] && (pins(i) || self.unit[i].is_some_and(|u| pinned_unit.contains(&u))))
            .collect()
    }
}

fn build(turns: &[Turn]) -> Built {
    let mut h = Hist::new();
    let mut unit = Vec::new();
    let add = |h: &mut Hist, i: usize, s: &Spec| {
        h.msgs[i].pinned = s.pinned;
        h.msgs[i].excluded = s.excluded;
        h.msgs[i].ephemeral_ttl = s.ttl;
        h.counts[i] = h.counts[i].max(s.tokens);
    };
    let mut call_id = 0;
    let mut units = 0;
    for (t, turn) in turns.iter().enumerate() {
        if let Some(s) = &turn.system {
            let i = h.system(&text(s.body, "imported"), None);
            add(&mut h, i, s);
            unit.push(None);
        }
        let i = h.user(&text(turn.user.body, &format!("user {t}")), None);
        add(&mut h, i, &turn.user);
        unit.push(None);
        if turn.reminder {
            h.reminder("<system-reminder>\ngit status: clean\n</system-reminder>");
            unit.push(None);
        }
        for step in &turn.steps {
            match step {
                Step::Reply(s) => {
                    let i = h.assistant(&text(s.body, "reply"), None);
                    add(&mut h, i, s);
                    unit.push(None);
                }
                Step::Calls { call, results } => {
                    let ids: Vec<String> = (0..results.len())
                        .map(|k| format!("call_{}", call_id + k))
                        .collect();
                    call_id += results.len();
                    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                    let i = h.calls(&text(call.body, "calling"), &refs, None);
                    add(&mut h, i, call);
                    unit.push(Some(units));
                    for (id, r) in ids.iter().zip(results) {
                        let i = h.result(id, &text(r.body, id), None);
                        add(&mut h, i, r);
                        unit.push(Some(units));
                    }
                    units += 1;
                }
            }
        }
    }
    Built { hist: h, unit }
}

/// Independent pairing check: every tool message answers an open call of
/// the assistant message just before its run, and every call is answered
/// before the next non-tool message.
fn pairing_ok(msgs: &[RequestMessage]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for m in msgs {
        if m.role == Role::Tool {
            let Some(pos) = open.iter().position(|o| Some(*o) == m.tool_call_id.as_deref()) else {
                return false;
            };
            open.swap_remove(pos);
        } else {
            if !open.is_empty() {
                return false;
            }
            open = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
        }
    }
    open.is_empty()
}

#[derive(Clone, Debug)]
struct Settings {
    window: u64,
    reserved: u64,
    system_tokens: u32,
    tool_tokens: u64,
    exact: bool,
    single_system: bool,
    max_messages: Option<usize>,
}

fn settings() -> impl Strategy<Value = Settings> {
    (4_096u64..=1_000_000)
        .prop_flat_map(|window| {
            (
                Just(window),
                0..=(window / 4).min(32_000),
                prop_oneof![9 => 0u32..=(window / 4) as u32, 1 => 0u32..=(window * 2) as u32],
                0u64..3_000,
                any::<bool>(),
                any::<bool>(),
                prop::option::weighted(0.2, 1usize..60),
            )
        })
        .prop_map(
            |(window, reserved, system_tokens, tool_tokens, exact, single_system, max_messages)| Settings {
                window,
                reserved,
                system_tokens,
                tool_tokens,
                exact,
                single_system,
                max_messages,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn prepared_requests_fit_pair_and_keep_what_must_be_kept(
        turns in prop::collection::vec(turn(), 1..40),
        s in settings(),
    ) {
        let built = build(&turns);
        let h = &built.hist;
        let sys = system("You are a test.");
        let mut inp = input(h, &sys, s.window);
        inp.system_tokens = s.system_tokens;
        inp.tool_tokens = s.tool_tokens;
        inp.reserved_output = s.reserved;
        inp.exact = s.exact;
        inp.single_system = s.single_system;
        inp.max_messages = s.max_messages;
        let fixed = u64::from(s.system_tokens) + s.tool_tokens + s.reserved;
        let out = exclusions(&h.msgs).out;
        let pinned_units = built.pinned_units(&out);
        let last_user = (0..h.msgs.len())
            .rev()
            .find(|&i| h.msgs[i].role == Role::User && h.msgs[i].kind != MessageKind::Synthetic && !out[i]);
        let must_tokens: u64 = (0..h.msgs.len())
            .filter(|&i| pinned_units[i])
            .map(|i| u64::from(h.counts[i]))
            .sum();
        let prepared = prepare(&inp);
        // A memo of cut counts, cold then warm, changes nothing.
        let mut memo = CutMemo::new();
        prop_assert_eq!(&prepare_with(&inp, &mut memo), &prepared);
        prop_assert_eq!(&prepare_with(&inp, &mut memo), &prepared);
        // The report-only run (for showing the next request) says the same.
        if let (Ok(report), Ok(full)) = (report_with(&inp, &mut memo), &prepared) {
            prop_assert_eq!(&report.report, &full.report);
            prop_assert_eq!(report.prepared_tokens, full.prepared_tokens);
            prop_assert_eq!(report.prelimit_tokens, full.prelimit_tokens);
            prop_assert_eq!(&report.prelimit_counts, &full.prelimit_counts);
            prop_assert_eq!(report.request.messages.len(), full.request.messages.len());
        }
        match prepared {
            Err(e @ PrepareError::WindowTooSmall { system, tools, reserve, window, .. }) => {
                prop_assert_eq!(system + tools + reserve, fixed);
                prop_assert!(e.fixed_tokens().unwrap_or(0) >= window, "the figure given fits {window}: {e}");
                prop_assert!(fixed + 200 > window, "refused although {fixed} leaves room in {window}");
            }
            Err(PrepareError::TooLargeToSend { needed, room, .. }) => {
                prop_assert!(needed > room);
                prop_assert!(
                    must_tokens + 200 > room,
                    "refused although pinned messages need {must_tokens} of {room}"
                );
            }
            Err(PrepareError::Invalid(why)) => prop_assert!(false, "invalid request: {why}"),
            Ok(p) => {
                prop_assert!(p.prepared_tokens + s.tool_tokens + s.reserved <= s.window);
                prop_assert!(pairing_ok(&p.request.messages), "unpaired: {:?}", p.request.messages);
                prop_assert_eq!(p.report.len(), h.msgs.len());
                for (i, e) in p.report.iter().enumerate() {
                    prop_assert_eq!(e.message_id, h.msgs[i].id);
                    prop_assert_eq!(e.tokens_before, h.counts[i]);
                    let gone = matches!(e.action, Action::Dropped | Action::Pruned | Action::Excluded);
                    prop_assert!(!gone || e.tokens_after == 0);
                    prop_assert_eq!(e.action == Action::Excluded, out[i], "message {} was {:?}", i, e.action);
                    if h.msgs[i].excluded {
                        prop_assert_eq!(e.action, Action::Excluded);
                        prop_assert_eq!(p.prelimit_counts[i], 0);
                        if let Some(id) = &h.msgs[i].tool_call_id {
                            prop_assert!(p.request.messages.iter().all(|m| m.tool_call_id.as_ref() != Some(id)));
                        }
                        for call in &h.msgs[i].tool_calls {
                            prop_assert!(p.request.messages.iter().all(|m| m.tool_calls.iter().all(|c| c.id != call.id)));
                        }
                    }
                    if pinned_units[i] {
                        prop_assert!(!gone, "message {i} of a pinned unit was {:?}", e.action);
                    }
                    if h.msgs[i].pinned && !out[i] {
                        prop_assert!(e.action != Action::Truncated, "pinned message {i} was truncated");
                    }
                }
                if let Some(last_user) = last_user {
                    let last = p.report[last_user].action;
                    prop_assert!(
                        matches!(last, Action::Kept | Action::Truncated | Action::Merged),
                        "last user message was {last:?}"
                    );
                }
                let after: u64 = p.report.iter().map(|e| u64::from(e.tokens_after)).sum();
                prop_assert!(after <= p.prepared_tokens);
                prop_assert!(
                    !s.single_system || p.request.messages.iter().all(|m| m.role != Role::System)
                );
            }
        }
    }
}
