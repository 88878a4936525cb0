//! The turn's transitions: submit, preflight, send, stream, overflow retry,
//! after-response compression, cancel, and the one `TurnFinished` that ends
//! every turn. [`Active`] is the state of the turn in progress.

use super::reply::Reply;
use super::round::Round;
use super::{Compacted, Conversation, Effect, FailureKind, Phase, TurnNotice};
use crate::compress::{Decision, Trigger};
use crate::domain::{
    FinishReason, Message, MessageId, MessageKind, MessageStatus, ProviderUsage, Role, StreamEvent,
};
use crate::pipeline::Prepared;

/// A compression in flight.
#[derive(Clone, Copy, Debug)]
struct Compressing {
    trigger: Trigger,
}

/// How the turn's last request ended, for `TurnFinished`.
#[derive(Clone, Copy, Debug)]
struct Ended {
    message_id: MessageId,
    status: MessageStatus,
    usage: Option<ProviderUsage>,
    estimate: u64,
}

/// The turn in progress.
#[derive(Debug)]
pub(super) struct Active {
    /// The reply of the request in flight.
    reply: Option<Reply>,
    /// The compression in flight.
    compressing: Option<Compressing>,
    /// The current request already had its overflow retry.
    pub(super) overflow_retried: bool,
    /// The conversation was fitted to a smaller window after the overflow
    /// (see `Conversation::resize`): the request is tried again even when
    /// compressing changed nothing, since it is now planned smaller.
    pub(super) resized: bool,
    /// The overflow error that started the compression in flight: the
    /// turn ends with it when the compression changes nothing.
    overflow_error: Option<String>,
    /// The last finished request.
    ended: Option<Ended>,
    /// The tool round in progress.
    pub(super) round: Option<Round>,
    /// Tool rounds finished in this turn.
    pub(super) rounds: u32,
}

impl Active {
    fn new() -> Self {
        Self {
            reply: None,
            compressing: None,
            overflow_retried: false,
            resized: false,
            overflow_error: None,
            ended: None,
            round: None,
            rounds: 0,
        }
    }

    pub(super) fn has_output(&self) -> bool {
        self.reply.as_ref().is_some_and(Reply::has_output)
    }

    /// Records the stored `seq` of the reply in flight.
    pub(super) fn saved(&mut self, id: MessageId, seq: i64) {
        if let Some(reply) = self.reply.as_mut().filter(|r| r.message_id == id) {
            reply.seq = seq;
        }
    }

    /// The reply that is streaming now (none while compressing).
    fn streaming(&mut self) -> Option<&mut Reply> {
        if self.compressing.is_some() {
            return None;
        }
        self.reply.as_mut()
    }
}

impl Conversation {
    pub(super) fn submit(&mut self, text: String, now_ms: i64) -> Vec<Effect> {
        if self.active.is_some() {
            return vec![Effect::Busy];
        }
        let mut effects = Vec::new();
        match self.retried(&text) {
            // The stored message is the turn's again (said as an update, so
            // a client shows it once).
            Some(m) => effects.push(Effect::UpdateMessage {
                id: m.id,
                content: m.content.clone(),
                tool_calls: Vec::new(),
                status: MessageStatus::Complete,
            }),
            None => {
                let user = Message::new(self.session.id, Role::User, text, now_ms);
                self.messages.push(user.clone());
                effects.push(Effect::SaveMessage(user));
            }
        }
        for (text, ttl) in std::mem::take(&mut self.parts) {
            let mut part = Message::new(self.session.id, Role::User, text, now_ms);
            part.kind = MessageKind::Synthetic;
            part.ephemeral_ttl = ttl;
            self.messages.push(part.clone());
            effects.push(Effect::SaveMessage(part));
        }
        self.active = Some(Active::new());
        effects.push(Effect::Phase(Phase::Preparing));
        effects.extend(self.request(true, now_ms));
        effects
    }

    /// The last user message when `text` repeats it and it got no reply:
    /// its turn failed before anything came back (the request was refused
    /// before it was sent, or only an empty failed reply is stored after
    /// it). Sending the same words again retries that message instead of
    /// storing a copy.
    fn retried(&self, text: &str) -> Option<&Message> {
        let failed_empty = |m: &Message| {
            m.role == Role::Assistant
                && m.status == MessageStatus::Error
                && m.content.is_empty()
                && m.tool_calls.is_empty()
        };
        if !self.parts.is_empty() {
            return None;
        }
        self.messages.iter().rev().find(|m| !failed_empty(m)).filter(|m| {
            m.role == Role::User
                && m.kind == MessageKind::Normal
                && m.status == MessageStatus::Complete
                && !m.excluded
                && m.archived_by.is_none()
                && m.content == text
        })
    }

    /// Starts the turn's next model request: preflight (when `preflight`),
    /// then the request itself.
    pub(super) fn request(&mut self, preflight: bool, now_ms: i64) -> Vec<Effect> {
        let prepared = match self.prepare() {
            Ok(p) => p,
            // The user's words are kept; nothing is sent. Compressing cannot
            // help: the fixed part or the must-keep messages do not fit.
            Err(e) => return self.fail_request(TurnNotice::Prepare(e), now_ms),
        };
        if preflight && self.wants_preflight_compression(&prepared, now_ms) {
            return self.start_compression(Trigger::Preflight);
        }
        self.send(prepared, now_ms)
    }

    /// Whether to compress before sending `prepared`: the engine's rules on
    /// its pre-limit estimate (threshold, deferral, strikes, lockout,
    /// cooldown; no deferral when the pipeline leaves whole turns out),
    /// and something outside the protected head and tail to compress.
    fn wants_preflight_compression(&mut self, prepared: &Prepared, now_ms: i64) -> bool {
        let leaves_turns_out = prepared.prelimit_tokens > prepared.prepared_tokens;
        self.engine
            .should_compress_preflight(prepared.prelimit_tokens, leaves_turns_out, now_ms)
            == Decision::Compress
            && self.worth_compressing(prepared)
    }

    /// Whether compressing the history of `prepared` would save enough to
    /// be worth asking (the engine's rule, on the pre-limit counts): at
    /// least 10 % of the request, outside the protected start and end.
    pub fn worth_compressing(&self, prepared: &Prepared) -> bool {
        let counts = &prepared.prelimit_counts;
        let history: u64 = counts.iter().map(|&t| u64::from(t)).sum();
        let fixed = prepared.prelimit_tokens.saturating_sub(history);
        let dropped: Vec<bool> = prepared
            .report
            .iter()
            .map(|r| r.action == crate::pipeline::Action::Dropped)
            .collect();
        self.engine
            .worth_compressing(&self.messages, counts, &dropped, fixed)
    }

    fn start_compression(&mut self, trigger: Trigger) -> Vec<Effect> {
        if let Some(active) = self.active.as_mut() {
            active.compressing = Some(Compressing { trigger });
        }
        vec![
            Effect::Phase(Phase::Compressing(trigger)),
            Effect::Compress { trigger },
        ]
    }

    /// Sends `prepared`: a new reply slot, or the same one again for the
    /// overflow retry.
    fn send(&mut self, prepared: Prepared, now_ms: i64) -> Vec<Effect> {
        let estimate = prepared.prepared_tokens;
        let tools_sha256 = self.tools.as_ref().map(|t| t.offered().sha256());
        let (snapshot, check) = self.check_cache(&prepared, now_ms);
        let cache = Some((Box::new(snapshot), check));
        let compression_helps = self.worth_compressing(&prepared);
        self.sent = Some(super::SentRequest {
            compression_helps,
            report: prepared.report,
            prelimit_counts: prepared.prelimit_counts,
            prepared_tokens: prepared.prepared_tokens,
            prelimit_tokens: prepared.prelimit_tokens,
        });
        let Some(active) = self.active.as_mut() else {
            return Vec::new();
        };
        let mut effects = Vec::new();
        match active.reply.as_mut() {
            Some(reply) => {
                let seq = reply.seq;
                *reply = Reply::new(reply.message_id, now_ms, estimate);
                reply.seq = seq;
                reply.tools_sha256 = tools_sha256;
                reply.cache = cache;
            }
            None => {
                let mut assistant = Message::new(self.session.id, Role::Assistant, "", now_ms);
                assistant.status = MessageStatus::Streaming;
                let mut reply = Reply::new(assistant.id, now_ms, estimate);
                reply.tools_sha256 = tools_sha256;
                reply.cache = cache;
                active.reply = Some(reply);
                effects.push(Effect::SaveMessage(assistant));
            }
        }
        effects.push(Effect::Phase(Phase::Connecting));
        effects.push(Effect::SendRequest(prepared.request));
        effects
    }

    pub(super) fn compressed(&mut self, compacted: Option<Compacted>, now_ms: i64) -> Vec<Effect> {
        let Some(Compressing { trigger }) = self.active.as_mut().and_then(|a| a.compressing.take()) else {
            return Vec::new();
        };
        let changed = compacted.is_some();
        let more = match compacted {
            Some(Compacted { plan, prompt }) => {
                let more = trigger == Trigger::Preflight && self.engine.continue_preflight(&plan);
                self.replace_history(prompt, plan.messages);
                more
            }
            None => false,
        };
        // Another pass only when it would find something worth it: a pass
        // that finds nothing is a strike.
        let more = more && self.prepare().is_ok_and(|next| self.worth_compressing(&next));
        let mut effects = vec![Effect::SaveEngineState(self.engine.state())];
        effects.extend(match trigger {
            Trigger::Preflight if more => self.start_compression(Trigger::Preflight),
            Trigger::Preflight | Trigger::Manual => self.request(false, now_ms),
            Trigger::Overflow => {
                let error = self.active.as_mut().and_then(|a| a.overflow_error.take());
                let resized = self
                    .active
                    .as_mut()
                    .is_some_and(|a| std::mem::take(&mut a.resized));
                match (changed || resized, error) {
                    (true, _) => self.request(false, now_ms),
                    (false, error) => {
                        self.fail_reply(error.map_or(TurnNotice::TooLong, TurnNotice::Provider), now_ms)
                    }
                }
            }
            Trigger::AfterResponse => self.end_turn(),
        });
        effects
    }

    pub(super) fn stream(&mut self, event: StreamEvent, now_ms: i64) -> Vec<Effect> {
        let max_tokens = self.max_tokens;
        let Some(reply) = self.active.as_mut().and_then(Active::streaming) else {
            return Vec::new();
        };
        let first = reply.first_output_ms.is_none();
        let mut effects = Vec::new();
        match event {
            // Progress of the request, before any of the reply.
            StreamEvent::Connected => return vec![Effect::Phase(Phase::WaitingForFirstToken)],
            StreamEvent::Prefill { done, total } => {
                return vec![Effect::Phase(Phase::ReadingPrompt { done, total })];
            }
            StreamEvent::Retrying {
                attempt, max, reason, ..
            } => {
                return vec![Effect::Phase(Phase::Retrying { attempt, max, reason })];
            }
            StreamEvent::TextDelta { text } => {
                reply.push_text(&text, now_ms);
                effects.push(Effect::ShowDelta(text));
                if reply.should_flush(now_ms) {
                    effects.push(reply.flush(now_ms));
                }
            }
            StreamEvent::ReasoningDelta { .. } => reply.mark_output(now_ms),
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => reply.push_tool_call(index, id, name, &arguments, now_ms),
            StreamEvent::Usage(usage) => {
                reply.usage = Some(usage);
                return effects;
            }
            StreamEvent::Done { finish_reason } => {
                // A reply cut by the output limit is complete as far as the
                // provider is concerned, but the user must know it stopped.
                // Stopped short of `max_tokens`: the server's window filled
                // first (a window smaller than strata believes).
                let cut = (finish_reason == Some(FinishReason::Length)).then(|| {
                    let read = reply
                        .usage
                        .as_ref()
                        .map(|u| (u.prompt_tokens, u.completion_tokens));
                    match read {
                        Some((Some(prompt_tokens), Some(completion_tokens)))
                            if completion_tokens < max_tokens =>
                        {
                            TurnNotice::WindowFull {
                                prompt_tokens,
                                completion_tokens,
                            }
                        }
                        _ => TurnNotice::OutputLimit { max_tokens },
                    }
                });
                let mut done = self.finish_reply(MessageStatus::Complete, cut, now_ms);
                let calls = self.unanswered_calls();
                if calls.is_empty() {
                    done.extend(self.after_response(now_ms));
                } else {
                    let _ = self.observe_usage();
                    done.extend(self.start_round(calls, now_ms));
                }
                return done;
            }
        }
        if first {
            effects.insert(0, Effect::Phase(Phase::Streaming));
        }
        effects
    }

    pub(super) fn failed(&mut self, kind: FailureKind, message: String, now_ms: i64) -> Vec<Effect> {
        let Some(active) = self.active.as_mut() else {
            return Vec::new();
        };
        if active.streaming().is_none() {
            return Vec::new();
        }
        if kind == FailureKind::ToolsUnsupported && !active.has_output() && self.tools.is_some() {
            self.disable_tools(message.clone());
            let mut effects = vec![Effect::ShowError(TurnNotice::ToolsOff { reason: message })];
            effects.extend(self.request(false, now_ms));
            return effects;
        }
        if kind == FailureKind::Overflow && !active.has_output() && !active.overflow_retried {
            active.overflow_retried = true;
            if self.engine.should_compress(Trigger::Overflow, 0, now_ms) == Decision::Compress {
                if let Some(active) = self.active.as_mut() {
                    active.overflow_error = Some(message);
                }
                return self.start_compression(Trigger::Overflow);
            }
        }
        self.fail_reply(TurnNotice::Provider(message), now_ms)
    }

    pub(super) fn stream_ended(&mut self, now_ms: i64) -> Vec<Effect> {
        let Some(reply) = self.active.as_mut().and_then(Active::streaming) else {
            return Vec::new();
        };
        if reply.has_output() {
            let mut effects = self.finish_reply(MessageStatus::Interrupted, Some(TurnNotice::CutOff), now_ms);
            effects.extend(self.interrupt_calls(now_ms));
            effects.extend(self.end_turn());
            effects
        } else {
            self.fail_reply(TurnNotice::EmptyReply, now_ms)
        }
    }

    pub(super) fn tick(&mut self, now_ms: i64) -> Vec<Effect> {
        match self.active.as_mut().and_then(Active::streaming) {
            Some(reply) if reply.should_flush(now_ms) => vec![reply.flush(now_ms)],
            _ => Vec::new(),
        }
    }

    /// Cancel: a compression in flight is abandoned (the runtime drops it;
    /// nothing was stored), a streaming reply keeps its text, marked
    /// interrupted; the user's message stays either way.
    pub(super) fn cancel(&mut self, now_ms: i64) -> Vec<Effect> {
        let Some(active) = self.active.as_mut() else {
            return Vec::new();
        };
        active.compressing = None;
        active.overflow_error = None;
        let mut effects = if active.reply.is_some() {
            let mut effects = self.finish_reply(MessageStatus::Interrupted, None, now_ms);
            effects.extend(self.interrupt_calls(now_ms));
            effects
        } else {
            let in_round = active.round.is_some();
            let effects = self.cancel_round(now_ms);
            // A turn stopped in a tool round did not finish: it ends
            // interrupted (a reply already complete stays complete).
            if let Some(ended) = self
                .active
                .as_mut()
                .and_then(|a| a.ended.as_mut())
                .filter(|_| in_round)
            {
                ended.status = MessageStatus::Interrupted;
            }
            effects
        };
        if self.active.as_ref().is_some_and(|a| a.ended.is_none()) {
            // Cancelled before any request was sent.
            effects.push(Effect::SaveEngineState(self.engine.state()));
            effects.push(Effect::Phase(Phase::Done));
            effects.push(Effect::TurnFinished {
                message_id: None,
                status: MessageStatus::Interrupted,
                usage: None,
                estimated_prompt_tokens: 0,
            });
            self.active = None;
            return effects;
        }
        effects.extend(self.end_turn());
        effects
    }

    /// After a finished request: the provider's reading goes to the engine,
    /// and a reading at or over the threshold compresses before the turn
    /// ends.
    fn after_response(&mut self, now_ms: i64) -> Vec<Effect> {
        if let Some(prompt_tokens) = self.observe_usage() {
            // The next request as the pipeline would prepare it decides
            // whether compressing is worth it (prepared only when the
            // reading asks for a compression); one that cannot be prepared
            // is the next request's error, not this turn's.
            if self
                .engine
                .should_compress(Trigger::AfterResponse, prompt_tokens, now_ms)
                == Decision::Compress
                && let Ok(next) = self.prepare()
                && self.worth_compressing(&next)
            {
                return self.start_compression(Trigger::AfterResponse);
            }
        }
        self.end_turn()
    }

    /// The request failed before it could be sent (the pipeline refused
    /// it): the turn ends with the error.
    fn fail_request(&mut self, notice: TurnNotice, now_ms: i64) -> Vec<Effect> {
        if self.active.as_ref().is_some_and(|a| a.reply.is_some()) {
            return self.fail_reply(notice, now_ms);
        }
        let mut effects = vec![Effect::ShowError(notice)];
        effects.push(Effect::SaveEngineState(self.engine.state()));
        effects.push(Effect::Phase(Phase::Done));
        effects.push(Effect::TurnFinished {
            message_id: None,
            status: MessageStatus::Error,
            usage: None,
            estimated_prompt_tokens: 0,
        });
        self.active = None;
        effects
    }

    /// The request in flight failed: its reply is finalised (interrupted
    /// when it had output, else error) and the turn ends.
    fn fail_reply(&mut self, notice: TurnNotice, now_ms: i64) -> Vec<Effect> {
        let status = if self.active.as_ref().is_some_and(Active::has_output) {
            MessageStatus::Interrupted
        } else {
            MessageStatus::Error
        };
        let mut effects = self.finish_reply(status, Some(notice), now_ms);
        effects.extend(self.interrupt_calls(now_ms));
        effects.extend(self.end_turn());
        effects
    }

    /// The tool calls of the reply just stored that have no result yet.
    fn unanswered_calls(&self) -> Vec<crate::domain::ToolCall> {
        match self.messages.last() {
            Some(m) if m.role == Role::Assistant => m.tool_calls.clone(),
            _ => Vec::new(),
        }
    }

    /// A reply that asked for tool calls ended before they could run (cut
    /// off, failed, cancelled): each call is answered `interrupted`, so
    /// every call keeps a result.
    fn interrupt_calls(&mut self, now_ms: i64) -> Vec<Effect> {
        let calls = self.unanswered_calls();
        if calls.is_empty() {
            return Vec::new();
        }
        self.answer_all(
            calls,
            crate::domain::ToolStatus::Interrupted,
            "Interrupted: the reply ended before this call could run.",
            now_ms,
        )
    }

    /// The provider's reading of a response inside the turn goes to the
    /// engine (its last reading); compression waits for the next request's
    /// preflight or the end of the turn.
    /// Returns the provider's `prompt_tokens`, when it reported them.
    fn observe_usage(&mut self) -> Option<u64> {
        let (prompt_tokens, estimate) = self
            .active
            .as_ref()
            .and_then(|a| a.ended)
            .and_then(|e| Some((e.usage?.prompt_tokens?, e.estimate)))?;
        self.engine.on_usage(prompt_tokens, estimate);
        Some(prompt_tokens)
    }

    /// Finalises the reply in flight: stored with `status`, added to the
    /// history, its usage recorded.
    fn finish_reply(&mut self, status: MessageStatus, error: Option<TurnNotice>, now_ms: i64) -> Vec<Effect> {
        let Some(reply) = self.active.as_mut().and_then(|a| a.reply.take()) else {
            return Vec::new();
        };
        let mut assistant = Message::new(
            self.session.id,
            Role::Assistant,
            reply.text.clone(),
            reply.started_at_ms,
        );
        assistant.id = reply.message_id;
        assistant.seq = reply.seq;
        assistant.tool_calls = reply.tool_calls();
        assistant.status = status;
        assistant.interruption = (status == MessageStatus::Interrupted).then_some(match error {
            None => crate::domain::Interruption::Cancelled,
            Some(TurnNotice::CutOff) => crate::domain::Interruption::CutOff,
            Some(_) => crate::domain::Interruption::Failed,
        });
        let mut effects = vec![Effect::UpdateMessage {
            id: reply.message_id,
            content: reply.text.clone(),
            tool_calls: assistant.tool_calls.clone(),
            status,
        }];
        self.messages.push(assistant);
        if let Some(actual) = reply.usage.and_then(|u| u.prompt_tokens) {
            self.calibration.observe(reply.estimate, actual);
        }
        if reply.usage.is_some() || status == MessageStatus::Complete {
            effects.push(Effect::RecordUsage(reply.usage_row(&self.session, now_ms)));
            if let Some((snapshot, _)) = reply.cache {
                self.answered((*snapshot).clone());
                effects.push(Effect::SaveCachePrefix(snapshot));
            }
        }
        if let Some(notice) = error {
            effects.push(Effect::ShowError(notice));
        }
        if let Some(active) = self.active.as_mut() {
            active.ended = Some(Ended {
                message_id: reply.message_id,
                status,
                usage: reply.usage,
                estimate: reply.estimate,
            });
        }
        effects
    }

    /// Ends the turn after its last request.
    pub(super) fn end_turn(&mut self) -> Vec<Effect> {
        let Some(active) = self.active.take() else {
            return Vec::new();
        };
        let ended = active.ended;
        // The turn's reply is counted now, so the stored history's tokens
        // (session lists, headers) include it at once. A counter whose
        // counts are looked up ahead of need (a server's tokenizer) would
        // only estimate it here: it is counted with the next turn instead.
        if !self.counter.recounts_stored() {
            self.history_tokens();
        }
        vec![
            Effect::SaveEngineState(self.engine.state()),
            Effect::Phase(Phase::Done),
            Effect::TurnFinished {
                message_id: ended.map(|e| e.message_id),
                status: ended.map_or(MessageStatus::Interrupted, |e| e.status),
                usage: ended.and_then(|e| e.usage),
                estimated_prompt_tokens: ended.map_or(0, |e| e.estimate),
            },
        ]
    }
}
