//! Specification of the conversation state machine, as behaviour.

use super::*;
use crate::domain::{Fingerprint, MessageKind, PromptId, PromptMode, Role, SessionId};
use crate::tokens::{Encoding, TiktokenCounter};

/// A session on gpt-4o for the specifications.
pub(super) fn session() -> Session {
    Session {
        id: SessionId::new(),
        title: "t".into(),
        workspace: "/w".into(),
        model: "gpt-4o".into(),
        provider: crate::domain::ProviderKind::OpenAi,
        current_prompt_id: None,
        parent_id: None,
        created_at: 0,
        updated_at: 0,
    }
}

/// Version 1 of `session`'s prompt, holding `text` with the cache boundary
/// at `boundary_offset`.
pub(super) fn prompt(session: &Session, text: &str, boundary_offset: Option<usize>) -> SystemPrompt {
    SystemPrompt {
        id: PromptId::new(),
        session_id: session.id,
        version: 1,
        text: text.into(),
        layers: Vec::new(),
        boundary_offset,
        sha256: String::new(),
        fingerprint: Fingerprint {
            provider: crate::domain::ProviderKind::OpenAi,
            model: "gpt-4o".into(),
            mode: PromptMode::Full,
            tool_set_hash: String::new(),
            template_version: 1,
        },
        created_at: 0,
    }
}

fn conversation() -> Conversation {
    let session = session();
    let prompt = prompt(&session, "You are helpful.\n\nvolatile", Some(18));
    Conversation::new(
        session,
        prompt,
        Vec::new(),
        Arc::new(TiktokenCounter::new(Encoding::O200kBase, true)),
        1024,
    )
}

fn delta(text: &str, now_ms: i64) -> Event {
    Event::Stream {
        event: StreamEvent::TextDelta { text: text.into() },
        now_ms,
    }
}

#[test]
fn user_submit_saves_the_message_before_sending_the_request() {
    let mut c = conversation();
    let effects = c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 1,
    });
    assert!(matches!(&effects[0], Effect::SaveMessage(m) if m.role == Role::User && m.content == "hi"));
    assert_eq!(effects[1], Effect::Phase(Phase::Preparing));
    assert!(
        matches!(&effects[2], Effect::SaveMessage(m) if m.role == Role::Assistant && m.status == MessageStatus::Streaming)
    );
    let Some(Effect::SendRequest(req)) = effects.iter().find(|e| matches!(e, Effect::SendRequest(_))) else {
        panic!("{effects:?}")
    };
    assert_eq!(req.system.text, "You are helpful.\n\nvolatile");
    assert_eq!(req.system.boundary_offset, Some(18));
    assert_eq!(req.messages.len(), 1);
    assert!(c.is_streaming());
}

#[test]
fn a_second_submit_while_streaming_is_refused() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "a".into(),
        now_ms: 1,
    });
    assert_eq!(
        c.handle(Event::Submit {
            text: "b".into(),
            now_ms: 2
        }),
        vec![Effect::Busy]
    );
}

#[test]
fn streamed_text_is_shown_flushed_and_finalised_with_usage() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    let e = c.handle(delta("Hel", 10));
    assert_eq!(
        e,
        vec![Effect::Phase(Phase::Streaming), Effect::ShowDelta("Hel".into())],
        "the first text ends the wait for the model"
    );
    let e = c.handle(delta("lo", 10 + FLUSH_INTERVAL_MS));
    assert!(
        matches!(&e[1], Effect::UpdateMessage { content, status: MessageStatus::Streaming, .. } if content == "Hello")
    );
    let usage = ProviderUsage {
        prompt_tokens: Some(30),
        completion_tokens: Some(2),
        cache_read_tokens: Some(20),
        ..ProviderUsage::default()
    };
    c.handle(Event::Stream {
        event: StreamEvent::Usage(usage),
        now_ms: 400,
    });
    let e = c.handle(Event::Stream {
        event: StreamEvent::Done {
            finish_reason: Some(crate::domain::FinishReason::Stop),
        },
        now_ms: 500,
    });
    assert!(
        matches!(&e[0], Effect::UpdateMessage { content, status: MessageStatus::Complete, .. } if content == "Hello")
    );
    let Effect::RecordUsage(row) = &e[1] else {
        panic!("{e:?}")
    };
    assert_eq!(row.prompt_tokens, Some(30));
    assert_eq!(row.cache_read_tokens, Some(20));
    assert!(row.estimated_prompt_tokens > 0);
    assert_eq!(row.ttft_ms, Some(10));
    assert_eq!(row.duration_ms, Some(500));
    assert!(!c.is_streaming());
    assert_eq!(c.messages().len(), 2);
    assert_eq!(c.calibration().observations(), 1);
}

#[test]
fn no_usage_from_the_provider_still_records_our_estimate() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    c.handle(delta("ok", 1));
    let e = c.handle(Event::Stream {
        event: StreamEvent::Done { finish_reason: None },
        now_ms: 2,
    });
    let Effect::RecordUsage(row) = &e[1] else {
        panic!("{e:?}")
    };
    assert_eq!(row.prompt_tokens, None);
    assert!(row.estimated_prompt_tokens > 0);
}

#[test]
fn cancel_keeps_the_partial_reply_marked_interrupted() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    c.handle(delta("partial", 1));
    let e = c.handle(Event::Cancel { now_ms: 2 });
    assert!(
        matches!(&e[0], Effect::UpdateMessage { content, status: MessageStatus::Interrupted, .. } if content == "partial")
    );
    assert_eq!(c.messages()[1].status, MessageStatus::Interrupted);
    assert_eq!(
        c.messages()[1].interruption,
        Some(crate::domain::Interruption::Cancelled)
    );
}

#[test]
fn a_stream_the_server_cut_is_told_from_a_cancel_and_from_a_failure() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    c.handle(delta("half a", 1));
    c.handle(Event::StreamEnded { now_ms: 2 });
    assert_eq!(c.messages()[1].status, MessageStatus::Interrupted);
    assert_eq!(
        c.messages()[1].interruption,
        Some(crate::domain::Interruption::CutOff)
    );
    c.handle(Event::Submit {
        text: "again".into(),
        now_ms: 3,
    });
    c.handle(delta("some", 4));
    c.handle(Event::Failed {
        kind: FailureKind::Other,
        message: "HTTP 500 mid-stream".into(),
        now_ms: 5,
    });
    let last = c.messages().last().unwrap();
    assert_eq!(last.interruption, Some(crate::domain::Interruption::Failed));
}

#[test]
fn failure_before_any_text_marks_the_reply_as_error_and_keeps_the_user_message() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    let e = c.handle(Event::Failed {
        kind: FailureKind::Other,
        message: "no network".into(),
        now_ms: 1,
    });
    assert!(matches!(
        &e[0],
        Effect::UpdateMessage {
            status: MessageStatus::Error,
            ..
        }
    ));
    assert!(e.contains(&Effect::ShowError(TurnNotice::Provider("no network".into()))));
    assert_eq!(c.messages()[0].content, "hi");
    // The failed, empty reply is not sent again.
    assert_eq!(c.prepare().unwrap().request.messages.len(), 1);
}

#[test]
fn tool_call_deltas_that_repeat_id_and_name_assemble_one_call() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    for part in ["{\"a\"", ":1}"] {
        c.handle(Event::Stream {
            event: StreamEvent::ToolCallDelta {
                index: 0,
                id: Some("call_1".into()),
                name: Some("f".into()),
                arguments: part.into(),
            },
            now_ms: 1,
        });
    }
    c.handle(Event::Stream {
        event: StreamEvent::Done {
            finish_reason: Some(crate::domain::FinishReason::ToolCalls),
        },
        now_ms: 2,
    });
    let calls = &c.messages()[1].tool_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (
            calls[0].id.as_str(),
            calls[0].name.as_str(),
            calls[0].arguments.as_str()
        ),
        ("call_1", "f", "{\"a\":1}")
    );
}

#[test]
fn calibration_smooths_the_ratio_and_ignores_noise() {
    let mut cal = Calibration::default();
    cal.observe(100, 110);
    assert!((cal.ratio() - 1.1).abs() < 1e-9);
    cal.observe(100, 120);
    assert!((cal.ratio() - (0.3 * 1.2 + 0.7 * 1.1)).abs() < 1e-9);
    cal.observe(100, 10_000);
    assert_eq!(cal.observations(), 2);
    assert_eq!(Calibration::default().apply(1000), 1000);
}

#[test]
fn a_tick_flushes_text_that_waited_long_enough() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    c.handle(delta("slow", 1));
    assert!(
        c.handle(Event::Tick {
            now_ms: FLUSH_INTERVAL_MS - 1
        })
        .is_empty()
    );
    let e = c.handle(Event::Tick {
        now_ms: FLUSH_INTERVAL_MS,
    });
    assert!(
        matches!(&e[..], [Effect::UpdateMessage { content, status: MessageStatus::Streaming, .. }] if content == "slow")
    );
    assert!(
        c.handle(Event::Tick {
            now_ms: 10 * FLUSH_INTERVAL_MS
        })
        .is_empty(),
        "nothing new to flush"
    );
}

#[test]
fn a_reply_cut_by_the_output_limit_is_complete_and_says_so() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "write a lot".into(),
        now_ms: 0,
    });
    c.handle(delta("Once upon", 5));
    let e = c.handle(Event::Stream {
        event: StreamEvent::Done {
            finish_reason: Some(crate::domain::FinishReason::Length),
        },
        now_ms: 10,
    });
    assert!(matches!(
        &e[0],
        Effect::UpdateMessage {
            status: MessageStatus::Complete,
            ..
        }
    ));
    assert!(
        e.contains(&Effect::ShowError(TurnNotice::OutputLimit { max_tokens: 1024 })),
        "{e:?}"
    );
    // A normal stop says nothing.
    c.handle(Event::Submit {
        text: "short".into(),
        now_ms: 20,
    });
    let e = c.handle(Event::Stream {
        event: StreamEvent::Done {
            finish_reason: Some(crate::domain::FinishReason::Stop),
        },
        now_ms: 30,
    });
    assert!(!e.iter().any(|x| matches!(x, Effect::ShowError(_))));
}

#[test]
fn a_reply_stopped_for_length_before_max_tokens_says_the_server_s_window_filled() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "write a lot".into(),
        now_ms: 0,
    });
    c.handle(delta("Once upon", 5));
    // A server serving 1,500 tokens under a configured window: the reply
    // stopped at 900 of its 1,024 output tokens.
    c.handle(Event::Stream {
        event: StreamEvent::Usage(crate::domain::ProviderUsage {
            prompt_tokens: Some(600),
            completion_tokens: Some(900),
            ..Default::default()
        }),
        now_ms: 8,
    });
    let e = c.handle(Event::Stream {
        event: StreamEvent::Done {
            finish_reason: Some(crate::domain::FinishReason::Length),
        },
        now_ms: 10,
    });
    assert!(
        e.contains(&Effect::ShowError(TurnNotice::WindowFull {
            prompt_tokens: 600,
            completion_tokens: 900,
        })),
        "{e:?}"
    );
}

#[test]
fn parts_ride_after_the_user_message_as_synthetic_user_messages() {
    let mut c = conversation();
    c.attach("<system-reminder>\nclean\n</system-reminder>".into(), Some(1));
    let effects = c.handle(Event::Submit {
        text: "status?".into(),
        now_ms: 1,
    });
    assert!(matches!(&effects[1], Effect::SaveMessage(m)
        if m.kind == MessageKind::Synthetic && m.ephemeral_ttl == Some(1) && m.role == Role::User));
    let Some(Effect::SendRequest(req)) = effects.iter().find(|e| matches!(e, Effect::SendRequest(_))) else {
        panic!("{effects:?}")
    };
    assert_eq!(req.messages.len(), 1);
    assert_eq!(
        req.messages[0].content,
        "status?\n\n<system-reminder>\nclean\n</system-reminder>"
    );
}

#[test]
fn the_providers_progress_moves_the_phase_and_is_not_reply_text() {
    let mut c = conversation();
    let e = c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    assert!(e.contains(&Effect::Phase(Phase::Connecting)));
    let e = c.handle(Event::Stream {
        event: StreamEvent::Retrying {
            attempt: 1,
            max: 3,
            reason: "the server is overloaded (HTTP 529)".into(),
            wait_ms: 500,
        },
        now_ms: 1,
    });
    assert_eq!(
        e,
        vec![Effect::Phase(Phase::Retrying {
            attempt: 1,
            max: 3,
            reason: "the server is overloaded (HTTP 529)".into()
        })]
    );
    let e = c.handle(Event::Stream {
        event: StreamEvent::Connected,
        now_ms: 2,
    });
    assert_eq!(e, vec![Effect::Phase(Phase::WaitingForFirstToken)]);
    let e = c.handle(Event::Stream {
        event: StreamEvent::Prefill {
            done: 512,
            total: 5_600,
        },
        now_ms: 3,
    });
    assert_eq!(
        e,
        vec![Effect::Phase(Phase::ReadingPrompt {
            done: 512,
            total: 5_600
        })]
    );
    assert!(
        !c.has_output(),
        "progress is not output: an overflow could still retry"
    );
    let e = c.handle(delta("hello", 3));
    assert_eq!(e[0], Effect::Phase(Phase::Streaming));
}

#[test]
fn the_same_words_after_a_turn_that_got_no_reply_retry_the_stored_message() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    c.handle(Event::Failed {
        kind: FailureKind::Other,
        message: "no network".into(),
        now_ms: 1,
    });
    let first = c.messages()[0].id;
    let e = c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 2,
    });
    assert!(
        !e.iter()
            .any(|e| matches!(e, Effect::SaveMessage(m) if m.role == Role::User)),
        "no copy is stored: {e:?}"
    );
    assert!(e.contains(&Effect::UpdateMessage {
        id: first,
        content: "hi".into(),
        tool_calls: Vec::new(),
        status: MessageStatus::Complete,
    }));
    let users: Vec<_> = c.messages().iter().filter(|m| m.role == Role::User).collect();
    assert_eq!(users.len(), 1);
    let Some(Effect::SendRequest(req)) = e.iter().find(|e| matches!(e, Effect::SendRequest(_))) else {
        panic!("{e:?}")
    };
    assert_eq!(req.messages.len(), 1, "sent once: {:?}", req.messages);

    // Other words are a new message.
    c.handle(Event::Failed {
        kind: FailureKind::Other,
        message: "no network".into(),
        now_ms: 3,
    });
    let e = c.handle(Event::Submit {
        text: "hello?".into(),
        now_ms: 4,
    });
    assert!(
        e.iter()
            .any(|e| matches!(e, Effect::SaveMessage(m) if m.content == "hello?"))
    );
}

#[test]
fn the_reply_is_counted_when_the_turn_ends() {
    let mut c = conversation();
    c.handle(Event::Submit {
        text: "hi".into(),
        now_ms: 0,
    });
    c.handle(delta("hello there, friend", 10));
    let effects = c.handle(Event::Stream {
        event: StreamEvent::Done {
            finish_reason: Some(crate::domain::FinishReason::Stop),
        },
        now_ms: 500,
    });
    let reply = c.messages().last().unwrap();
    assert_eq!(reply.role, Role::Assistant);
    let Some(Effect::StoreTokenCounts(counts)) =
        effects.iter().find(|e| matches!(e, Effect::StoreTokenCounts(_)))
    else {
        panic!("the reply was not counted: {effects:?}")
    };
    assert!(
        counts.iter().any(|(id, n)| *id == reply.id && n.tokens > 0),
        "{counts:?}"
    );
    let finished = effects
        .iter()
        .position(|e| matches!(e, Effect::TurnFinished { .. }));
    let stored = effects
        .iter()
        .position(|e| matches!(e, Effect::StoreTokenCounts(_)));
    assert!(stored < finished, "stored before the turn ends: {effects:?}");
}
