//! A compression whose boundary the user chose (`Cut`) and whose summary
//! the user gave (`SummaryOutcome::Given`), at the engine level.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::compress as compress_support;

use compress_support::{Builder, QuarterCounter, engine, tokens};
use strata::compress::{
    CompressError, CompressWarning, CompressionEngine, CompressionInput, Cut, SummarizerChoice,
    SummaryOutcome, Trigger, split_summary,
};
use strata::domain::{Message, Summarizer};

fn input(messages: &[Message]) -> CompressionInput<'_> {
    CompressionInput {
        messages,
        fixed_tokens: 500,
        counter: &QuarterCounter,
        topic: None,
        sent_tokens: None,
        sent_dropped: None,
    }
}

/// `pairs` exchanges of a request and a reply, about 200 tokens each.
fn exchanges(pairs: usize) -> Vec<Message> {
    let mut b = Builder::new();
    for i in 0..pairs {
        b.user(format!("Request {i}: {}", tokens(200)));
        b.assistant(format!("Done {i}: {}", tokens(200)));
    }
    b.build()
}

fn model_engine() -> strata::compress::DefaultEngine {
    let mut e = engine(64_000, 4_000, 0.75);
    e.on_session_start(strata::compress::EngineConfig {
        summarizer: SummarizerChoice::Model("gpt-test".into()),
        ..e.config().clone()
    });
    e
}

#[test]
fn a_given_summary_is_stored_whatever_its_size_without_a_fallback() {
    let history = exchanges(12);
    let mut e = model_engine();
    let pending = e.prepare(Trigger::Manual, &input(&history)).unwrap();
    let asked = u64::from(pending.target_tokens());
    // Five times what a model may return: a person's summary is not refused.
    let body = format!("## Decisions\n{}.", tokens(asked as usize * 5).trim_end());
    let plan = e
        .finish(
            pending,
            Some(SummaryOutcome::Given(body.clone())),
            &QuarterCounter,
            0,
        )
        .unwrap();
    let stored = split_summary(&plan.summary.content).0;
    assert!(
        stored == body,
        "stored {} chars of the {} given",
        stored.len(),
        body.len()
    );
    assert_eq!(plan.summarizer, Summarizer::Model("gpt-test".into()));
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    assert_eq!(e.status().fallbacks_in_row, 0);

    let pending = e.prepare(Trigger::Manual, &input(&history)).unwrap();
    let err = e
        .finish(
            pending,
            Some(SummaryOutcome::Given(" \n\u{7}".into())),
            &QuarterCounter,
            0,
        )
        .unwrap_err();
    assert_eq!(err, CompressError::EmptySummary);
}

#[test]
fn keep_last_keeps_n_exchanges_and_a_pinned_turn_still_stays() {
    let mut history = exchanges(10);
    history[6].pinned = true; // the request of exchange 3
    let mut e = engine(64_000, 4_000, 0.75);
    let plan = e
        .prepare_cut(Trigger::Manual, &input(&history), Some(Cut::KeepLast(3)))
        .and_then(|p| e.finish(p, None, &QuarterCounter, 0))
        .unwrap();
    let kept: Vec<&str> = plan.messages.iter().map(|m| m.content.as_str()).collect();
    let tail: Vec<&str> = history[14..].iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        kept[kept.len() - 6..],
        tail[..],
        "the last three exchanges, verbatim"
    );
    assert!(
        kept.contains(&history[6].content.as_str()) && kept.contains(&history[7].content.as_str()),
        "the pinned turn stays after the summary"
    );
    for summarised in [2, 3, 4, 5, 8, 9, 10, 11, 12, 13] {
        assert!(plan.archived.contains(&history[summarised].id), "{summarised}");
    }
    // Keeping more than the tail budget would: the cut decides, not the budget.
    let default = e.prepare(Trigger::Manual, &input(&history)).unwrap();
    assert_ne!(default.boundaries().tail_start, 14);
}

#[test]
fn up_to_the_last_request_moves_back_and_warns() {
    let history = exchanges(8);
    let mut e = engine(64_000, 4_000, 0.75);
    let pending = e
        .prepare_cut(Trigger::Manual, &input(&history), Some(Cut::UpTo(history[15].id)))
        .unwrap();
    assert_eq!(pending.boundaries().tail_start, 14);
    let plan = e.finish(pending, None, &QuarterCounter, 0).unwrap();
    assert_eq!(
        plan.warnings,
        [CompressWarning::CutMoved {
            asked: 16,
            landed: 14
        }]
    );
    let last = plan.messages.last().unwrap();
    assert_eq!(last.id, history[15].id, "the last reply stays verbatim");
}
