//! Specification of the whole turn, as behaviour: preflight, overflow retry,
//! after-response compression, strikes and lockout, cancellation. No I/O and
//! no async: a small executor below plays the runtime's part, running the
//! real compression engine on the conversation's own history.

use super::tests::{prompt, session};
use super::*;
use crate::compress::{CompressionInput, Decision, SkipReason};
use crate::domain::{MessageKind, PromptId, Role};
use crate::tokens::{Encoding, TiktokenCounter, request_overhead};

const WINDOW: u64 = 8_192;
const MAX_TOKENS: u64 = 1_024;

fn engine() -> Box<DefaultEngine> {
    Box::new(DefaultEngine::new(EngineConfig {
        window: WINDOW,
        reserved_output: MAX_TOKENS,
        threshold: Threshold::compute(WINDOW, MAX_TOKENS, 0.75, 256_000),
        protect_last_n: 4,
        summarizer: SummarizerChoice::Extractive,
        enabled: true,
    }))
}

/// `turns` stored user/assistant pairs of about `words` words each, and
/// whether each user message is pinned.
fn history(session: &Session, turns: usize, words: usize, pinned: bool) -> Vec<Message> {
    let mut out = Vec::new();
    for t in 0..turns {
        let body = |who: &str| {
            (0..words)
                .map(|w| format!("{who}{t}w{w}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut user = Message::new(session.id, Role::User, format!("question {t}: {}", body("q")), 0);
        user.pinned = pinned;
        out.push(user);
        out.push(Message::new(
            session.id,
            Role::Assistant,
            format!("answer {t}: {}", body("a")),
            0,
        ));
    }
    for (seq, m) in (1..).zip(out.iter_mut()) {
        m.seq = seq;
    }
    out
}

/// A conversation over `messages` with compression on.
fn conversation(messages: Vec<Message>, session: Session) -> Conversation {
    let prompt = prompt(&session, "You are helpful.", None);
    Conversation::new(
        session,
        prompt,
        messages,
        Arc::new(TiktokenCounter::new(Encoding::O200kBase, true)),
        MAX_TOKENS,
    )
    .with_window(WINDOW)
    .with_engine(engine())
}

/// The runtime's part, without I/O: stored messages get the next `seq`.
struct Runner {
    seq: i64,
}

impl Runner {
    fn new(c: &Conversation) -> Self {
        Self {
            seq: c.messages().iter().map(|m| m.seq).max().unwrap_or(0),
        }
    }

    fn handle(&mut self, c: &mut Conversation, event: Event) -> Vec<Effect> {
        let effects = c.handle(event);
        for e in &effects {
            if let Effect::SaveMessage(m) = e {
                self.seq += 1;
                c.saved(m.id, self.seq);
            }
        }
        effects
    }

    /// Runs an `Effect::Compress` as the runtime does: the engine on the
    /// conversation's history (extractive summary), the result fed back.
    fn compress(&mut self, c: &mut Conversation, trigger: Trigger, now_ms: i64) -> Vec<Effect> {
        let compacted = compact(c, trigger, now_ms);
        self.handle(c, Event::Compressed { compacted, now_ms })
    }
}

fn compact(c: &mut Conversation, trigger: Trigger, now_ms: i64) -> Option<Box<Compacted>> {
    c.history_tokens();
    let messages = c.messages().to_vec();
    let counter = Arc::clone(c.counter());
    let fixed = counter.count(&c.prompt().text) as u64 + u64::from(request_overhead(true));
    let input = CompressionInput {
        messages: &messages,
        fixed_tokens: fixed,
        counter: counter.as_ref(),
        topic: None,
        sent_tokens: None,
        sent_dropped: None,
    };
    let engine = c.engine_mut();
    let pending = engine.prepare(trigger, &input).ok()?;
    let plan = engine.finish(pending, None, counter.as_ref(), now_ms).ok()?;
    let prompt = SystemPrompt {
        id: PromptId::new(),
        version: c.prompt().version + 1,
        ..c.prompt().clone()
    };
    Some(Box::new(Compacted { plan, prompt }))
}

fn submit(text: &str, now_ms: i64) -> Event {
    Event::Submit {
        text: text.into(),
        now_ms,
    }
}

fn done(now_ms: i64) -> Event {
    Event::Stream {
        event: StreamEvent::Done {
            finish_reason: Some(crate::domain::FinishReason::Stop),
        },
        now_ms,
    }
}

fn usage(prompt_tokens: u64, now_ms: i64) -> Event {
    Event::Stream {
        event: StreamEvent::Usage(ProviderUsage {
            prompt_tokens: Some(prompt_tokens),
            ..ProviderUsage::default()
        }),
        now_ms,
    }
}

fn overflow(now_ms: i64) -> Event {
    Event::Failed {
        kind: FailureKind::Overflow,
        message: "the request is too long for the model's context window".into(),
        now_ms,
    }
}

fn compress_of(effects: &[Effect]) -> Option<Trigger> {
    effects.iter().find_map(|e| match e {
        Effect::Compress { trigger } => Some(*trigger),
        _ => None,
    })
}

fn request_of(effects: &[Effect]) -> Option<&crate::domain::ChatRequest> {
    effects.iter().find_map(|e| match e {
        Effect::SendRequest(r) => Some(r),
        _ => None,
    })
}

fn finished(effects: &[Effect]) -> Option<(Option<MessageId>, MessageStatus)> {
    effects.iter().find_map(|e| match e {
        Effect::TurnFinished {
            message_id, status, ..
        } => Some((*message_id, *status)),
        _ => None,
    })
}

fn saved_assistants(effects: &[Effect]) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, Effect::SaveMessage(m) if m.role == Role::Assistant))
        .count()
}

#[test]
fn preflight_compresses_before_sending() {
    let s = session();
    let mut c = conversation(history(&s, 40, 40, false), s);
    let mut run = Runner::new(&c);
    let before = c.messages().len();
    let e = run.handle(&mut c, submit("and now?", 1));
    assert!(
        matches!(&e[0], Effect::SaveMessage(m) if m.content == "and now?"),
        "{e:?}"
    );
    assert_eq!(compress_of(&e), Some(Trigger::Preflight), "{e:?}");
    assert!(request_of(&e).is_none(), "nothing is sent before the compression");
    assert_eq!(saved_assistants(&e), 0);
    assert!(e.contains(&Effect::Phase(Phase::Compressing(Trigger::Preflight))));

    let e = run.compress(&mut c, Trigger::Preflight, 2);
    let request = request_of(&e).unwrap_or_else(|| panic!("{e:?}"));
    assert!(c.messages().len() < before, "the history was compacted");
    assert!(c.messages().iter().any(|m| m.kind == MessageKind::Summary));
    assert_eq!(
        request.messages.last().map(|m| m.content.as_str()),
        Some("and now?")
    );
    assert_eq!(saved_assistants(&e), 1);
}

#[test]
fn an_overflow_compresses_then_retries_exactly_once() {
    let s = session();
    let mut c = conversation(history(&s, 12, 30, false), s);
    let mut run = Runner::new(&c);
    let e = run.handle(&mut c, submit("hi", 1));
    assert!(compress_of(&e).is_none(), "under the threshold: no preflight");
    assert!(request_of(&e).is_some());

    let e = run.handle(&mut c, overflow(2));
    assert_eq!(compress_of(&e), Some(Trigger::Overflow), "{e:?}");
    assert!(finished(&e).is_none());

    let e = run.compress(&mut c, Trigger::Overflow, 3);
    assert!(
        request_of(&e).is_some(),
        "the same request is sent once more: {e:?}"
    );
    assert_eq!(saved_assistants(&e), 0, "the retry keeps the reply's row");

    let e = run.handle(&mut c, overflow(4));
    assert!(
        compress_of(&e).is_none(),
        "a second overflow does not compress again"
    );
    assert!(e.contains(&Effect::ShowError(TurnNotice::Provider(
        "the request is too long for the model's context window".into()
    ))));
    assert!(
        matches!(finished(&e), Some((Some(_), MessageStatus::Error))),
        "{e:?}"
    );
    assert!(!c.is_streaming());
}

#[test]
fn an_overflow_that_compression_cannot_help_ends_the_turn_with_the_overflow_error() {
    let s = session();
    let mut c = conversation(Vec::new(), s);
    let mut run = Runner::new(&c);
    run.handle(&mut c, submit("hi", 1));
    let e = run.handle(&mut c, overflow(2));
    assert_eq!(compress_of(&e), Some(Trigger::Overflow));
    let e = run.compress(&mut c, Trigger::Overflow, 3);
    assert!(request_of(&e).is_none());
    assert!(e.contains(&Effect::ShowError(TurnNotice::Provider(
        "the request is too long for the model's context window".into()
    ))));
    assert!(matches!(finished(&e), Some((Some(_), MessageStatus::Error))));
}

#[test]
fn after_response_compression_uses_the_providers_prompt_tokens() {
    let s = session();
    let threshold = Threshold::compute(WINDOW, MAX_TOKENS, 0.75, 256_000).effective;
    for (reported, compresses) in [(threshold + 100, true), (threshold / 2, false)] {
        let mut c = conversation(history(&s, 12, 30, false), s.clone());
        let mut run = Runner::new(&c);
        let e = run.handle(&mut c, submit("hi", 1));
        let estimate = request_of(&e).map(|_| ()).and(Some(()));
        assert!(estimate.is_some());
        run.handle(&mut c, usage(reported, 2));
        let e = run.handle(&mut c, done(3));
        assert!(e.iter().any(|x| matches!(x, Effect::RecordUsage(_))));
        if compresses {
            assert_eq!(compress_of(&e), Some(Trigger::AfterResponse), "{e:?}");
            assert!(finished(&e).is_none(), "the turn ends after the compression");
            let e = run.compress(&mut c, Trigger::AfterResponse, 4);
            assert!(
                matches!(finished(&e), Some((Some(_), MessageStatus::Complete))),
                "{e:?}"
            );
            assert!(c.messages().iter().any(|m| m.kind == MessageKind::Summary));
        } else {
            assert!(compress_of(&e).is_none());
            assert!(matches!(finished(&e), Some((Some(_), MessageStatus::Complete))));
        }
    }
}

#[test]
fn two_no_op_compressions_block_automatic_compression_and_a_manual_one_still_runs() {
    // Every turn holds a pinned message: nothing may be summarised, so the
    // core does not ask (no strike for what it could foresee)...
    let s = session();
    let mut c = conversation(history(&s, 40, 40, true), s);
    let mut run = Runner::new(&c);
    let e = run.handle(&mut c, submit("again", 0));
    assert!(compress_of(&e).is_none(), "not worth trying: {e:?}");
    assert!(request_of(&e).is_some());
    run.handle(&mut c, done(1));
    assert_eq!(c.engine().status().strikes, 0);
    // ...and a compression run all the same finds nothing, a strike each
    // time; two pause automatic compression.
    for turn in 1..3 {
        assert!(
            compact(&mut c, Trigger::Preflight, 10 * turn).is_none(),
            "nothing to summarise"
        );
    }
    assert_eq!(c.engine().status().strikes, 2);
    assert!(c.engine().status().locked.is_some());
    let e = run.handle(&mut c, submit("and again", 100));
    assert!(compress_of(&e).is_none(), "locked out: {e:?}");
    assert!(request_of(&e).is_some());
    let state = e.iter().find_map(|x| match x {
        Effect::SaveEngineState(s) => Some(s.clone()),
        _ => None,
    });
    assert!(state.is_none_or(|s| s.status.locked.is_some()));
    run.handle(&mut c, done(101));
    assert_eq!(
        c.engine_mut().should_compress(Trigger::Manual, 0, 102),
        Decision::Compress,
        "a manual compression bypasses the lockout"
    );
    assert!(matches!(
        c.engine_mut().should_compress(Trigger::Preflight, u64::MAX, 102),
        Decision::Skip(SkipReason::LockedOut(_))
    ));
}

#[test]
fn cancel_during_preflight_compression_keeps_the_user_message() {
    let s = session();
    let mut c = conversation(history(&s, 40, 40, false), s);
    let mut run = Runner::new(&c);
    let e = run.handle(&mut c, submit("keep me", 1));
    assert_eq!(compress_of(&e), Some(Trigger::Preflight));
    let e = run.handle(&mut c, Event::Cancel { now_ms: 2 });
    assert_eq!(finished(&e), Some((None, MessageStatus::Interrupted)), "{e:?}");
    assert!(!e.iter().any(|x| matches!(x, Effect::UpdateMessage { .. })));
    assert_eq!(c.messages().last().map(|m| m.content.as_str()), Some("keep me"));
    assert!(!c.is_streaming());
    // The abandoned compression's late answer changes nothing.
    assert!(
        c.handle(Event::Compressed {
            compacted: None,
            now_ms: 3
        })
        .is_empty()
    );
}

#[test]
fn cancel_during_streaming_or_after_response_compression_keeps_the_reply() {
    let s = session();
    let threshold = Threshold::compute(WINDOW, MAX_TOKENS, 0.75, 256_000).effective;
    let mut c = conversation(history(&s, 12, 30, false), s);
    let mut run = Runner::new(&c);
    run.handle(&mut c, submit("hi", 1));
    run.handle(
        &mut c,
        Event::Stream {
            event: StreamEvent::TextDelta { text: "part".into() },
            now_ms: 2,
        },
    );
    run.handle(&mut c, usage(threshold + 1, 3));
    let e = run.handle(&mut c, done(4));
    assert_eq!(compress_of(&e), Some(Trigger::AfterResponse));
    let e = run.handle(&mut c, Event::Cancel { now_ms: 5 });
    assert!(
        matches!(finished(&e), Some((Some(_), MessageStatus::Complete))),
        "{e:?}"
    );
    assert_eq!(c.messages().last().map(|m| m.content.as_str()), Some("part"));

    run.handle(&mut c, submit("more", 6));
    run.handle(
        &mut c,
        Event::Stream {
            event: StreamEvent::TextDelta { text: "half".into() },
            now_ms: 7,
        },
    );
    let e = run.handle(&mut c, Event::Cancel { now_ms: 8 });
    assert!(e.iter().any(|x| matches!(x,
        Effect::UpdateMessage { content, status: MessageStatus::Interrupted, .. } if content == "half")));
    assert!(matches!(
        finished(&e),
        Some((Some(_), MessageStatus::Interrupted))
    ));
    let users: Vec<&str> = c
        .messages()
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(users.last(), Some(&"more"));
}

#[test]
fn a_3000_line_paste_into_an_8k_window_neither_compresses_nor_strikes() {
    let s = session();
    let mut c = conversation(history(&s, 3, 20, false), s);
    let mut run = Runner::new(&c);
    let paste: String = (0..3_000)
        .map(|i| {
            format!(
                "2026-12-01 12:00:{:02} worker-{i} processed batch {i} in {} ms\n",
                i % 60,
                i * 7
            )
        })
        .collect();
    let e = run.handle(&mut c, submit(&paste, 1));
    assert!(
        compress_of(&e).is_none(),
        "{:?}",
        e.iter().map(std::mem::discriminant).collect::<Vec<_>>()
    );
    let sent = request_of(&e).map(|r| r.messages.len());
    assert!(sent.is_some(), "the request is sent, the paste cut to fit");
    let prepared = c.prepare().unwrap_or_else(|e| panic!("{e}"));
    let stored: u64 = c.history_tokens().iter().map(|&t| u64::from(t)).sum();
    assert!(
        prepared.prelimit_tokens < stored / 4,
        "the pre-limit estimate counts the cut paste"
    );
    assert!(prepared.prepared_tokens <= WINDOW - MAX_TOKENS);
    // The provider reads the cut request: still no compression, no strike.
    run.handle(&mut c, usage(prepared.prepared_tokens, 2));
    let e = run.handle(&mut c, done(3));
    assert!(compress_of(&e).is_none(), "{e:?}");
    assert!(finished(&e).is_some());
    assert_eq!(c.engine().status().strikes, 0);
    assert!(c.engine().status().locked.is_none());
}

#[test]
fn stored_counts_are_reported_for_the_store_before_the_request_goes_out() {
    let s = session();
    let mut c = conversation(history(&s, 2, 5, false), s);
    let e = c.handle(submit("hi", 1));
    let counts = e
        .iter()
        .position(|x| matches!(x, Effect::StoreTokenCounts(v) if v.len() == 5));
    let send = e.iter().position(|x| matches!(x, Effect::SendRequest(_)));
    assert!(matches!((counts, send), (Some(a), Some(b)) if a < b), "{e:?}");
    // Counted once: the next event has none to store.
    let e = c.handle(done(2));
    assert!(
        e.iter()
            .all(|x| !matches!(x, Effect::StoreTokenCounts(v) if v.len() > 1)),
        "{e:?}"
    );
}

#[test]
fn a_preflight_right_after_a_compaction_compresses_when_the_pipeline_would_leave_turns_out() {
    let s = session();
    // The previous turn ended with a compaction; no reading came since, so
    // a preflight would wait for one.
    let mut engine = engine();
    let earlier = history(&s, 12, 30, false);
    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    let input = CompressionInput {
        messages: &earlier,
        fixed_tokens: 100,
        counter: &counter,
        topic: None,
        sent_tokens: None,
        sent_dropped: None,
    };
    let pending = engine.prepare(Trigger::Manual, &input).unwrap();
    engine.finish(pending, None, &counter, 0).unwrap();
    assert_eq!(
        engine.should_compress(Trigger::Preflight, 1_000_000, 0),
        Decision::Skip(SkipReason::Deferred)
    );
    // Far more history than the 8,192-token window holds: the reading of
    // this request would fit only because older turns are left out.
    let mut c = conversation(history(&s, 40, 120, false), s).with_engine(engine);
    let mut run = Runner::new(&c);
    let e = run.handle(&mut c, submit("and now?", 1));
    assert_eq!(compress_of(&e), Some(Trigger::Preflight), "{e:?}");
    assert!(request_of(&e).is_none(), "nothing is sent before the compression");
}
