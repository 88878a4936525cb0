//! Layer 1 (pure): the conversation state machine, `handle(Event) -> Vec<Effect>`.
//!
//! It owns one session's active messages, its compression engine (behind
//! [`CompressionEngine`]) and the turn in progress, and decides everything a
//! turn does (DESIGN §2 "The turn", §7 "Triggers"): store the user message;
//! preflight (compress before the request when the pre-limit estimate
//! reaches the threshold, up to [`MAX_PREFLIGHT_PASSES`] passes); send the
//! request; stream the reply; on an overflow error compress, then retry that
//! request exactly once; after the response compress on the provider's
//! `prompt_tokens`; strikes, lockout and cooldown (the engine's state);
//! cancellation at any point. It says what must happen — persist this
//! message, send this request, compress now, record this usage — without
//! doing any of it. The runtime executes the effects and feeds the results
//! back as events ([`Event::Compressed`] carries the new active history, so
//! nothing is re-read from the store to continue). Time is passed in with
//! every event (unix milliseconds); nothing here reads a clock or performs
//! I/O.
//!
//! Invariants:
//! - the user's message is persisted before anything else happens;
//! - the assistant reply is persisted as `streaming` when its request is
//!   sent, updated as text arrives (at most every [`FLUSH_INTERVAL_MS`] or
//!   [`FLUSH_BYTES`]), and finalised as `complete`, `interrupted` or `error`;
//! - every finished request yields one usage record carrying the provider's
//!   numbers next to strata's estimate of the same request;
//! - each model request of a turn has its own preflight and at most one
//!   overflow retry; a turn ends with exactly one [`Effect::TurnFinished`].

mod cache_book;
mod calibration;
mod flow;
mod notice;
mod reply;
mod round;
mod tool_state;

pub use calibration::Calibration;
pub use notice::TurnNotice;
pub use round::{Approval, DEFAULT_MAX_ROUNDS, MAX_CONCURRENT, ToolRun, Tools};
pub use tool_state::DisclosureSettings;

use crate::compress::{
    CompressionEngine, CompressionPlan, DefaultEngine, EngineConfig, EngineState, SummarizerChoice, Trigger,
};
use crate::domain::{
    Message, MessageId, MessageStatus, ProviderUsage, RequestSystem, Session, StreamEvent, SystemPrompt,
    TokenCount, ToolCall, Usage,
};
use crate::pipeline::{self, CutMemo, PrepareError, PrepareInput, Prepared};
use crate::tokens::{Threshold, TokenCache, TokenCounter};
use flow::Active;
use std::sync::Arc;

pub use crate::compress::MAX_PREFLIGHT_PASSES;

/// Flush streamed text to the store at least this often while it arrives.
pub const FLUSH_INTERVAL_MS: i64 = 250;
/// ... or whenever this many new bytes arrived.
pub const FLUSH_BYTES: usize = 2_048;

/// Why a request failed, as the core needs to know it (the adapter's error
/// type stays in the adapter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The request was too long for the window (HTTP 413,
    /// `context_length_exceeded`, "prompt is too long"): compress, then
    /// retry once.
    Overflow,
    /// The server refuses requests with tools (a model without tool
    /// support): tools are switched off for the session and the request
    /// goes again once without them.
    ToolsUnsupported,
    /// Anything else; the message says what.
    Other,
}

/// Where a turn is, for the status bar (DESIGN §9), from the core's own
/// decisions and the provider's progress events
/// ([`StreamEvent::Connected`], [`StreamEvent::Retrying`],
/// [`StreamEvent::Prefill`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The request is being prepared (the pipeline, the preflight check).
    Preparing,
    /// A compression runs before, inside or after the turn's request.
    Compressing(Trigger),
    /// The request was sent; the server has not answered yet.
    Connecting,
    /// The server answered and the reply stream is open; the model is
    /// reading the prompt (nothing of the reply yet).
    WaitingForFirstToken,
    /// The model is reading the prompt and says how far it got (the
    /// embedded model's prefill).
    ReadingPrompt {
        /// Prompt tokens read so far.
        done: u64,
        /// Prompt tokens in all.
        total: u64,
    },
    /// The attempt failed with a retryable error; the request goes again
    /// after a wait.
    Retrying {
        /// This retry, counting from 1.
        attempt: u32,
        /// Retries allowed in all.
        max: u32,
        /// What went wrong, one sentence.
        reason: String,
    },
    /// The reply is arriving.
    Streaming,
    /// Tool calls of the reply run.
    RunningTool {
        /// The first call still running.
        name: String,
        /// How many more run with it.
        others: usize,
    },
    /// A tool call waits for the user's approval.
    AwaitingApproval {
        /// The tool.
        name: String,
    },
    /// The session's MCP servers are starting; the first request waits
    /// for them (so the tools array does not change under the cache).
    StartingServers {
        /// How many are ready or failed.
        ready: usize,
        /// How many were started.
        total: usize,
    },
    /// The turn ended.
    Done,
}

/// What the pipeline said of the request sent last: its report and
/// figures (for showing the request in flight).
#[derive(Clone, Debug, PartialEq)]
pub struct SentRequest {
    /// What happened to each active message, in order.
    pub report: Vec<crate::pipeline::ReportEntry>,
    /// Input tokens of the request as sent.
    pub prepared_tokens: u64,
    /// Its pre-limit estimate.
    pub prelimit_tokens: u64,
    /// Each message's share of it (its cut copy for one too large to send
    /// whole), in the order of the report.
    pub prelimit_counts: Vec<u32>,
    /// Whether compressing the history would save at least 10 % of it
    /// ([`Conversation::worth_compressing`]).
    pub compression_helps: bool,
}

/// A compression the runtime ran for [`Effect::Compress`] and stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Compacted {
    /// The plan that was persisted; `plan.messages` is the new active
    /// history, in order, with `seq` as stored.
    pub plan: CompressionPlan,
    /// The system prompt version made current with it.
    pub prompt: SystemPrompt,
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
    /// The user cancelled the turn (during a compression or a reply).
    Cancel {
        /// Now, unix ms.
        now_ms: i64,
    },
    /// The [`Effect::RunTool`] for `tool_call_id` finished.
    ToolFinished {
        /// The call.
        tool_call_id: String,
        /// How it ended and what it printed.
        run: ToolRun,
        /// Now, unix ms.
        now_ms: i64,
    },
    /// The user answered the [`Effect::AskApproval`] for `tool_call_id`.
    Approved {
        /// The call.
        tool_call_id: String,
        /// The answer.
        approval: Approval,
        /// Now, unix ms.
        now_ms: i64,
    },
    /// The [`Effect::Compress`] in flight finished: `Some` when a
    /// compaction was stored (boxed: it holds the new history), `None`
    /// when it changed nothing (a no-op or an aborted summary; the runtime
    /// has shown why).
    Compressed {
        /// The stored compaction, if any.
        compacted: Option<Box<Compacted>>,
        /// Now, unix ms.
        now_ms: i64,
    },
}

/// Something the runtime must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Insert a new message row (the store assigns `seq`; report it with
    /// [`Conversation::saved`]).
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
    /// Store token counts made for messages that had none under the
    /// session's tokenizer (so listings show the session's size).
    StoreTokenCounts(Vec<(MessageId, TokenCount)>),
    /// Start a provider request.
    SendRequest(crate::domain::ChatRequest),
    /// Compress the conversation's active history with the engine
    /// ([`Conversation::engine_mut`]) and answer with [`Event::Compressed`].
    Compress {
        /// Why.
        trigger: Trigger,
    },
    /// Run a tool call and answer with [`Event::ToolFinished`]. All
    /// `RunTool` effects of one batch may run concurrently (the core
    /// emits several at once only for read-only calls).
    RunTool {
        /// The call as the model wrote it.
        call: ToolCall,
        /// Its arguments, parsed (a JSON object).
        arguments: serde_json::Value,
        /// What it does.
        access: crate::tooling::Access,
    },
    /// Ask the user whether `call` may run; answer with [`Event::Approved`].
    AskApproval {
        /// The call.
        call: ToolCall,
        /// Its arguments, parsed.
        arguments: serde_json::Value,
        /// What it does.
        access: crate::tooling::Access,
    },
    /// A call was answered without running (refused by the policy or a
    /// rule, denied by the user, or found to fail before it was asked):
    /// its block can say so before the round's results are stored.
    ToolAnswered {
        /// The call.
        tool_call_id: String,
        /// How it was answered (`denied` or `error`).
        status: crate::domain::ToolStatus,
    },
    /// Write a tool's whole output to its spill file (mode 0600) before the
    /// result that names it is stored.
    WriteSpill {
        /// `DATA/spill/<session>/<tool_call_id>.txt`.
        path: String,
        /// The whole output.
        text: String,
    },
    /// Store the compression engine's state (strikes, lockout, cooldown,
    /// last reading), so it holds across processes.
    SaveEngineState(EngineState),
    /// Store a usage row.
    RecordUsage(Usage),
    /// Remember the blocks of the request just answered: the session's next
    /// request is compared with them, in this process or the next.
    SaveCachePrefix(Box<crate::domain::PrefixSnapshot>),
    /// Show new reply text.
    ShowDelta(String),
    /// The turn moved to another phase.
    Phase(Phase),
    /// The turn ended; `status` says how.
    TurnFinished {
        /// The turn's last assistant message; `None` when the turn ended
        /// before a request was sent (cancelled while compressing, or a
        /// request that cannot be prepared).
        message_id: Option<MessageId>,
        /// Complete, interrupted or error.
        status: MessageStatus,
        /// Usage of the last request, when the provider reported it.
        usage: Option<ProviderUsage>,
        /// strata's estimate of the last request's input tokens.
        estimated_prompt_tokens: u64,
    },
    /// Tell the user something went wrong (the runtime words it).
    ShowError(TurnNotice),
    /// Nothing happened because a turn is already in progress.
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
    engine: Box<dyn CompressionEngine + Send>,
    active: Option<Active>,
    calibration: Calibration,
    cache: TokenCache,
    /// Counts of the pipeline's truncated copies, kept across turns.
    cuts: CutMemo,
    system_tokens: Option<u32>,
    parts: Vec<(String, Option<u32>)>,
    max_messages: Option<usize>,
    /// Counts made since the last [`Effect::StoreTokenCounts`].
    new_counts: Vec<(MessageId, TokenCount)>,
    /// The request sent last.
    sent: Option<SentRequest>,
    /// The tools offered; `None` when tools are off.
    tools: Option<Tools>,
    /// Why tools are off (the config, the model, or a server that
    /// refused them during the session), when they are.
    tools_off: Option<String>,
    /// Tokens of each tool of the tools array (counted once per change).
    tool_items: Option<Vec<crate::tokens::BudgetItem>>,
    /// Approvals granted until strata exits.
    grants: Vec<crate::tooling::approval::Rule>,
    /// How the request's tools are decided, when MCP tools may be deferred.
    disclosure: Option<DisclosureSettings>,
    /// The request's tools as last planned from `disclosure`.
    plan: Option<crate::tooling::deferred::Disclosure>,
    /// The prompt-cache bookkeeping.
    book: cache_book::CacheBook,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("session", &self.session.id)
            .field("messages", &self.messages.len())
            .field("in_turn", &self.active.is_some())
            .finish_non_exhaustive()
    }
}

/// Context window assumed until [`Conversation::with_window`] sets one.
pub const DEFAULT_WINDOW: u64 = 128_000;

impl Conversation {
    /// A conversation over `messages` (the session's active messages, oldest
    /// first). Automatic compression is off until
    /// [`Conversation::with_engine`] gives it an engine.
    #[must_use]
    pub fn new(
        session: Session,
        prompt: SystemPrompt,
        messages: Vec<Message>,
        counter: Arc<dyn TokenCounter>,
        max_tokens: u64,
    ) -> Self {
        let engine = DefaultEngine::new(EngineConfig {
            window: DEFAULT_WINDOW,
            reserved_output: max_tokens,
            threshold: Threshold::compute(DEFAULT_WINDOW, max_tokens, 0.75, u64::MAX),
            protect_last_n: 8,
            summarizer: SummarizerChoice::Extractive,
            enabled: false,
        });
        Self {
            session,
            prompt,
            messages,
            counter,
            max_tokens,
            window: DEFAULT_WINDOW,
            engine: Box::new(engine),
            active: None,
            calibration: Calibration::default(),
            cache: TokenCache::new(),
            cuts: CutMemo::new(),
            system_tokens: None,
            parts: Vec::new(),
            max_messages: None,
            new_counts: Vec::new(),
            sent: None,
            tools: None,
            tools_off: None,
            tool_items: None,
            grants: Vec::new(),
            disclosure: None,
            plan: None,
            book: cache_book::CacheBook::default(),
        }
    }

    /// The model's context window in tokens, for the per-turn pipeline.
    #[must_use]
    pub fn with_window(mut self, window: u64) -> Self {
        self.window = window;
        self.replan();
        self
    }

    /// The cap on the messages sent per request (`history.max_messages`).
    #[must_use]
    pub fn max_messages(&self) -> Option<usize> {
        self.max_messages
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

    /// The compression engine deciding automatic compression, with its
    /// stored state already restored.
    #[must_use]
    pub fn with_engine(mut self, engine: Box<dyn CompressionEngine + Send>) -> Self {
        self.engine = engine;
        self
    }

    /// The active messages, oldest first (a reply still streaming is not
    /// among them).
    #[must_use]
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The session.
    #[must_use]
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The token counter every figure of this conversation is made with.
    #[must_use]
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    /// The estimate calibration so far.
    #[must_use]
    pub fn calibration(&self) -> Calibration {
        self.calibration
    }

    /// The compression engine, for the runtime to run an
    /// [`Effect::Compress`] (or a manual compression) with.
    pub fn engine_mut(&mut self) -> &mut dyn CompressionEngine {
        self.engine.as_mut()
    }

    /// The compression engine, read-only (its status for the pane).
    #[must_use]
    pub fn engine(&self) -> &dyn CompressionEngine {
        self.engine.as_ref()
    }

    /// Whether a turn is in progress (compressing or streaming).
    #[must_use]
    pub fn is_streaming(&self) -> bool {
        self.active.is_some()
    }

    /// Whether the streaming reply has produced any output yet (text,
    /// reasoning or a tool call); `false` when idle.
    #[must_use]
    pub fn has_output(&self) -> bool {
        self.active.as_ref().is_some_and(Active::has_output)
    }

    /// What the pipeline said of the request sent last (its report and
    /// figures), once one was sent.
    #[must_use]
    pub fn sent(&self) -> Option<&SentRequest> {
        self.sent.as_ref()
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

    /// Fits the conversation to another window (a server said it serves
    /// less than assumed): the window, the output reserve and the
    /// compression engine (its threshold follows the window) are replaced
    /// and the next request is planned again. Works mid-turn: an overflow
    /// retry after it is sized to the new window.
    pub fn resize(&mut self, window: u64, max_tokens: u64, engine: Box<dyn CompressionEngine + Send>) {
        self.window = window;
        self.max_tokens = max_tokens;
        self.engine = engine;
        if let Some(active) = self.active.as_mut() {
            active.resized = true;
        }
        self.replan();
    }

    /// The texts attached for the next submitted message
    /// ([`Conversation::attach`]), in order.
    pub fn attached(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().map(|(text, _)| text.as_str())
    }

    /// Forgets the figures counted once per prompt and tools array (the
    /// system prompt's and the tool schemas' tokens), so the next pipeline
    /// run counts them again: the counter's answers changed (a server's
    /// counts arrived, see [`crate::tokens::ServerCounter`]). Message
    /// counts need no such call: an estimated one is never cached.
    pub fn counts_changed(&mut self) {
        self.system_tokens = None;
        self.tool_items = None;
        self.cuts = CutMemo::new();
    }

    /// Adds a part to the next submitted message (an attachment, or a
    /// per-turn reminder with `ephemeral_ttl = Some(1)`; see
    /// [`crate::pipeline::enrich`]). Each part is stored as a synthetic user
    /// message right after the user's message.
    pub fn attach(&mut self, text: String, ephemeral_ttl: Option<u32>) {
        self.parts.push((text, ephemeral_ttl));
    }

    /// Records the `seq` the store gave a message of
    /// [`Effect::SaveMessage`] (compression places its summary by `seq`).
    pub fn saved(&mut self, id: MessageId, seq: i64) {
        if let Some(m) = self.messages.iter_mut().rev().find(|m| m.id == id) {
            m.seq = seq;
        }
        if let Some(active) = self.active.as_mut() {
            active.saved(id, seq);
        }
    }

    /// Replaces the prompt and history after the stored session changed
    /// outside a turn (a manual compression, its undo, `/reload`).
    /// `messages` are the active messages without a reply still streaming.
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

    /// Applies one event and returns what must happen, in order.
    pub fn handle(&mut self, event: Event) -> Vec<Effect> {
        let mut effects = match event {
            Event::Submit { text, now_ms } => self.submit(text, now_ms),
            Event::Stream { event, now_ms } => self.stream(event, now_ms),
            Event::Failed {
                kind,
                message,
                now_ms,
            } => self.failed(kind, message, now_ms),
            Event::StreamEnded { now_ms } => self.stream_ended(now_ms),
            Event::Tick { now_ms } => self.tick(now_ms),
            Event::Cancel { now_ms } => self.cancel(now_ms),
            Event::Compressed { compacted, now_ms } => self.compressed(compacted.map(|c| *c), now_ms),
            Event::ToolFinished {
                tool_call_id,
                run,
                now_ms,
            } => self.tool_finished(&tool_call_id, run, now_ms),
            Event::Approved {
                tool_call_id,
                approval,
                now_ms,
            } => self.approved(&tool_call_id, approval, now_ms),
        };
        if !self.new_counts.is_empty() {
            // Stored before the runtime starts slow work or ends the turn.
            let at = effects
                .iter()
                .position(|e| {
                    matches!(
                        e,
                        Effect::SendRequest(_)
                            | Effect::Compress { .. }
                            | Effect::TurnFinished { .. }
                            | Effect::RunTool { .. }
                            | Effect::AskApproval { .. }
                    )
                })
                .unwrap_or(effects.len());
            effects.insert(at, Effect::StoreTokenCounts(std::mem::take(&mut self.new_counts)));
        }
        effects
    }

    /// The request for the active messages as the per-turn pipeline
    /// prepares it (reduce, prune, limit, repair, validate; DESIGN §6), with
    /// its report, the prepared request's input tokens and the pre-limit
    /// estimate (both including the tool schemas the request carries). Messages counted for the first time get their count (an
    /// [`Effect::StoreTokenCounts`] with the next event's effects).
    ///
    /// # Errors
    /// [`PrepareError`] when the request cannot fit the window.
    pub fn prepare(&mut self) -> Result<Prepared, PrepareError> {
        self.run_pipeline(false)
    }

    /// What [`Conversation::prepare`] says of the next request (report and
    /// token figures, identical) without copying the messages into a
    /// request: for showing it, never for sending ([`pipeline::report_with`]).
    ///
    /// # Errors
    /// As [`Conversation::prepare`].
    pub fn report(&mut self) -> Result<Prepared, PrepareError> {
        self.run_pipeline(true)
    }

    fn run_pipeline(&mut self, report_only: bool) -> Result<Prepared, PrepareError> {
        let counter = self.counter.as_ref();
        let counts = self.cache.count_history(counter, &self.messages);
        if !counts.newly_counted.is_empty() {
            for (id, count) in &counts.newly_counted {
                if let Some(m) = self.messages.iter_mut().rev().find(|m| m.id == *id) {
                    m.tokens = Some(count.clone());
                }
            }
            self.new_counts.extend(counts.newly_counted);
        }
        let system_tokens = *self
            .system_tokens
            .get_or_insert_with(|| u32::try_from(counter.count(&self.prompt.text)).unwrap_or(u32::MAX));
        let system = RequestSystem {
            text: self.prompt.text.clone(),
            boundary_offset: self.prompt.boundary_offset,
        };
        let tools: &[serde_json::Value] = self.tools.as_ref().map_or(&[], |t| t.offered().array());
        let tool_tokens: u64 = self
            .tool_items
            .get_or_insert_with(|| crate::tokens::tool_schema_items(counter, tools))
            .iter()
            .map(|i| i.tokens)
            .sum();
        let input = PrepareInput {
            system: &system,
            system_tokens,
            messages: &self.messages,
            counts: &counts.tokens,
            counter,
            tools,
            tool_tokens,
            window: self.window,
            reserved_output: self.max_tokens,
            exact: counter.exact(),
            max_messages: self.max_messages,
            single_system: false,
            model: &self.session.model,
            max_tokens: self.max_tokens,
            temperature: None,
        };
        let mut prepared = if report_only {
            pipeline::report_with(&input, &mut self.cuts)
        } else {
            pipeline::prepare_with(&input, &mut self.cuts)
        }?;
        // The request's figures as the provider counts them: the tool
        // schemas ride with every request.
        prepared.prepared_tokens += tool_tokens;
        prepared.prelimit_tokens += tool_tokens;
        Ok(prepared)
    }

    /// Tokens of each active message under the session's counter (cached
    /// counts; the ones not counted yet are counted now), in order.
    pub fn history_tokens(&mut self) -> Vec<u32> {
        let counts = self.cache.count_history(self.counter.as_ref(), &self.messages);
        for (id, count) in &counts.newly_counted {
            if let Some(m) = self.messages.iter_mut().rev().find(|m| m.id == *id) {
                m.tokens = Some(count.clone());
            }
        }
        self.new_counts.extend(counts.newly_counted);
        counts.tokens
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tool_tests;
#[cfg(test)]
mod turn_tests;
