//! Specification of the agent turn (DESIGN §15 "Loop"): tool rounds,
//! scheduling, approvals, results in call order, limits and spill, the
//! round limit, cancellation, and the requests between rounds. No I/O: the
//! tests play the runtime's part by answering effects with events.

use super::tests::{prompt, session};
use super::*;
use crate::domain::{FinishReason, Role, ToolStatus};
use crate::tokens::{Encoding, TiktokenCounter};
use crate::tooling::approval::{Policy, Rule, Rules};
use crate::tooling::limits::Limits;
use crate::tooling::schema::{ToolSet, builtin};
use crate::tooling::{Access, Output};

fn tools(policy: Policy) -> Tools {
    Tools {
        set: ToolSet::new(builtin()),
        policy,
        rules: Rules::default(),
        max_rounds: DEFAULT_MAX_ROUNDS,
        limits: Limits::DEFAULT,
        spill_dir: "/data/spill/s".to_owned(),
        request: None,
        sandbox: Default::default(),
    }
}

fn conversation(policy: Policy, window: u64) -> Conversation {
    let session = session();
    let prompt = prompt(&session, "You are helpful.", None);
    Conversation::new(
        session,
        prompt,
        Vec::new(),
        Arc::new(TiktokenCounter::new(Encoding::O200kBase, true)),
        1_024,
    )
    .with_window(window)
    .with_tools(tools(policy))
}

fn call_delta(index: usize, id: &str, name: &str, arguments: &str) -> Event {
    Event::Stream {
        event: StreamEvent::ToolCallDelta {
            index,
            id: Some(id.to_owned()),
            name: Some(name.to_owned()),
            arguments: arguments.to_owned(),
        },
        now_ms: 10,
    }
}

fn done() -> Event {
    Event::Stream {
        event: StreamEvent::Done {
            finish_reason: Some(FinishReason::ToolCalls),
        },
        now_ms: 20,
    }
}

/// Streams a reply asking for `calls` (id, name, arguments) and returns the
/// effects of its end.
fn reply_with_calls(c: &mut Conversation, calls: &[(&str, &str, &str)]) -> Vec<Effect> {
    for (i, (id, name, args)) in calls.iter().enumerate() {
        c.handle(call_delta(i, id, name, args));
    }
    c.handle(done())
}

fn ok(text: &str) -> ToolRun {
    ToolRun {
        status: ToolStatus::Ok,
        output: Output::whole(text),
        paged: false,
        duration_ms: 3,
        sandbox: None,
    }
}

fn finished(c: &mut Conversation, id: &str, run: ToolRun) -> Vec<Effect> {
    c.handle(Event::ToolFinished {
        tool_call_id: id.to_owned(),
        run,
        now_ms: 30,
    })
}

fn runs(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunTool { call, .. } => Some(call.id.clone()),
            _ => None,
        })
        .collect()
}

fn request(effects: &[Effect]) -> Option<&crate::domain::ChatRequest> {
    effects.iter().find_map(|e| match e {
        Effect::SendRequest(r) => Some(r),
        _ => None,
    })
}

fn saved_results(effects: &[Effect]) -> Vec<(String, ToolStatus, String)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::SaveMessage(m) if m.role == Role::Tool => Some((
                m.tool_call_id.clone().unwrap_or_default(),
                m.tool.as_ref().map_or(ToolStatus::Ok, |t| t.status),
                m.content.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn submit(c: &mut Conversation) -> Vec<Effect> {
    c.handle(Event::Submit {
        text: "look around".into(),
        now_ms: 0,
    })
}

#[test]
fn read_only_calls_run_together_and_results_are_stored_in_call_order() {
    let mut c = conversation(Policy::Ask, 128_000);
    let first = submit(&mut c);
    let sent = request(&first).expect("first request");
    assert!(!sent.tools.is_empty(), "the request offers the tools");
    let tools_bytes = serde_json::to_string(&sent.tools).expect("json");

    let effects = reply_with_calls(
        &mut c,
        &[
            ("a", "read_file", r#"{"path":"a.txt"}"#),
            ("b", "grep", r#"{"pattern":"x"}"#),
        ],
    );
    assert_eq!(runs(&effects), ["a", "b"], "both read-only calls start at once");
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Phase(Phase::RunningTool { .. })))
    );

    // They finish in reverse order; nothing is stored until the round is whole.
    let after_b = finished(&mut c, "b", ok("hits"));
    assert!(saved_results(&after_b).is_empty());
    let after_a = finished(&mut c, "a", ok("lines"));
    let results = saved_results(&after_a);
    let ids: Vec<&str> = results.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "b"], "stored in call order");

    // The next request pairs each call with its result, in order, and
    // carries the same tools array, byte for byte.
    let next = request(&after_a).expect("the next request follows the round");
    let n = next.messages.len();
    assert_eq!(next.messages[n - 3].tool_calls.len(), 2);
    assert_eq!(next.messages[n - 2].tool_call_id.as_deref(), Some("a"));
    assert_eq!(next.messages[n - 1].tool_call_id.as_deref(), Some("b"));
    assert_eq!(serde_json::to_string(&next.tools).expect("json"), tools_bytes);
}

#[test]
fn a_write_waits_for_the_reads_before_it_and_runs_alone() {
    let mut c = conversation(Policy::All, 128_000);
    submit(&mut c);
    let effects = reply_with_calls(
        &mut c,
        &[
            ("r", "read_file", r#"{"path":"a.txt"}"#),
            ("w", "write_file", r#"{"path":"a.txt","content":"x"}"#),
            ("r2", "list_dir", "{}"),
        ],
    );
    assert_eq!(runs(&effects), ["r"], "the write waits for the read before it");
    let effects = finished(&mut c, "r", ok("1"));
    assert_eq!(runs(&effects), ["w"], "then the write runs alone");
    let effects = finished(&mut c, "w", ok("written"));
    assert_eq!(runs(&effects), ["r2"], "and the read after it waits for it");
    let effects = finished(&mut c, "r2", ok("a.txt"));
    assert_eq!(saved_results(&effects).len(), 3);
}

#[test]
fn at_most_eight_read_only_calls_run_at_once() {
    let mut c = conversation(Policy::Ask, 128_000);
    submit(&mut c);
    let calls: Vec<(String, &str, &str)> = (0..10).map(|i| (format!("c{i}"), "list_dir", "{}")).collect();
    let borrowed: Vec<(&str, &str, &str)> = calls.iter().map(|(a, b, d)| (a.as_str(), *b, *d)).collect();
    let effects = reply_with_calls(&mut c, &borrowed);
    assert_eq!(runs(&effects).len(), MAX_CONCURRENT);
    let effects = finished(&mut c, "c0", ok("x"));
    assert_eq!(runs(&effects), ["c8"]);
}

#[test]
fn invalid_arguments_and_unknown_tools_become_results_the_model_reads() {
    let mut c = conversation(Policy::Ask, 128_000);
    submit(&mut c);
    let effects = reply_with_calls(
        &mut c,
        &[
            ("bad", "read_file", r#"{"path": "a.txt""#),
            ("nope", "launch_rockets", "{}"),
        ],
    );
    assert!(runs(&effects).is_empty(), "nothing runs");
    let results = saved_results(&effects);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].1, ToolStatus::Error);
    assert!(results[0].2.contains("not valid JSON"), "{}", results[0].2);
    assert_eq!(results[1].1, ToolStatus::Error);
    assert!(results[1].2.contains("launch_rockets") && results[1].2.contains("read_file"));
    assert!(request(&effects).is_some(), "the model gets to answer them");
}

#[test]
fn a_call_that_asks_waits_for_the_answer_and_a_denial_reaches_the_model() {
    let mut c = conversation(Policy::Ask, 128_000);
    submit(&mut c);
    let effects = reply_with_calls(&mut c, &[("s", "shell", r#"{"command":"rm -rf build"}"#)]);
    assert!(runs(&effects).is_empty());
    let asked = effects.iter().find_map(|e| match e {
        Effect::AskApproval { call, access, .. } => Some((call.id.clone(), *access)),
        _ => None,
    });
    assert_eq!(asked, Some(("s".to_owned(), Access::Run)));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Phase(Phase::AwaitingApproval { .. })))
    );
    let effects = c.handle(Event::Approved {
        tool_call_id: "s".into(),
        approval: Approval::Deny {
            reason: Some("not the build directory".into()),
        },
        now_ms: 40,
    });
    let results = saved_results(&effects);
    assert_eq!(results[0].1, ToolStatus::Denied);
    assert!(
        results[0].2.contains("not the build directory"),
        "{}",
        results[0].2
    );
    let next = request(&effects).expect("the model is told");
    assert!(
        next.messages
            .last()
            .is_some_and(|m| m.content.contains("not the build directory"))
    );
}

#[test]
fn allow_until_exit_runs_the_same_command_prefix_without_asking_again() {
    let mut c = conversation(Policy::Ask, 128_000);
    submit(&mut c);
    reply_with_calls(&mut c, &[("s1", "shell", r#"{"command":"cargo test -q"}"#)]);
    let effects = c.handle(Event::Approved {
        tool_call_id: "s1".into(),
        approval: Approval::UntilExit,
        now_ms: 40,
    });
    assert_eq!(runs(&effects), ["s1"]);
    finished(&mut c, "s1", ok("passed"));
    let effects = reply_with_calls(&mut c, &[("s2", "shell", r#"{"command":"cargo test --lib"}"#)]);
    assert_eq!(runs(&effects), ["s2"], "granted until exit");
    assert_eq!(c.grants(), [Rule::Command("cargo test".into())]);
    let effects = finished(&mut c, "s2", ok("passed"));
    let chained = reply_with_calls(
        &mut c,
        &[("s3", "shell", r#"{"command":"cargo test; rm -rf /"}"#)],
    );
    assert!(runs(&chained).is_empty(), "a chained command asks again");
    drop(effects);
}

#[test]
fn read_only_policy_denies_writes_with_a_sentence_saying_how_to_allow_them() {
    let mut c = conversation(Policy::ReadOnly, 128_000);
    submit(&mut c);
    let effects = reply_with_calls(
        &mut c,
        &[(
            "w",
            "edit_file",
            r#"{"path":"a","old_string":"x","new_string":"y"}"#,
        )],
    );
    assert!(runs(&effects).is_empty());
    let results = saved_results(&effects);
    assert_eq!(results[0].1, ToolStatus::Denied);
    assert!(
        results[0].2.contains("--approve") || results[0].2.contains("[tools] allow"),
        "{}",
        results[0].2
    );
}

fn answered(effects: &[Effect]) -> Vec<(String, ToolStatus)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::ToolAnswered { tool_call_id, status } => Some((tool_call_id.clone(), *status)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_call_answered_without_running_is_said_before_the_round_ends() {
    // Refused by the policy, while a read runs beside it.
    let mut c = conversation(Policy::ReadOnly, 128_000);
    submit(&mut c);
    let effects = reply_with_calls(
        &mut c,
        &[
            ("r", "list_dir", "{}"),
            (
                "w",
                "edit_file",
                r#"{"path":"a","old_string":"x","new_string":"y"}"#,
            ),
        ],
    );
    assert_eq!(runs(&effects), ["r"]);
    assert_eq!(answered(&effects), [("w".to_owned(), ToolStatus::Denied)]);
    assert!(saved_results(&effects).is_empty(), "the round still runs");

    // Denied by the user.
    let mut c = conversation(Policy::Ask, 128_000);
    submit(&mut c);
    reply_with_calls(&mut c, &[("s", "shell", r#"{"command":"make"}"#)]);
    let effects = c.handle(Event::Approved {
        tool_call_id: "s".into(),
        approval: Approval::Deny { reason: None },
        now_ms: 40,
    });
    assert_eq!(answered(&effects), [("s".to_owned(), ToolStatus::Denied)]);
}

#[test]
fn a_call_found_to_fail_is_answered_with_its_error_and_never_runs() {
    let mut c = conversation(Policy::Ask, 128_000);
    submit(&mut c);
    reply_with_calls(
        &mut c,
        &[(
            "e",
            "edit_file",
            r#"{"path":"a","old_string":"x","new_string":"y"}"#,
        )],
    );
    let effects = c.handle(Event::Approved {
        tool_call_id: "e".into(),
        approval: Approval::WouldFail {
            error: "`old_string` was not found in `a`.".into(),
        },
        now_ms: 40,
    });
    assert!(runs(&effects).is_empty());
    assert_eq!(answered(&effects), [("e".to_owned(), ToolStatus::Error)]);
    let results = saved_results(&effects);
    assert_eq!(
        results,
        [(
            "e".to_owned(),
            ToolStatus::Error,
            "`old_string` was not found in `a`.".to_owned()
        )]
    );
    assert!(request(&effects).is_some(), "the model gets its error");
}

#[test]
fn the_round_limit_answers_the_last_calls_not_run_and_ends_the_turn() {
    let mut c = conversation(Policy::Ask, 128_000);
    if let Some(t) = c.tools.as_mut() {
        t.max_rounds = 1;
    }
    submit(&mut c);
    reply_with_calls(&mut c, &[("a", "list_dir", "{}")]);
    let effects = finished(&mut c, "a", ok("x"));
    assert!(request(&effects).is_some());
    let effects = reply_with_calls(&mut c, &[("b", "list_dir", "{}")]);
    assert!(runs(&effects).is_empty());
    let results = saved_results(&effects);
    assert_eq!(results[0].1, ToolStatus::NotRun);
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::ShowError(TurnNotice::MaxRounds { max: 1 })))
    );
    assert!(matches!(effects.last(), Some(Effect::TurnFinished { .. })));
    assert!(!c.is_streaming());
}

#[test]
fn cancel_while_a_tool_runs_stores_an_interrupted_result_and_ends_the_turn() {
    let mut c = conversation(Policy::All, 128_000);
    submit(&mut c);
    reply_with_calls(
        &mut c,
        &[
            ("a", "list_dir", "{}"),
            ("s", "shell", r#"{"command":"sleep 600"}"#),
        ],
    );
    finished(&mut c, "a", ok("x"));
    let effects = c.handle(Event::Cancel { now_ms: 50 });
    let results = saved_results(&effects);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].1, ToolStatus::Ok, "a finished call keeps its result");
    assert_eq!(results[1].1, ToolStatus::Interrupted);
    assert!(
        matches!(
            effects.last(),
            Some(Effect::TurnFinished {
                status: crate::domain::MessageStatus::Interrupted,
                ..
            })
        ),
        "a turn cancelled in its round ends interrupted"
    );
    let stored = effects.iter().find_map(|e| match e {
        Effect::SaveMessage(m) if m.tool_call_id.as_deref() == Some("s") => m.tool.clone(),
        _ => None,
    });
    assert_eq!(
        stored.and_then(|t| t.duration_ms),
        Some(20),
        "it ran from 30 to 50 ms"
    );
    assert!(
        finished(&mut c, "s", ok("late")).is_empty(),
        "a late result is ignored"
    );
}

#[test]
fn a_reply_cut_off_with_calls_answers_them_interrupted() {
    let mut c = conversation(Policy::All, 128_000);
    submit(&mut c);
    c.handle(call_delta(0, "a", "list_dir", "{}"));
    let effects = c.handle(Event::StreamEnded { now_ms: 20 });
    let results = saved_results(&effects);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].1, ToolStatus::Interrupted);
}

#[test]
fn a_large_result_is_cut_and_spilled_at_128k_and_previewed_at_8k() {
    let big: String = (0..6_000)
        .map(|i| format!("line {i:>5} {}\n", "x".repeat(40)))
        .collect();
    assert!(big.len() >= 300_000);
    for (window, previewed) in [(128_000, false), (8_192, true)] {
        let mut c = conversation(Policy::All, window);
        submit(&mut c);
        reply_with_calls(&mut c, &[("big", "shell", r#"{"command":"cat big"}"#)]);
        let effects = finished(&mut c, "big", ok(&big));
        let spill = effects.iter().find_map(|e| match e {
            Effect::WriteSpill { path, text } => Some((path.clone(), text.len())),
            _ => None,
        });
        assert_eq!(
            spill,
            Some(("/data/spill/s/big.txt".to_owned(), big.len())),
            "spilled whole"
        );
        let stored = effects
            .iter()
            .find_map(|e| match e {
                Effect::SaveMessage(m) if m.role == Role::Tool => Some(m.clone()),
                _ => None,
            })
            .expect("stored");
        let meta = stored.tool.expect("meta");
        assert_eq!(meta.previewed, previewed, "window {window}");
        assert!(stored.content.contains("/data/spill/s/big.txt"));
        if previewed {
            assert!(
                stored.content.chars().count() < 2_500,
                "{}",
                stored.content.chars().count()
            );
        } else {
            assert!(meta.truncated);
            assert!(stored.content.chars().count() <= 51_000);
        }
        assert!(stored.tokens.is_some(), "counted when stored");
    }
}

#[test]
fn a_server_that_refuses_tools_gets_the_request_again_without_them() {
    let mut c = conversation(Policy::Ask, 128_000);
    submit(&mut c);
    let effects = c.handle(Event::Failed {
        kind: FailureKind::ToolsUnsupported,
        message: "model does not support tools".into(),
        now_ms: 5,
    });
    let again = request(&effects).expect("sent again");
    assert!(again.tools.is_empty());
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::ShowError(TurnNotice::ToolsOff { .. })))
    );
    assert!(c.tools().is_none());
    assert_eq!(c.tools_off(), Some("model does not support tools"));
}

#[test]
fn switching_a_tool_off_changes_the_array_and_not_the_prompt() {
    let mut c = conversation(Policy::Ask, 128_000);
    let before = c.prepare().expect("prepared");
    assert!(c.set_tool_enabled("shell", false));
    let after = c.prepare().expect("prepared");
    assert_eq!(before.request.system, after.request.system);
    assert_eq!(after.request.tools.len() + 1, before.request.tools.len());
    assert!(!c.set_tool_enabled("no_such_tool", false));
    // A model that calls it anyway is told it is off, not that it does not exist.
    submit(&mut c);
    let effects = reply_with_calls(&mut c, &[("s", "shell", r#"{"command":"ls"}"#)]);
    let results = saved_results(&effects);
    assert!(results[0].2.contains("switched off"), "{}", results[0].2);
}

#[test]
fn a_result_cut_only_by_a_long_line_still_names_its_spill_file_folded() {
    let mut c = conversation(Policy::All, 128_000);
    submit(&mut c);
    reply_with_calls(
        &mut c,
        &[("wide", "shell", r#"{"command":"printf y%.0s {1..30000}"}"#)],
    );
    let line = "y".repeat(30_000);
    let effects = finished(&mut c, "wide", ok(&line));
    let spilled = effects
        .iter()
        .find_map(|e| match e {
            Effect::WriteSpill { path, text } => Some((path.clone(), text.clone())),
            _ => None,
        })
        .expect("spilled");
    assert_eq!(spilled.1.replace('\n', ""), line, "nothing lost");
    assert!(
        spilled.1.lines().all(|l| l.chars().count() <= 2_000),
        "folded for read_file"
    );
    let results = saved_results(&effects);
    assert!(
        results[0].2.contains(&spilled.0),
        "the result names the file: {}",
        &results[0].2[2_000..]
    );
}

#[test]
fn binary_output_is_spilled_and_not_sent() {
    let mut c = conversation(Policy::All, 128_000);
    submit(&mut c);
    reply_with_calls(
        &mut c,
        &[("bin", "shell", r#"{"command":"head -c 3000 /dev/urandom"}"#)],
    );
    // A NUL in every four characters: binary (escapes alone never are).
    let noise: String = (0..3_000u32)
        .map(|i| {
            if i % 4 == 0 {
                '\0'
            } else {
                char::from_u32(32 + i % 90).unwrap_or('?')
            }
        })
        .collect();
    let effects = finished(&mut c, "bin", ok(&noise));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::WriteSpill { text, .. } if *text == noise))
    );
    let results = saved_results(&effects);
    assert!(
        results[0].2.starts_with("[binary output, 3,000 bytes"),
        "{}",
        results[0].2
    );
}
