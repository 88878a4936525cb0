//! Running chat turns: the conversation state machine's effects executed
//! against the store and a provider.
//!
//! The user's message is stored before the request goes out; the reply is
//! stored as `streaming` and updated as text arrives, so a crash or kill
//! leaves it in the database (marked interrupted at the next start).

use super::{CompressOutcome, Runtime, RuntimeError};
use crate::config::ModelChoice;
use crate::conversation::{Conversation, Effect, Event, FailureKind};
use crate::domain::{MessageStatus, PromptMode, Session, SessionId, Usage};
use crate::prompt::EnvFacts;
use crate::provider::{EventStream, Provider, ProviderError};
use crate::tokens::TokenCounter;
use futures::StreamExt;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

/// What a turn shows while it runs.
#[derive(Debug)]
pub enum ChatOutput<'a> {
    /// Reply text as it arrives.
    Delta(&'a str),
    /// The usage row recorded for the request.
    Usage(&'a Usage),
    /// Something went wrong (one sentence).
    Error(&'a str),
    /// Work the user should know about (automatic compression starting).
    Notice(&'a str),
    /// An automatic compression ran (or found nothing to do).
    Compressed(&'a CompressOutcome),
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnOutcome {
    /// The session.
    pub session_id: SessionId,
    /// Complete, interrupted or error.
    pub status: MessageStatus,
    /// The error that ended it, if any.
    pub error: Option<ProviderError>,
    /// The last problem shown to the user (one sentence), if any.
    pub message: Option<String>,
}

/// What woke the turn loop.
enum Wake {
    /// The provider stream produced an item or ended.
    Stream(Option<Result<crate::domain::StreamEvent, ProviderError>>),
    /// The flush interval passed.
    Tick,
    /// The caller cancelled.
    Cancel,
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl Runtime {
    /// A conversation over the session's active messages with its frozen
    /// prompt (rebuilt as a new version only when `choice` or `mode` changed
    /// the fingerprint), counted with `counter`, calibrated from its usage rows.
    ///
    /// # Errors
    /// [`RuntimeError`] when the store cannot be read or written.
    pub fn open_conversation(
        &mut self,
        session: &Session,
        choice: &ModelChoice,
        mode: PromptMode,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Conversation, RuntimeError> {
        let now = jiff::Zoned::now();
        let prompt = self.frozen_prompt(session, choice, mode, &now, EnvFacts::from_process())?;
        let session = self.store.session(session.id)?.unwrap_or_else(|| session.clone());
        let messages = super::session::settled(self.store.messages(session.id, false)?);
        let calibration = self.calibration(session.id)?;
        Ok(
            Conversation::new(session, prompt, messages, counter, choice.max_tokens)
                .with_window(choice.context_window)
                .with_max_messages(self.config.history.max_messages)
                .with_calibration(calibration),
        )
    }

    /// Runs one turn: compresses first when the request would reach the
    /// threshold (preflight), stores the user's message, streams the reply
    /// from `provider` into the store and `out`, records usage, compresses
    /// after the response when the provider's `prompt_tokens` reached the
    /// threshold, and after an overflow error compresses and sends once
    /// more (DESIGN §7). `cancel` resolving
    /// (e.g. Ctrl-C) stops the stream and keeps the partial reply, marked
    /// interrupted.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store fails; provider failures are
    /// not errors here but end the turn with status `error` or `interrupted`.
    #[tracing::instrument(name = "turn", skip_all, fields(session = %conversation.session().id))]
    pub async fn chat_turn(
        &mut self,
        conversation: &mut Conversation,
        provider: &dyn Provider,
        text: String,
        cancel: impl Future<Output = ()>,
        out: &mut dyn FnMut(ChatOutput<'_>),
    ) -> Result<TurnOutcome, RuntimeError> {
        let session_id = conversation.session().id;
        let mut engine = self.turn_engine(conversation)?;
        let parts = self.turn_parts(conversation, &text);
        for notice in &parts.notices {
            out(ChatOutput::Notice(notice));
        }
        for (part, ttl) in parts.parts {
            conversation.attach(part, ttl);
        }
        let mut retried = false;
        let mut preflight_done = false;
        // The user's message is stored first (Submit saves it), so nothing
        // they typed is lost if the process dies while compressing.
        let mut pending: VecDeque<Effect> = conversation
            .handle(Event::Submit {
                text,
                now_ms: now_ms(),
            })
            .into();
        let mut stream: Option<EventStream> = None;
        let mut error: Option<ProviderError> = None;
        let mut message: Option<String> = None;
        let mut cancel = std::pin::pin!(cancel);
        loop {
            while let Some(effect) = pending.pop_front() {
                match effect {
                    Effect::SaveMessage(mut m) => self.store.append_message(&mut m)?,
                    Effect::UpdateMessage {
                        id,
                        content,
                        tool_calls,
                        status,
                    } => self.store.update_message(id, &content, &tool_calls, status)?,
                    Effect::SendRequest(request) => {
                        if !preflight_done {
                            preflight_done = true;
                            if self.preflight(conversation, &mut engine, provider, out).await? {
                                // The history changed: prepare the request again.
                                pending.extend(conversation.resend(now_ms()));
                                continue;
                            }
                        }
                        stream = Some(provider.stream(request));
                    }
                    Effect::RecordUsage(usage) => {
                        self.store.record_usage(&usage)?;
                        out(ChatOutput::Usage(&usage));
                    }
                    Effect::ShowDelta(text) => out(ChatOutput::Delta(&text)),
                    Effect::ShowError(text) => {
                        out(ChatOutput::Error(&text));
                        message = Some(text);
                    }
                    Effect::TurnFinished {
                        status,
                        usage,
                        estimated_prompt_tokens,
                        ..
                    } => {
                        tracing::info!(
                            ?status,
                            estimated_prompt_tokens,
                            prompt_tokens = usage.and_then(|u| u.prompt_tokens),
                            "turn finished"
                        );
                        if let Some(prompt_tokens) = usage.and_then(|u| u.prompt_tokens) {
                            self.after_response(
                                conversation,
                                &mut engine,
                                provider,
                                prompt_tokens,
                                estimated_prompt_tokens,
                                out,
                            )
                            .await?;
                        }
                        self.save_compression_state(conversation.session(), &engine)?;
                        // The turn's new messages get their counts stored,
                        // so listings show the session's size.
                        self.counted_messages(conversation.session(), false)?;
                        return Ok(TurnOutcome {
                            session_id,
                            status,
                            error,
                            message,
                        });
                    }
                    Effect::Busy => out(ChatOutput::Error(
                        "a reply is already streaming; wait for it or cancel it",
                    )),
                }
            }
            let Some(s) = stream.as_mut() else {
                self.save_compression_state(conversation.session(), &engine)?;
                return Ok(TurnOutcome {
                    session_id,
                    status: MessageStatus::Error,
                    error,
                    message,
                });
            };
            let tick = tokio::time::sleep(std::time::Duration::from_millis(
                u64::try_from(crate::conversation::FLUSH_INTERVAL_MS).unwrap_or(250),
            ));
            let wake = tokio::select! {
                next = s.next() => Wake::Stream(next),
                () = &mut cancel => Wake::Cancel,
                () = tick => Wake::Tick,
            };
            let now_ms = now_ms();
            pending = match wake {
                Wake::Tick => conversation.handle(Event::Tick { now_ms }),
                Wake::Stream(Some(Ok(event))) => conversation.handle(Event::Stream { event, now_ms }),
                Wake::Stream(Some(Err(e))) => {
                    stream = None;
                    if e.is_overflow() && !conversation.has_output() && !retried {
                        retried = true;
                        if self
                            .overflow_retry(conversation, &mut engine, provider, out)
                            .await?
                        {
                            pending = conversation.resend(now_ms).into();
                            continue;
                        }
                    }
                    let kind = if e.is_overflow() {
                        FailureKind::Overflow
                    } else {
                        FailureKind::Other
                    };
                    let message = e.to_string();
                    error = Some(e);
                    conversation.handle(Event::Failed {
                        kind,
                        message,
                        now_ms,
                    })
                }
                Wake::Stream(None) => {
                    stream = None;
                    conversation.handle(Event::StreamEnded { now_ms })
                }
                Wake::Cancel => {
                    stream = None;
                    conversation.handle(Event::Cancel { now_ms })
                }
            }
            .into();
        }
    }
}
