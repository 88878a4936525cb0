//! Layer 1 (pure): the conversation state machine, `handle(Event) -> Vec<Effect>`.
//!
//! It owns one session's active messages and the turn in progress, and says
//! what must happen — persist this message, send this request, record this
//! usage, show this text — without doing any of it. The runtime executes the
//! effects and feeds results back as events. Time is passed in with every
//! event (unix milliseconds); nothing here reads a clock or performs I/O.
//!
//! Invariants:
//! - the user's message is persisted before the request is sent;
//! - the assistant reply is persisted as `streaming` when the request
//!   starts, updated as text arrives (at most every [`FLUSH_INTERVAL_MS`] or
//!   [`FLUSH_BYTES`]), and finalised as `complete`, `interrupted` or `error`;
//! - every finished request yields one usage record carrying the provider's
//!   numbers next to strata's estimate of the same request.

mod calibration;
mod turn;

pub use calibration::Calibration;

use crate::domain::{
    ChatRequest, Message, MessageId, MessageKind, MessageStatus, ProviderUsage, RequestMessage,
    RequestSystem, Role, Session, StreamEvent, SystemPrompt, ToolCall, Usage,
};
use crate::pipeline::{self, CutMemo, PrepareError, PrepareInput, Prepared};
use crate::tokens::{self, TokenCache, TokenCounter};
use std::sync::Arc;
use turn::Turn;

/// Flush streamed text to the store at least this often while it arrives.
pub const FLUSH_INTERVAL_MS: i64 = 250;
/// ... or whenever this many new bytes arrived.
pub const FLUSH_BYTES: usize = 2_048;

/// Why a request failed, as the core needs to know it (the adapter's error
/// type stays in the adapter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The request was too long for the window.
    Overflow,
    /// Anything else; the message says what.
    Other,
}

/// Input to the state machine.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The user sent a message.
    Submit {
        /// The text.
        text: String,
        /// Now, unix ms.
        now_ms: i64,
    },
    /// The provider stream produced an event.
    Stream {
        /// The event.
        event: StreamEvent,
        /// Now, unix ms.
        now_ms: i64,
    },
    /// The provider stream failed.
    Failed {
        /// Overflow or other.
        kind: FailureKind,
        /// One sentence for the user.
        message: String,
        /// Now, unix ms.
        now_ms: i64,
    },
    /// The stream ended without `Done` (connection closed).
    StreamEnded {
        /// Now, unix ms.
        now_ms: i64,
    },
    /// Time passed with no stream event: text not yet stored is flushed
    /// once [`FLUSH_INTERVAL_MS`] has passed since the last flush.
    Tick {
        /// Now, unix ms.
        now_ms: i64,
    },
    /// The user cancelled the reply in progress.
    Cancel {
        /// Now, unix ms.
        now_ms: i64,
    },
}

/// Something the runtime must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Insert a new message row (the store assigns `seq`).
    SaveMessage(Message),
    /// Update a stored message's content, tool calls and status.
    UpdateMessage {
        /// Which.
        id: MessageId,
        /// Full content so far.
        content: String,
        /// Tool calls so far.
        tool_calls: Vec<ToolCall>,
        /// New status.
        status: MessageStatus,
    },
    /// Start a provider request.
    SendRequest(ChatRequest),
    /// Store a usage row.
    RecordUsage(Usage),
    /// Show new reply text.
    ShowDelta(String),
    /// The turn ended; `status` says how.
    TurnFinished {
        /// The assistant message.
        message_id: MessageId,
        /// Complete, interrupted or error.
        status: MessageStatus,
        /// Usage, when the provider reported it.
        usage: Option<ProviderUsage>,
        /// strata's estimate of the request's input tokens.
        estimated_prompt_tokens: u64,
    },
    /// Tell the user something went wrong (one sentence).
    ShowError(String),
    /// Nothing happened because a reply is already streaming.
    Busy,
}

/// One session's conversation.
pub struct Conversation {
    session: Session,
    prompt: SystemPrompt,
    messages: Vec<Message>,
    counter: Arc<dyn TokenCounter>,
    max_tokens: u64,
    window: u64,
    turn: Option<Turn>,
    calibration: Calibration,
    cache: TokenCache,
    /// Counts of the pipeline's truncated copies, kept across turns.
    cuts: CutMemo,
    system_tokens: Option<u32>,
    parts: Vec<(String, Option<u32>)>,
    max_messages: Option<usize>,
}

/// Context window assumed until [`Conversation::with_window`] sets one.
pub const DEFAULT_WINDOW: u64 = 128_000;

impl Conversation {
    /// A conversation over `messages` (the session's active messages, oldest first).
    #[must_use]
    pub fn new(
        session: Session,
        prompt: SystemPrompt,
        messages: Vec<Message>,
        counter: Arc<dyn TokenCounter>,
        max_tokens: u64,
    ) -> Self {
        Self {
            session,
            prompt,
            messages,
            counter,
            max_tokens,
            window: DEFAULT_WINDOW,
            turn: None,
            calibration: Calibration::default(),
            cache: TokenCache::new(),
            cuts: CutMemo::new(),
            system_tokens: None,
            parts: Vec::new(),
            max_messages: None,
        }
    }

    /// The model's context window in tokens, for the per-turn pipeline.
    #[must_use]
    pub fn with_window(mut self, window: u64) -> Self {
        self.window = window;
        self
    }

    /// Caps the messages sent per request (`history.max_messages`).
    #[must_use]
    pub fn with_max_messages(mut self, max_messages: Option<usize>) -> Self {
        self.max_messages = max_messages;
        self
    }

    /// Starts from a calibration learned from earlier usage rows.
    #[must_use]
    pub fn with_calibration(mut self, calibration: Calibration) -> Self {
        self.calibration = calibration;
        self
    }

    /// The active messages, oldest first.
    #[must_use]
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The session.
    #[must_use]
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The estimate calibration so far.
    #[must_use]
    pub fn calibration(&self) -> Calibration {
        self.calibration
    }

    /// Whether a reply is streaming.
    #[must_use]
    pub fn is_streaming(&self) -> bool {
        self.turn.is_some()
    }

    /// Whether the streaming reply has produced any output yet (text,
    /// reasoning or a tool call); `false` when idle.
    #[must_use]
    pub fn has_output(&self) -> bool {
        self.turn.as_ref().is_some_and(Turn::has_output)
    }

    /// The frozen system prompt in use.
    #[must_use]
    pub fn prompt(&self) -> &SystemPrompt {
        &self.prompt
    }

    /// The context window the pipeline fits requests into, tokens.
    #[must_use]
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The output reserve (`max_tokens`) of each request, tokens.
    #[must_use]
    pub fn max_tokens(&self) -> u64 {
        self.max_tokens
    }

    /// Adds a part to the next submitted message (an attachment, or a
    /// per-turn reminder with `ephemeral_ttl = Some(1)`; see
    /// [`crate::pipeline::enrich`]). Each part is stored as a synthetic user
    /// message right after the user's message.
    pub fn attach(&mut self, text: String, ephemeral_ttl: Option<u32>) {
        self.parts.push((text, ephemeral_ttl));
    }

    /// Replaces the history and prompt after a compaction (or its undo)
    /// changed the stored session. `messages` are the active messages
    /// without a reply that is still streaming. A turn in flight keeps its
    /// reply slot; [`Conversation::resend`] sends it again.
    pub fn replace_history(&mut self, prompt: SystemPrompt, messages: Vec<Message>) {
        if prompt.id != self.prompt.id {
            self.system_tokens = None;
        }
        self.prompt = prompt;
        self.messages = messages;
        // Archived messages are never sent again: forget their cut copies.
        let live: std::collections::HashSet<MessageId> = self.messages.iter().map(|m| m.id).collect();
        self.cuts.retain(|id| live.contains(&id));
    }

    /// Sends the in-flight turn's request again over the current history
    /// (the overflow retry after a compaction). Without a turn in flight,
    /// nothing; when the request no longer fits, the turn fails.
    pub fn resend(&mut self, now_ms: i64) -> Vec<Effect> {
        if self.turn.is_none() {
            return Vec::new();
        }
        match self.prepare() {
            Ok(prepared) => {
                if let Some(turn) = self.turn.as_mut() {
                    turn.estimate = prepared.prepared_tokens;
                }
                vec![Effect::SendRequest(prepared.request)]
            }
            Err(e) => self.fail(FailureKind::Other, &e.to_string(), now_ms),
        }
    }

    /// Applies one event and returns what must happen, in order.
    pub fn handle(&mut self, event: Event) -> Vec<Effect> {
        match event {
            Event::Submit { text, now_ms } => self.submit(text, now_ms),
            Event::Stream { event, now_ms } => self.stream(event, now_ms),
            Event::Failed {
                kind,
                message,
                now_ms,
            } => self.fail(kind, &message, now_ms),
            Event::StreamEnded { now_ms } => {
                if self.turn.as_ref().is_some_and(Turn::has_output) {
                    self.finish(
                        MessageStatus::Interrupted,
                        now_ms,
                        Some("the reply was cut off before it ended".into()),
                    )
                } else if self.turn.is_some() {
                    self.fail(
                        FailureKind::Other,
                        "the provider ended the reply without sending anything; try again",
                        now_ms,
                    )
                } else {
                    Vec::new()
                }
            }
            Event::Tick { now_ms } => match self.turn.as_mut() {
                Some(turn) if turn.should_flush(now_ms) => vec![turn.flush(now_ms)],
                _ => Vec::new(),
            },
            Event::Cancel { now_ms } => {
                if self.turn.is_some() {
                    self.finish(MessageStatus::Interrupted, now_ms, None)
                } else {
                    Vec::new()
                }
            }
        }
    }

    /// The request for the current active messages (system prompt + history).
    #[must_use]
    pub fn request(&self) -> ChatRequest {
        let messages = self
            .messages
            .iter()
            .filter(|m| m.status != MessageStatus::Error || !m.content.is_empty())
            .map(|m| RequestMessage {
                role: m.role,
                content: m.content.clone(),
                tool_calls: m.tool_calls.clone(),
                tool_call_id: m.tool_call_id.clone(),
            })
            .collect();
        ChatRequest {
            model: self.session.model.clone(),
            system: RequestSystem {
                text: self.prompt.text.clone(),
                boundary_offset: self.prompt.boundary_offset,
            },
            messages,
            max_tokens: self.max_tokens,
            tools: Vec::new(),
            temperature: None,
        }
    }

    /// strata's estimate of a request's input tokens (system prompt, every
    /// message with its chat overhead, reply priming).
    #[must_use]
    pub fn estimate(&self, request: &ChatRequest) -> u64 {
        let counter = self.counter.as_ref();
        let system = counter.count(&request.system.text) as u64;
        let history: u64 = self
            .messages
            .iter()
            .map(|m| match &m.tokens {
                Some(t) if t.tokenizer == counter.id() => u64::from(t.tokens),
                _ => u64::from(tokens::message_tokens(counter, m)),
            })
            .sum();
        system + history + u64::from(tokens::request_overhead(!request.system.text.is_empty()))
    }

    /// The request for the active messages as the per-turn pipeline
    /// prepares it (reduce, prune, limit, repair, validate; DESIGN §6), with
    /// its report and estimated input tokens.
    ///
    /// # Errors
    /// [`PrepareError`] when the request cannot fit the window.
    pub fn prepare(&mut self) -> Result<Prepared, PrepareError> {
        let counter = self.counter.as_ref();
        let counts = self.cache.count_history(counter, &self.messages).tokens;
        let system_tokens = *self
            .system_tokens
            .get_or_insert_with(|| u32::try_from(counter.count(&self.prompt.text)).unwrap_or(u32::MAX));
        let system = RequestSystem {
            text: self.prompt.text.clone(),
            boundary_offset: self.prompt.boundary_offset,
        };
        let input = PrepareInput {
            system: &system,
            system_tokens,
            messages: &self.messages,
            counts: &counts,
            counter,
            tools: &[],
            tool_tokens: 0,
            window: self.window,
            reserved_output: self.max_tokens,
            exact: counter.exact(),
            max_messages: self.max_messages,
            single_system: false,
            model: &self.session.model,
            max_tokens: self.max_tokens,
            temperature: None,
        };
        pipeline::prepare_with(&input, &mut self.cuts)
    }

    fn submit(&mut self, text: String, now_ms: i64) -> Vec<Effect> {
        if self.turn.is_some() {
            return vec![Effect::Busy];
        }
        let user = Message::new(self.session.id, Role::User, text, now_ms);
        self.messages.push(user.clone());
        let mut saves = vec![Effect::SaveMessage(user)];
        for (text, ttl) in std::mem::take(&mut self.parts) {
            let mut part = Message::new(self.session.id, Role::User, text, now_ms);
            part.kind = MessageKind::Synthetic;
            part.ephemeral_ttl = ttl;
            self.messages.push(part.clone());
            saves.push(Effect::SaveMessage(part));
        }
        let prepared = match self.prepare() {
            Ok(p) => p,
            // The user's words are kept; nothing is sent.
            Err(e) => {
                saves.push(Effect::ShowError(e.to_string()));
                return saves;
            }
        };
        let request = prepared.request;
        let estimate = prepared.prepared_tokens;
        let mut assistant = Message::new(self.session.id, Role::Assistant, "", now_ms);
        assistant.status = MessageStatus::Streaming;
        self.turn = Some(Turn::new(assistant.id, now_ms, estimate));
        saves.push(Effect::SaveMessage(assistant));
        saves.push(Effect::SendRequest(request));
        saves
    }

    fn stream(&mut self, event: StreamEvent, now_ms: i64) -> Vec<Effect> {
        let Some(turn) = self.turn.as_mut() else {
            return Vec::new();
        };
        match event {
            StreamEvent::TextDelta { text } => {
                turn.push_text(&text, now_ms);
                let mut effects = vec![Effect::ShowDelta(text)];
                if turn.should_flush(now_ms) {
                    effects.push(turn.flush(now_ms));
                }
                effects
            }
            StreamEvent::ReasoningDelta { .. } => {
                turn.mark_output(now_ms);
                Vec::new()
            }
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                turn.push_tool_call(index, id, name, &arguments, now_ms);
                Vec::new()
            }
            StreamEvent::Usage(usage) => {
                turn.usage = Some(usage);
                Vec::new()
            }
            StreamEvent::Done { finish_reason } => {
                // A reply cut by the output limit is complete as far as the
                // provider is concerned, but the user must know it stopped.
                let cut = matches!(finish_reason.as_deref(), Some("length" | "max_tokens")).then(|| {
                    format!(
                        "the reply stopped at the output limit ({} tokens); ask to continue, or raise [model] max_tokens",
                        self.max_tokens
                    )
                });
                self.finish(MessageStatus::Complete, now_ms, cut)
            }
        }
    }

    fn fail(&mut self, _kind: FailureKind, message: &str, now_ms: i64) -> Vec<Effect> {
        let status = if self.turn.as_ref().is_some_and(Turn::has_output) {
            MessageStatus::Interrupted
        } else {
            MessageStatus::Error
        };
        self.finish(status, now_ms, Some(message.to_owned()))
    }

    fn finish(&mut self, status: MessageStatus, now_ms: i64, error: Option<String>) -> Vec<Effect> {
        let Some(turn) = self.turn.take() else {
            return Vec::new();
        };
        let mut assistant = Message::new(
            self.session.id,
            Role::Assistant,
            turn.text.clone(),
            turn.started_at_ms,
        );
        assistant.id = turn.message_id;
        assistant.tool_calls = turn.tool_calls();
        assistant.status = status;
        let mut effects = vec![Effect::UpdateMessage {
            id: turn.message_id,
            content: turn.text.clone(),
            tool_calls: assistant.tool_calls.clone(),
            status,
        }];
        self.messages.push(assistant);
        if let Some(actual) = turn.usage.and_then(|u| u.prompt_tokens) {
            self.calibration.observe(turn.estimate, actual);
        }
        if turn.usage.is_some() || status == MessageStatus::Complete {
            effects.push(Effect::RecordUsage(turn.usage_row(&self.session, now_ms)));
        }
        if let Some(message) = error {
            effects.push(Effect::ShowError(message));
        }
        effects.push(Effect::TurnFinished {
            message_id: turn.message_id,
            status,
            usage: turn.usage,
            estimated_prompt_tokens: turn.estimate,
        });
        effects
    }
}

#[cfg(test)]
mod tests;
