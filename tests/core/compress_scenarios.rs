//! The compression scenarios of the context-budget issue (1, 3, 4, 5, 6, 7,
//! 9, 10), each on a small handmade history, at the engine level.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::compress as compress_support;

use compress_support::{Builder, QuarterCounter, engine, tokens};
use strata::compress::engine::deferral_slack;
use strata::compress::{
    CompressError, CompressWarning, CompressionEngine, CompressionInput, Decision, END_MARKER, LockReason,
    NOTICE, SkipReason, SummarizerChoice, SummaryFailure, SummaryOutcome, Trigger, feedback_line,
    is_real_user,
};
use strata::domain::{MessageKind, Role, Summarizer};
use strata::tokens::Threshold;

fn input<'a>(messages: &'a [strata::domain::Message], topic: Option<&'a str>) -> CompressionInput<'a> {
    CompressionInput {
        messages,
        fixed_tokens: 500,
        counter: &QuarterCounter,
        topic,
        sent_tokens: None,
        sent_dropped: None,
    }
}

fn estimate(messages: &[strata::domain::Message]) -> u64 {
    500 + messages
        .iter()
        .map(|m| u64::from(strata::compress::tokens_of(&QuarterCounter, m)))
        .sum::<u64>()
}

#[test]
fn scenario_1_new_task_request_stays_verbatim_and_old_task_is_history() {
    let mut b = Builder::new();
    b.user("Task A: add a --verbose flag to src/cli.rs");
    for i in 0..6 {
        b.tool(
            "read_file",
            &format!(r#"{{"path":"src/cli_{i}.rs"}}"#),
            tokens(3_000),
        );
    }
    b.assistant("Done: I added the --verbose flag in src/cli.rs and all tests pass.");
    let request_b = "Task B: fix the crash in src/parser.rs when the input is empty";
    b.user(request_b);
    for i in 0..3 {
        b.tool(
            "read_file",
            &format!(r#"{{"path":"src/parser_{i}.rs"}}"#),
            tokens(2_000),
        );
    }
    let history = b.build();
    let mut e = engine(32_000, 4_000, 0.75);
    let threshold = e.config().threshold.effective;
    assert_eq!(threshold, 23_800);
    let est = estimate(&history);
    assert!(est >= threshold, "the three results push it over: {est}");
    assert_eq!(e.should_compress(Trigger::Preflight, est, 0), Decision::Compress);
    let plan = e
        .compress_extractive(Trigger::Preflight, &input(&history, None), 0)
        .unwrap();

    let last_user = plan.messages.iter().rev().find(|m| is_real_user(m)).unwrap();
    assert!(
        last_user.content.ends_with(request_b),
        "request for B kept verbatim"
    );
    assert_ne!(plan.messages.last().unwrap().kind, MessageKind::Summary);
    let summary = &plan.summary;
    assert!(summary.content.starts_with(NOTICE.trim()));
    // Task A's request stays in the protected head (the first exchange),
    // followed by the summary of its tool rounds and the live statement
    // that it is done.
    let pos = |pred: &dyn Fn(&strata::domain::Message) -> bool| plan.messages.iter().position(pred);
    let done =
        pos(&|m| m.content.starts_with("Done: I added the --verbose flag")).expect("A's completion kept");
    let summary_at = pos(&|m| m.kind == MessageKind::Summary).unwrap();
    let a = pos(&|m| m.kind == MessageKind::Normal && m.content.starts_with("Task A"));
    assert_eq!(a, Some(0), "A's request is the head");
    assert!(summary_at < done, "A's request, then the summary, then A done");
    let b_at = pos(&|m| m.content.ends_with(request_b)).unwrap();
    assert!(done < b_at && summary_at < b_at);
    assert!(plan.tokens_after < threshold);
    assert!(feedback_line(&plan).starts_with(&format!("Compressed {} → ", history.len())));
}

#[test]
fn scenario_3_long_tool_arguments_stay_valid_json_after_pruning() {
    let tricky = "a \"quoted\" back\\slash\nnew line ünïcødé 日本語 ".repeat(125);
    assert!(tricky.chars().count() >= 5_000);
    let args = serde_json::json!({"path": "notes.md", "content": tricky}).to_string();
    let mut b = Builder::new();
    b.user("write the notes");
    b.tool("write_file", &args, "ok");
    for i in 0..12 {
        b.user(format!("question {i} {}", tokens(300)));
        b.assistant(format!("answer {i} {}", tokens(300)));
    }
    let history = b.build();
    let mut e = engine(32_000, 4_000, 0.75);
    let plan = e
        .compress_extractive(Trigger::Manual, &input(&history, None), 0)
        .unwrap();
    let (original, copy) = plan
        .rewritten
        .iter()
        .find(|(_, m)| !m.tool_calls.is_empty())
        .expect("the call in the head was shortened");
    assert_eq!(*original, history[1].id);
    let parsed: serde_json::Value = serde_json::from_str(&copy.tool_calls[0].arguments).unwrap();
    let content = parsed["content"].as_str().unwrap();
    assert!(content.chars().count() < tricky.chars().count());
    assert!(tricky.starts_with(content.split('…').next().unwrap()));
    assert!(plan.archived.contains(original));
}

#[test]
fn scenario_4_short_history_strikes_then_locks_but_manual_still_runs() {
    let mut b = Builder::new();
    for i in 0..5 {
        b.user(format!("small question {i}"));
        b.assistant(format!("small answer {i}"));
    }
    let history = b.build();
    let mut e = engine(32_000, 4_000, 0.75);
    for strike in 1..=2 {
        let err = e.prepare(Trigger::Preflight, &input(&history, None)).unwrap_err();
        assert_eq!(err, CompressError::NothingToCompress);
        assert_eq!(e.status().strikes, strike);
    }
    assert_eq!(e.status().locked, Some(LockReason::NothingToCompress));
    assert!(matches!(
        e.should_compress(Trigger::Preflight, 1_000_000, 0),
        Decision::Skip(SkipReason::LockedOut(_))
    ));
    assert_eq!(e.should_compress(Trigger::Manual, 0, 0), Decision::Compress);
    let plan = e
        .compress_extractive(Trigger::Manual, &input(&history, Some("answers")), 0)
        .unwrap();
    assert_eq!(plan.topic.as_deref(), Some("answers"));
    assert!(plan.messages_after < plan.messages_before);
    assert!(feedback_line(&plan).contains("· topic \"answers\""));
    // A reading that fits lifts the lockout.
    e.on_usage(1_000, 1_000);
    assert_eq!(e.status().locked, None);
}

#[test]
fn an_automatic_compression_that_saves_nothing_changes_nothing_and_strikes() {
    let mut b = Builder::new();
    for i in 0..5 {
        b.user(format!("small question {i}"));
        b.assistant(format!("small answer {i}"));
    }
    let history = b.build();
    let mut e = engine(32_000, 4_000, 0.75);
    let err = e
        .compress_extractive(Trigger::Overflow, &input(&history, None), 0)
        .unwrap_err();
    assert!(
        matches!(err, CompressError::NoSaving { before, after } if after >= before),
        "{err}"
    );
    assert!(err.to_string().starts_with("Nothing changed"), "{err}");
    assert_eq!(e.status().strikes, 1);
    // By hand it is still made, and the feedback says why it grew.
    let plan = e
        .compress_extractive(Trigger::Manual, &input(&history, None), 0)
        .unwrap();
    assert!(plan.tokens_after >= plan.tokens_before);
    assert!(
        feedback_line(&plan).contains("more tokens"),
        "{}",
        feedback_line(&plan)
    );
}

#[test]
fn scenario_5_threshold_numbers_drive_the_trigger() {
    let t = Threshold::compute(64_000, 0, 0.5, 256_000);
    assert_eq!(t.effective, 54_400, "85 % of the effective window, not 100 %");
    let mut e = engine(64_000, 0, 0.5);
    assert_eq!(
        e.should_compress(Trigger::Preflight, 54_399, 0),
        Decision::Skip(SkipReason::BelowThreshold)
    );
    assert_eq!(
        e.should_compress(Trigger::Preflight, 54_400, 0),
        Decision::Compress
    );
    let t = Threshold::compute(1_000_000, 0, 0.75, 256_000);
    assert_eq!(t.effective, 256_000);
    let mut e = engine(1_000_000, 0, 0.75);
    assert_eq!(
        e.should_compress(Trigger::Preflight, 255_999, 0),
        Decision::Skip(SkipReason::BelowThreshold)
    );
    assert_eq!(
        e.should_compress(Trigger::Preflight, 256_000, 0),
        Decision::Compress
    );
}

#[test]
fn scenario_6_one_huge_message_compresses_a_short_history() {
    let mut b = Builder::new();
    b.user("read the server log");
    b.tool("read_file", r#"{"path":"logs/server.log"}"#, tokens(300_000));
    b.assistant("The log shows a timeout in src/net.rs after 30 s.");
    b.user("fix it");
    b.assistant("On it.");
    let history = b.build();
    assert_eq!(history.len(), 6);
    let mut e = engine(200_000, 8_192, 0.75);
    let est = estimate(&history);
    assert_eq!(e.should_compress(Trigger::Preflight, est, 0), Decision::Compress);
    let plan = e
        .compress_extractive(Trigger::Preflight, &input(&history, None), 0)
        .unwrap();
    assert!(
        plan.archived.contains(&history[2].id),
        "the 300k result is archived"
    );
    assert!(plan.tokens_after < 10_000, "{}", plan.tokens_after);
    assert!(plan.summary.content.contains("logs/server.log"));
    assert_eq!(plan.messages.last().unwrap().content, "On it.");
}

fn long_history() -> Vec<strata::domain::Message> {
    let mut b = Builder::new();
    for i in 0..20 {
        b.user(format!("step {i}: please look at src/step_{i}.rs"));
        b.tool(
            "read_file",
            &format!(r#"{{"path":"src/step_{i}.rs"}}"#),
            tokens(1_000),
        );
        b.assistant(format!("Step {i} looks fine. {}", tokens(200)));
    }
    b.build()
}

#[test]
fn scenario_7_summariser_failures() {
    let history = long_history();
    let mut e = engine(32_000, 4_000, 0.75);
    let mut e_model = e.clone();
    for failure in [
        SummaryFailure::Network("connection refused".into()),
        SummaryFailure::Auth("HTTP 401".into()),
    ] {
        let mut m = engine(32_000, 4_000, 0.75);
        m.on_session_start(strata::compress::EngineConfig {
            summarizer: SummarizerChoice::Model("gpt-test".into()),
            ..m.config().clone()
        });
        let pending = m.prepare(Trigger::Manual, &input(&history, None)).unwrap();
        assert!(pending.request.is_some());
        let err = m
            .finish(pending, Some(SummaryOutcome::Failed(failure)), &QuarterCounter, 0)
            .unwrap_err();
        assert!(matches!(err, CompressError::Aborted(_)), "{err}");
    }
    e_model.on_session_start(strata::compress::EngineConfig {
        summarizer: SummarizerChoice::Model("gpt-test".into()),
        ..e.config().clone()
    });
    let pending = e_model
        .prepare(Trigger::Preflight, &input(&history, None))
        .unwrap();
    let plan = e_model
        .finish(
            pending,
            Some(SummaryOutcome::Summary("  ".into())),
            &QuarterCounter,
            1_000,
        )
        .unwrap();
    assert_eq!(plan.summarizer, Summarizer::Fallback);
    assert_eq!(plan.warnings.len(), 1);
    assert!(plan.summary.content.contains("Fallback summary"));
    assert!(plan.summary.content.chars().count() <= 8_000 + NOTICE.len() + END_MARKER.len() + 200);
    assert!(matches!(
        e_model.should_compress(Trigger::AfterResponse, 0, 20_000),
        Decision::Skip(SkipReason::CoolingDown { until_ms: 31_000 })
    ));
    let ok = e
        .compress_extractive(Trigger::Manual, &input(&history, None), 0)
        .unwrap();
    assert_eq!(ok.summarizer, Summarizer::Extractive);
}

#[test]
fn a_model_reply_without_text_falls_back_and_a_repeated_secret_is_redacted() {
    let mut b = Builder::new();
    for i in 0..30 {
        b.user(format!("request {i}: {}", tokens(400)));
        b.assistant(format!("answer {i}: {}", tokens(400)));
    }
    let history = b.build();
    let model = || {
        let mut m = engine(32_000, 4_000, 0.75);
        m.on_session_start(strata::compress::EngineConfig {
            summarizer: SummarizerChoice::Model("gpt-test".into()),
            ..m.config().clone()
        });
        m
    };
    let mut m = model();
    let pending = m.prepare(Trigger::Manual, &input(&history, None)).unwrap();
    let plan = m
        .finish(
            pending,
            Some(SummaryOutcome::Summary("\u{0}\u{1} \u{7f}".into())),
            &QuarterCounter,
            0,
        )
        .unwrap();
    assert_eq!(plan.summarizer, Summarizer::Fallback);
    assert!(
        matches!(&plan.warnings[0], CompressWarning::Fallback { why } if why.contains("no text")),
        "{:?}",
        plan.warnings
    );
    let mut m = model();
    let pending = m.prepare(Trigger::Manual, &input(&history, None)).unwrap();
    let key = "sk-proj-AbCdEf0123456789AbCdEf0123456789xyz";
    let reply = format!("## Active state\n- the key was {key}\u{0}\r\n- done");
    let plan = m
        .finish(pending, Some(SummaryOutcome::Summary(reply)), &QuarterCounter, 0)
        .unwrap();
    assert_eq!(plan.summarizer, Summarizer::Model("gpt-test".into()));
    assert!(!plan.summary.content.contains(key), "{}", plan.summary.content);
    assert!(plan.summary.content.contains("[REDACTED:openai_key]\n- done"));
    // A reply far over the size asked for is refused, not kept in every
    // later request.
    let mut m = model();
    let pending = m.prepare(Trigger::Manual, &input(&history, None)).unwrap();
    let huge = format!("## Active state\n{}", "- a fact worth keeping\n".repeat(40_000));
    let plan = m
        .finish(pending, Some(SummaryOutcome::Summary(huge)), &QuarterCounter, 0)
        .unwrap();
    assert_eq!(plan.summarizer, Summarizer::Fallback);
    assert!(
        matches!(&plan.warnings[0], CompressWarning::Fallback { why } if why.contains("times the")),
        "{:?}",
        plan.warnings
    );
    assert!(plan.tokens_after < plan.tokens_before);
}

#[test]
fn a_model_update_much_shorter_than_the_earlier_summary_is_flagged() {
    let mut b = Builder::new();
    for i in 0..40 {
        b.user(format!("request {i}: fix src/mod{i}.rs {}", tokens(300)));
        b.assistant(format!("We decided to keep mod{i} small. {}", tokens(300)));
    }
    let history = b.build();
    let first = engine(32_000, 4_000, 0.75)
        .compress_extractive(Trigger::Manual, &input(&history, None), 0)
        .unwrap();
    let mut next = first.messages.clone();
    let mut more = Builder::new();
    for i in 0..10 {
        more.user(format!("later request {i}: {}", tokens(300)));
        more.assistant(format!("later answer {i}: {}", tokens(300)));
    }
    next.extend(more.build());
    let mut m = engine(32_000, 4_000, 0.75);
    m.on_session_start(strata::compress::EngineConfig {
        summarizer: SummarizerChoice::Model("gpt-test".into()),
        ..m.config().clone()
    });
    let pending = m.prepare(Trigger::Manual, &input(&next, None)).unwrap();
    let plan = m
        .finish(
            pending,
            Some(SummaryOutcome::Summary("tiny update.".into())),
            &QuarterCounter,
            0,
        )
        .unwrap();
    assert_eq!(plan.summarizer, Summarizer::Model("gpt-test".into()));
    assert!(
        plan.warnings
            .iter()
            .any(|w| matches!(w, CompressWarning::SummaryShrank { .. })),
        "{:?}",
        plan.warnings
    );
}

#[test]
fn scenario_9_only_the_newest_image_survives() {
    let png = format!("data:image/png;base64,{}", "iVBORw0KGgo".repeat(400));
    let mut b = Builder::new();
    for i in 0..6 {
        b.user(format!("picture {i}: {png}"));
        b.assistant(format!("I see picture {i}. {}", tokens(400)));
    }
    let history = b.build();
    let mut e = engine(32_000, 4_000, 0.75);
    let plan = e
        .compress_extractive(Trigger::Manual, &input(&history, None), 0)
        .unwrap();
    let with_image: Vec<_> = plan
        .messages
        .iter()
        .filter(|m| m.content.contains("data:image"))
        .collect();
    assert_eq!(with_image.len(), 1);
    assert!(with_image[0].content.starts_with("picture 5"));
    let placeholders = plan
        .messages
        .iter()
        .filter(|m| m.content.contains("[image omitted: image/png"))
        .count();
    let kept_users = plan
        .messages
        .iter()
        .filter(|m| m.role == Role::User && m.content.contains("picture"))
        .count();
    assert_eq!(placeholders, kept_users - 1);
    assert!(!plan.summary.content.contains("base64"));
}

#[test]
fn scenario_10_second_compression_updates_the_single_summary() {
    let history = long_history();
    let mut e = engine(32_000, 4_000, 0.75);
    let first = e
        .compress_extractive(Trigger::Manual, &input(&history, None), 0)
        .unwrap();
    let mut next = first.messages.clone();
    let mut b = Builder::new();
    b.session = next[0].session_id;
    for i in 20..35 {
        b.user(format!("step {i}: please look at src/step_{i}.rs"));
        b.tool(
            "read_file",
            &format!(r#"{{"path":"src/step_{i}.rs"}}"#),
            tokens(1_000),
        );
        b.assistant(format!("Step {i} looks fine. {}", tokens(200)));
    }
    next.extend(b.build());
    let second = e
        .compress_extractive(Trigger::Manual, &input(&next, None), 0)
        .unwrap();
    let summaries: Vec<_> = second
        .messages
        .iter()
        .filter(|m| m.kind == MessageKind::Summary)
        .collect();
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].content.matches(NOTICE.trim()).count(), 1);
    assert_eq!(summaries[0].content.matches(END_MARKER.trim()).count(), 1);
    assert!(
        second.archived.contains(&first.summary.id),
        "the first summary is archived by the second"
    );
    assert!(!second.messages.iter().any(|m| m.id == first.summary.id));
    assert!(
        summaries[0].content.contains("src/step_0.rs"),
        "facts of the first summary carried over"
    );
}

#[test]
fn preflight_defers_after_a_compaction_and_on_small_growth() {
    let history = long_history();
    let mut e = engine(32_000, 4_000, 0.75);
    let plan = e
        .compress_extractive(Trigger::Manual, &input(&history, None), 0)
        .unwrap();
    assert!(plan.tokens_after < 23_800);
    assert_eq!(
        e.should_compress(Trigger::Preflight, 30_000, 0),
        Decision::Skip(SkipReason::Deferred)
    );
    e.on_usage(20_000, 21_000);
    assert_eq!(
        e.should_compress(Trigger::Preflight, 25_000, 0),
        Decision::Skip(SkipReason::Deferred)
    );
    assert_eq!(
        e.should_compress(Trigger::Preflight, 25_097, 0),
        Decision::Compress
    );
    // After a response, only prompt_tokens counts.
    e.on_usage(23_800, 10_000);
    assert_eq!(
        e.should_compress(Trigger::AfterResponse, 0, 0),
        Decision::Compress
    );
    // Overflow: one retry per reading.
    assert_eq!(e.should_compress(Trigger::Overflow, 0, 0), Decision::Compress);
    assert_eq!(
        e.should_compress(Trigger::Overflow, 0, 0),
        Decision::Skip(SkipReason::RetryUsed)
    );
}

#[test]
fn on_a_small_served_window_preflight_waits_for_a_reading_only_within_a_fifth_of_the_threshold() {
    // A 3,072-token llama.cpp server: reserve 768, threshold 1,958.
    let mut e = engine(3_072, 768, 0.75);
    assert_eq!(Threshold::compute(3_072, 768, 0.75, 256_000).effective, 1_958);
    assert_eq!(deferral_slack(1_958), 391);
    // The last request fit because the pipeline left older turns out; the
    // next one has grown by a whole large turn and is compressed first.
    e.on_usage(1_871, 1_871);
    assert_eq!(
        e.should_compress(Trigger::Preflight, 2_649, 0),
        Decision::Compress
    );
    e.on_usage(1_871, 1_871);
    assert_eq!(
        e.should_compress(Trigger::Preflight, 1_871 + 391, 0),
        Decision::Skip(SkipReason::Deferred)
    );
    // Large windows keep DESIGN §7's slack: max(5 % of the threshold, 4,096).
    assert_eq!(deferral_slack(23_800), 4_096);
    assert_eq!(deferral_slack(96_000), 4_800);
}

#[test]
fn right_after_a_compaction_preflight_waits_unless_the_pipeline_would_leave_turns_out() {
    let history = long_history();
    let mut e = engine(32_000, 4_000, 0.75);
    e.compress_extractive(Trigger::Manual, &input(&history, None), 0)
        .unwrap();
    assert_eq!(
        e.should_compress_preflight(30_000, false, 0),
        Decision::Skip(SkipReason::Deferred)
    );
    assert_eq!(e.should_compress_preflight(30_000, true, 0), Decision::Compress);
    // Under the threshold nothing compresses, turns left out or not.
    assert_eq!(
        e.should_compress_preflight(1_000, true, 0),
        Decision::Skip(SkipReason::BelowThreshold)
    );
}
