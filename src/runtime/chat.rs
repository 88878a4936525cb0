//! Running chat turns: the conversation state machine's effects executed
//! against the store, a provider and the compression engine, and their
//! results fed back as events. Every decision (preflight, overflow retry,
//! after-response compression, strikes) is the core's; this loop only
//! executes.
//!
//! The user's message is stored before anything else; the reply is stored
//! as `streaming` and updated as text arrives, so a crash or kill leaves it
//! in the database (marked interrupted at the next start).

use super::service::{ServiceEvent, ToolEvent};
use super::tool_run::{self, Finished, ProgressLine, Running, TurnTools};
use super::{Runtime, RuntimeError};
use crate::compress::CompressionPlan;
use crate::config::ModelChoice;
use crate::conversation::{Conversation, Effect, Event, FailureKind};
use crate::domain::{Compaction, MessageStatus, Session, SessionId, Usage};
use crate::provider::{EventStream, Provider, ProviderError};
use crate::tokens::TokenCounter;
use futures::StreamExt;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

/// What hosts a turn: where its events go, and what the host keeps of it
/// that is not news for the client.
pub trait TurnHost {
    /// An event for the client, in order.
    fn emit(&mut self, event: ServiceEvent);
    /// A request went to the provider; `conversation` holds what the
    /// pipeline said of it ([`Conversation::sent`]) and the history it was
    /// made from.
    fn sent(&mut self, conversation: &Conversation);
    /// A compaction was stored: its row and the plan applied (the
    /// originals it archived, the messages it inserted).
    fn compacted(&mut self, compaction: &Compaction, plan: &CompressionPlan);
    /// The lease token this turn writes under ([`crate::store::Lease`]),
    /// when the session is leased: once another holder has the session,
    /// the turn stops and writes nothing more.
    fn lease_token(&self) -> Option<&str> {
        None
    }
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnOutcome {
    /// The session.
    pub session_id: SessionId,
    /// Complete, interrupted or error.
    pub status: MessageStatus,
    /// The provider error that ended it, if any.
    pub error: Option<ProviderError>,
    /// The last problem shown to the user (one sentence), if any.
    pub message: Option<String>,
    /// The window the provider's overflow error stated, when smaller than
    /// the one assumed: the conversation was fitted to it; the caller
    /// remembers it ([`Runtime::note_overflow_window`]) and says so once.
    pub stated_window: Option<u64>,
}

/// What woke the turn loop.
enum Wake {
    /// The provider stream produced an item or ended.
    Stream(Option<Result<crate::domain::StreamEvent, ProviderError>>),
    /// The flush interval passed.
    Tick,
    /// A tool call finished.
    Tool(Box<Finished>),
    /// A running call printed something.
    Progress(ProgressLine),
    /// The user answered an approval.
    Approval(super::ApprovalAnswer),
    /// The caller cancelled.
    Cancel,
    /// Another strata took the session over: the turn stops as if
    /// cancelled, and writes nothing more.
    Lost,
}

/// How far an overflow error's stated request size may be from strata's
/// estimate of the same request, either way, before its numbers are
/// disbelieved.
const PLAUSIBLE_FACTOR: u64 = 10;

/// Whether an overflow error's numbers can be believed: the request size it
/// states (`counted`) is within [`PLAUSIBLE_FACTOR`] of strata's
/// `estimate`, either way. An error that states no size, or a request with
/// no estimate, is believed.
fn plausible(counted: Option<u64>, estimate: Option<u64>) -> bool {
    match (counted, estimate) {
        (Some(counted), Some(estimate)) if estimate > 0 => {
            counted <= estimate.saturating_mul(PLAUSIBLE_FACTOR)
                && counted.saturating_mul(PLAUSIBLE_FACTOR) >= estimate
        }
        _ => true,
    }
}

/// strata's estimate of the request sent last, tools included.
fn sent_estimate(conversation: &Conversation) -> Option<u64> {
    let tools: u64 = conversation.tool_items().iter().map(|t| t.tokens).sum();
    conversation.sent().map(|s| s.prepared_tokens + tools)
}

/// After an overflow, the window to plan the retry with, in the units of
/// strata's estimate: the window the error states (or the one assumed),
/// scaled by how much more the provider counted than strata estimated for
/// the same request (llama.cpp's `n_prompt_tokens`), less 3 % — so that a
/// message cut to fit does fit the provider's tokenizer. `None` when that
/// is not smaller than the conversation's window.
fn planning_window(e: &ProviderError, conversation: &Conversation) -> Option<u64> {
    let window = conversation.window();
    let base = e.stated_window().unwrap_or(window).min(window);
    let estimate = sent_estimate(conversation);
    let planned = match (e.stated_prompt_tokens(), estimate) {
        (Some(counted), Some(estimate)) if counted > estimate && estimate > 0 => {
            let scaled = u128::from(base) * u128::from(estimate) * 97 / (u128::from(counted) * 100);
            u64::try_from(scaled).unwrap_or(base)
        }
        _ => base,
    };
    (planned < window).then_some(planned)
}

impl Runtime {
    /// A conversation over rows the caller already holds: `messages` (the
    /// session's messages; archived ones and a reply still streaming are
    /// left out) and its `usage` rows (for the calibration), with `prompt`
    /// as the prompt in force. Reads only the compression engine's state.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the engine's state cannot be read.
    pub fn conversation_from(
        &self,
        session: Session,
        prompt: crate::domain::SystemPrompt,
        messages: Vec<crate::domain::Message>,
        usage: &[Usage],
        choice: &ModelChoice,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Conversation, RuntimeError> {
        let active = super::session::settled(messages.into_iter().filter(|m| m.archived_by.is_none()));
        let calibration = super::context::calibration_of(usage);
        let engine = self.compression_engine(&session, choice, super::SummarizerArg::Config)?;
        // The embedded model saving no KV state starts each process with
        // nothing cached: the last request's blocks promise nothing.
        let saves_nothing = choice.provider == crate::domain::ProviderKind::Local
            && super::providers::kv_state_cap_bytes(&self.config) == 0;
        let last_prefix = if saves_nothing {
            None
        } else {
            self.store.cache_prefix(session.id).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the session's last cache prefix could not be read");
                None
            })
        };
        let rule = self.cache_rule(choice);
        Ok(
            Conversation::new(session, prompt, active, counter, choice.max_tokens)
                .with_cache_rule(rule, last_prefix)
                .with_window(choice.context_window)
                .with_max_messages(self.config.history.max_messages)
                .with_calibration(calibration)
                .with_engine(Box::new(engine)),
        )
    }

    /// Says that another strata took the session over mid-turn; the text
    /// is the turn's failure.
    fn lost_mid_turn(&self, host: &mut dyn TurnHost) -> String {
        let text = self.client().session_lost_mid_turn();
        host.emit(ServiceEvent::Error(text.clone()));
        text
    }

    /// Whether the session's lease has gone from `token` to another
    /// holder (or was given up by one that took it): never without a token.
    fn lease_lost(&self, session: SessionId, token: Option<&str>) -> Result<bool, RuntimeError> {
        let Some(token) = token else {
            return Ok(false);
        };
        Ok(self.store.lease(session)?.is_none_or(|l| l.holder != token))
    }

    /// Fits `conversation` to `window` (an overflow error stated it): the
    /// output reserve follows the window unless `[model] max_tokens` is
    /// set, and a compression engine for the new window replaces the old.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the engine's state cannot be read.
    pub fn fit_to_window(&self, conversation: &mut Conversation, window: u64) -> Result<(), RuntimeError> {
        let max_tokens = self.config.model.max_tokens;
        let mut choice = super::auto_compress::conversation_choice(conversation);
        let max_tokens =
            max_tokens.unwrap_or_else(|| crate::tokens::default_reserved_output(choice.provider, window));
        choice.context_window = window;
        choice.max_tokens = max_tokens;
        let engine =
            self.compression_engine(conversation.session(), &choice, super::SummarizerArg::Config)?;
        conversation.resize(window, max_tokens, Box::new(engine));
        Ok(())
    }

    /// Runs one turn of `conversation` with `provider`: the user's message
    /// (with its `@path` attachments, as far as they are confined or its
    /// consent allows them, and the reminder) goes in, the core's
    /// effects are executed until it finishes the turn (DESIGN §2 "The
    /// turn", §7 "Triggers"). `cancel` resolving (e.g. Ctrl-C) stops a
    /// compression or the stream; a partial reply is kept, marked
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
        message: super::UserMessage,
        cancel: impl Future<Output = ()>,
        mut tools: Option<TurnTools<'_>>,
        host: &mut dyn TurnHost,
    ) -> Result<TurnOutcome, RuntimeError> {
        let session_id = conversation.session().id;
        let super::UserMessage { text, consent } = message;
        let parts = self.turn_parts(conversation, &text, &consent);
        for notice in parts.notices {
            host.emit(ServiceEvent::Notice(notice));
        }
        for (part, ttl) in parts.parts {
            conversation.attach(part, ttl);
        }
        // A llama.cpp server counts what the first request holds.
        self.precount(conversation, &[&text]).await;
        let mut pending: VecDeque<Effect> = conversation
            .handle(Event::Submit {
                text,
                now_ms: super::now_ms(),
            })
            .into();
        let mut stream: Option<EventStream> = None;
        let mut compress = None;
        let mut error: Option<ProviderError> = None;
        let mut message: Option<String> = None;
        let mut stated_window = None;
        let mut cancel = std::pin::pin!(cancel);
        let mut running = Running::new();
        let mut asking: Option<String> = None;
        let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel::<ProgressLine>();
        // Another strata took the session over: from then on only the
        // rows this turn already stored are closed, nothing else written.
        let mut lost = false;
        let mut unsaved = std::collections::HashSet::new();
        // Set when a write finds the lease gone: the next wake is `Lost`.
        let mut lost_now = false;
        loop {
            while let Some(effect) = pending.pop_front() {
                if lost
                    && !matches!(
                        effect,
                        Effect::UpdateMessage { .. }
                            | Effect::ShowDelta(_)
                            | Effect::Phase(_)
                            | Effect::TurnFinished { .. }
                    )
                {
                    if let Effect::SaveMessage(m) = effect {
                        unsaved.insert(m.id);
                    }
                    continue;
                }
                // Checked before every write (the stream's flushes too).
                if !lost
                    && matches!(effect, Effect::SaveMessage(_) | Effect::UpdateMessage { .. })
                    && self.lease_lost(session_id, host.lease_token())?
                {
                    if let Effect::SaveMessage(m) = effect {
                        unsaved.insert(m.id);
                    }
                    lost_now = true;
                    pending.clear();
                    break;
                }
                match effect {
                    Effect::SaveMessage(mut m) => {
                        self.store.append_message(&mut m)?;
                        conversation.saved(m.id, m.seq);
                        if m.status != MessageStatus::Streaming {
                            host.emit(ServiceEvent::Message(Box::new(m)));
                        }
                    }
                    Effect::UpdateMessage {
                        id,
                        content,
                        tool_calls,
                        status,
                    } => {
                        if unsaved.contains(&id) {
                            continue;
                        }
                        self.store.update_message(id, &content, &tool_calls, status)?;
                        if status != MessageStatus::Streaming
                            && let Some(m) = conversation.messages().iter().rev().find(|m| m.id == id)
                        {
                            if m.interruption.is_some() {
                                self.store.set_interruption(id, m.interruption)?;
                            }
                            host.emit(ServiceEvent::Message(Box::new(m.clone())));
                        }
                    }
                    Effect::StoreTokenCounts(counts) => {
                        self.store.set_message_tokens(&counts)?;
                        host.emit(ServiceEvent::Tokens(counts));
                    }
                    Effect::SendRequest(request) => {
                        error = None;
                        stream = Some(provider.stream(request));
                        host.sent(conversation);
                    }
                    Effect::Compress { trigger } => compress = Some(trigger),
                    Effect::SaveEngineState(state) => self.save_engine_state(session_id, &state)?,
                    Effect::RecordUsage(usage) => {
                        self.store.record_usage(&usage)?;
                        host.emit(ServiceEvent::Usage(usage));
                    }
                    Effect::SaveCachePrefix(snapshot) => {
                        // Bookkeeping: a failure costs the next request's
                        // comparison, never the turn.
                        if let Err(e) = self.store.save_cache_prefix(session_id, &snapshot) {
                            tracing::warn!(error = %e, "the request's cache prefix could not be remembered");
                        }
                    }
                    Effect::ShowDelta(text) => host.emit(ServiceEvent::Delta {
                        text,
                        now_ms: super::now_ms(),
                    }),
                    Effect::Phase(phase) => host.emit(ServiceEvent::Phase(phase)),
                    // Tools switched off with the request sent again is
                    // news, not a failure of the turn.
                    Effect::ShowError(notice @ crate::conversation::TurnNotice::ToolsOff { .. }) => {
                        host.emit(ServiceEvent::Notice(self.client().turn_notice(&notice)));
                    }
                    Effect::ShowError(notice) => {
                        let text = self.client().turn_notice(&notice);
                        host.emit(ServiceEvent::Error(text.clone()));
                        message = Some(text);
                    }
                    Effect::TurnFinished {
                        message_id,
                        status,
                        usage,
                        estimated_prompt_tokens,
                    } => {
                        // A failed reply keeps what it failed with, shown
                        // with it in the transcript.
                        if let (Some(id), Some(text)) = (message_id, message.as_deref())
                            && status != MessageStatus::Complete
                            && !unsaved.contains(&id)
                        {
                            self.store.set_message_error(id, Some(text))?;
                            if let Some(m) = conversation.messages().iter().rev().find(|m| m.id == id) {
                                let mut shown = m.clone();
                                shown.error = Some(text.to_owned());
                                host.emit(ServiceEvent::Message(Box::new(shown)));
                            }
                        }
                        tracing::info!(
                            ?status,
                            estimated_prompt_tokens,
                            prompt_tokens = usage.and_then(|u| u.prompt_tokens),
                            "turn finished"
                        );
                        // And the turn's messages, for the figures after it.
                        self.precount(conversation, &[]).await;
                        return Ok(TurnOutcome {
                            session_id,
                            status,
                            error,
                            message,
                            stated_window,
                        });
                    }
                    Effect::Busy => host.emit(ServiceEvent::Error(
                        "a reply is already streaming; wait for it or cancel it".to_owned(),
                    )),
                    Effect::RunTool { call, arguments, .. } => match tools.as_ref() {
                        Some(t) => {
                            host.emit(ServiceEvent::Tool(ToolEvent::Started {
                                summary: crate::tooling::schema::summary(&call.name, &arguments),
                                call: call.clone(),
                                now_ms: super::now_ms(),
                            }));
                            running.push(tool_run::start(
                                Arc::clone(&t.env),
                                t.mcp.clone(),
                                call,
                                arguments,
                                progress_tx.clone(),
                            ));
                        }
                        None => pending.extend(conversation.handle(Event::ToolFinished {
                            tool_call_id: call.id,
                            run: tool_run::unavailable(),
                            now_ms: super::now_ms(),
                        })),
                    },
                    Effect::AskApproval {
                        call,
                        arguments,
                        access,
                    } => {
                        // A call that would fail is not offered: its error
                        // is its answer.
                        let env = tools.as_ref().map(|t| t.env.as_ref());
                        if let Some(error) = super::approval_request::would_fail(env, &call, &arguments) {
                            pending.extend(conversation.handle(Event::Approved {
                                tool_call_id: call.id,
                                approval: crate::conversation::Approval::WouldFail { error },
                                now_ms: super::now_ms(),
                            }));
                        } else if let Some(t) = tools.as_ref().filter(|t| t.approvals.is_some()) {
                            let request = super::approval_request::approval_request(
                                Some(&t.env),
                                t.mcp.as_deref(),
                                &call,
                                &arguments,
                                access,
                            );
                            host.emit(ServiceEvent::Tool(ToolEvent::ApprovalNeeded(Box::new(request))));
                            asking = Some(call.id);
                        } else {
                            let approval = crate::conversation::Approval::Deny {
                                reason: Some("no one can answer approvals in this run".to_owned()),
                            };
                            pending.extend(conversation.handle(Event::Approved {
                                tool_call_id: call.id,
                                approval,
                                now_ms: super::now_ms(),
                            }));
                        }
                    }
                    Effect::ToolAnswered { tool_call_id, status } => {
                        host.emit(ServiceEvent::Tool(ToolEvent::Answered { tool_call_id, status }));
                    }
                    Effect::WriteSpill { path, text } => {
                        if let Err(e) = crate::tools::write_spill(std::path::Path::new(&path), &text) {
                            tracing::warn!(%path, error = %e, "spill file not written");
                            host.emit(ServiceEvent::Error(format!(
                                "cannot write the tool output to {path} ({e}); the model sees the cut result only"
                            )));
                        }
                    }
                }
            }
            if let Some(trigger) = compress.take() {
                let run = self.compress_in_turn(conversation, provider, trigger, host);
                let result = tokio::select! {
                    r = run => Some(r),
                    () = &mut cancel => None,
                };
                let now_ms = super::now_ms();
                pending = match result {
                    Some(compacted) => conversation.handle(Event::Compressed {
                        compacted: compacted?,
                        now_ms,
                    }),
                    None => conversation.handle(Event::Cancel { now_ms }),
                }
                .into();
                continue;
            }
            if stream.is_none() && running.is_empty() && asking.is_none() {
                // The core always ends a turn with `TurnFinished`; a turn
                // that asked for nothing more is over.
                return Ok(TurnOutcome {
                    session_id,
                    status: MessageStatus::Error,
                    error,
                    message,
                    stated_window,
                });
            }
            let tick = tokio::time::sleep(std::time::Duration::from_millis(
                u64::try_from(crate::conversation::FLUSH_INTERVAL_MS).unwrap_or(250),
            ));
            let approvals = tools.as_mut().and_then(|t| t.approvals.as_deref_mut());
            let wake = if std::mem::take(&mut lost_now) {
                Wake::Lost
            } else {
                tokio::select! {
                    next = next_event(&mut stream), if stream.is_some() => Wake::Stream(next),
                    Some(done) = running.next(), if !running.is_empty() => Wake::Tool(Box::new(done)),
                    Some(line) = progress_rx.recv() => Wake::Progress(line),
                    Some(answer) = recv(approvals), if asking.is_some() => Wake::Approval(answer),
                    () = &mut cancel => Wake::Cancel,
                    () = tick => Wake::Tick,
                }
            };
            // A wait (a held stream, a tool) notices a take-over too.
            let wake = match wake {
                Wake::Tick if !lost && self.lease_lost(session_id, host.lease_token())? => Wake::Lost,
                wake => wake,
            };
            let now_ms = super::now_ms();
            pending = match wake {
                Wake::Tick => conversation.handle(Event::Tick { now_ms }),
                Wake::Stream(Some(Ok(event))) => conversation.handle(Event::Stream { event, now_ms }),
                Wake::Stream(Some(Err(e))) => {
                    stream = None;
                    // Numbers that contradict strata's estimate tenfold are
                    // not believed: an overflow without numbers (compress
                    // and retry once), never a new window.
                    let believed = plausible(e.stated_prompt_tokens(), sent_estimate(conversation));
                    if !believed {
                        tracing::warn!(
                            stated = ?e.stated_prompt_tokens(),
                            estimate = ?sent_estimate(conversation),
                            "an overflow error's request size is not plausible; its numbers are ignored"
                        );
                    }
                    let smaller = e
                        .stated_window()
                        .filter(|&w| believed && w < conversation.window());
                    if believed && let Some(planned) = planning_window(&e, conversation) {
                        self.fit_to_window(conversation, planned)?;
                    }
                    if smaller.is_some() {
                        stated_window = smaller;
                    }
                    let kind = if e.is_overflow() {
                        FailureKind::Overflow
                    } else if e.is_tools_unsupported() {
                        FailureKind::ToolsUnsupported
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
                Wake::Tool(done) => {
                    if let Some(change) = done.output.change.as_ref().filter(|_| !lost) {
                        self.store.record_change(&crate::store::StoredChange {
                            num: 0,
                            session_id,
                            tool_call_id: done.call.id.clone(),
                            path: change.path.display().to_string(),
                            before: change.before.clone(),
                            after_sha256: change.after_sha256.clone(),
                            created_at: now_ms,
                        })?;
                    }
                    host.emit(ServiceEvent::Tool(ToolEvent::Finished {
                        tool_call_id: done.call.id.clone(),
                        status: done.output.status,
                        diff: done.output.diff.clone(),
                        now_ms,
                    }));
                    conversation.handle(Event::ToolFinished {
                        tool_call_id: done.call.id.clone(),
                        run: done.run(),
                        now_ms,
                    })
                }
                Wake::Progress((tool_call_id, tail)) => {
                    host.emit(ServiceEvent::Tool(ToolEvent::Progress { tool_call_id, tail }));
                    Vec::new()
                }
                Wake::Approval(answer) => {
                    if asking.as_deref() == Some(answer.tool_call_id.as_str()) {
                        asking = None;
                    }
                    conversation.handle(Event::Approved {
                        tool_call_id: answer.tool_call_id,
                        approval: answer.approval,
                        now_ms,
                    })
                }
                Wake::Cancel | Wake::Lost => {
                    if matches!(wake, Wake::Lost) {
                        lost = true;
                        message = Some(self.lost_mid_turn(host));
                    }
                    stream = None;
                    asking = None;
                    // Dropping the tasks kills their process groups.
                    running.clear();
                    conversation.handle(Event::Cancel { now_ms })
                }
            }
            .into();
        }
    }
}

/// The next event of the stream in flight (`None` when it ended); only
/// polled while there is one.
async fn next_event(
    stream: &mut Option<EventStream>,
) -> Option<Result<crate::domain::StreamEvent, ProviderError>> {
    match stream.as_mut() {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

/// The next approval answer; pending forever without a channel.
async fn recv(
    approvals: Option<&mut tokio::sync::mpsc::UnboundedReceiver<super::ApprovalAnswer>>,
) -> Option<super::ApprovalAnswer> {
    match approvals {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::plausible;

    #[test]
    fn an_overflow_count_tenfold_off_the_estimate_is_not_believed() {
        assert!(!plausible(Some(250_000), Some(2_000)), "125 times the estimate");
        assert!(!plausible(Some(150), Some(2_000)), "a 13th of it");
        assert!(plausible(Some(20_000), Some(2_000)), "ten times is the limit");
        assert!(plausible(Some(200), Some(2_000)));
        assert!(plausible(Some(5_031), Some(4_900)));
        assert!(plausible(None, Some(2_000)), "no count: nothing to doubt");
        assert!(plausible(Some(250_000), None));
        assert!(plausible(Some(250_000), Some(0)));
    }
}
