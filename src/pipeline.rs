//! Layer 1 (pure): the per-turn preparation pipeline of DESIGN §6. It turns
//! a session's active messages, the frozen system prompt and the window
//! settings into the exact [`ChatRequest`] to send, plus a report with one
//! entry per stored message saying what happened to it.
//!
//! It works on a copy: the stored history is never changed, and truncated
//! copies are never written back nor put in the per-message
//! [`TokenCache`](crate::tokens::TokenCache). Their counts are made with
//! [`message_tokens`](crate::tokens::message_tokens), the one estimator,
//! and may be remembered between calls in a [`CutMemo`] the caller owns
//! (keyed by message id and cut; see [`prepare_with`]). No I/O, no clock.
//! The conversation core calls [`prepare_with`] before every request with
//! its session's memo; `strata context` calls [`prepare`] to show the
//! report.
//!
//! Stages, in the order of DESIGN §6, after the user's exclusions
//! (DESIGN §17, [`exclude`]): an excluded message (with the tool call unit
//! it stands for: an excluded call message takes its results, an excluded
//! result takes its call only) is never sent, never must-keep, costs 0 in
//! `prepared_tokens` and in the pre-limit estimate, and is reported
//! [`Action::Excluded`] whatever else would apply. A call message sent
//! without some of its calls is counted without them. The request is
//! validated like any other.
//!
//! 1. **enrich** ([`enrich`]) — `@path` attachments and the per-turn
//!    `<system-reminder>`: the runtime reads the files and runs the command
//!    when the user submits, [`enrich`] formats them (a file already attached
//!    with the same content becomes a one-line note), and they are stored as
//!    synthetic user messages after the user's message, which repair merges
//!    into it. Stored once, they are sent byte-identical on later turns.
//! 2. **reduce** — first, a message too large for any request (over the
//!    room messages have: the cut room) is replaced by one cut copy
//!    wherever it stands (`oversize`): its code blocks' middles when that
//!    is enough, else its own middle, made once per message and room and
//!    kept in the [`CutMemo`]; so an old paste costs every later request,
//!    and the pre-limit estimate, what it is sent as. Then ([`limit`]
//!    module), while the estimate is over the soft
//!    limit ([`SOFT_LIMIT_EXACT`] or [`SOFT_LIMIT_APPROXIMATE`] of the
//!    effective window), the largest truncatable message is truncated: the
//!    middle of fenced code blocks and `<details>` blocks becomes `[...]`
//!    (first and last 10 lines kept), long tool results keep head and tail
//!    with a marker. Never pinned messages, never tool-call arguments; a
//!    message that cannot be truncated is skipped for the next one. Only
//!    messages the limit stage can still keep are considered (the newest
//!    turns that fit under the soft limit, plus the next older turn):
//!    truncating a message that is dropped anyway would cost time and change
//!    nothing, and this bounds the work by the window, not by the history.
//! 3. **prune** — a message whose `ephemeral_ttl` has expired is dropped
//!    (pinned ones never). Expiry is decided before reduce runs so that no
//!    work is spent truncating a message about to be pruned; the result is
//!    the same as running them in the design's order.
//! 4. **limit** — the system prompt, pinned messages (with their tool call
//!    units) and the last user message are kept; then whole turns, newest
//!    first, while they fit `window − reserved_output − system − tools −
//!    request overhead − room for the omitted-messages note` (the design's
//!    "effective window − reserved output − system − tools", with the
//!    reserve subtracted once), and while `max_messages` (when set) allows.
//!    A turn is a user message (with any user messages right after it, such
//!    as its reminder) and the replies and tool results that follow; the walk
//!    stops at the first turn that does not fit, so no gap opens. The last
//!    user message is truncated (head and tail kept) rather than dropped.
//! 5. **repair** — tool calls and results are paired (unpaired ones go, no
//!    stub results), consecutive messages of one role are merged, imported
//!    system messages are merged into the system prompt when the provider
//!    takes one, and a note saying how many earlier messages were omitted
//!    opens the request when it would not start with a user message.
//! 6. **validate** — pairing, alternation, first message and size are
//!    checked; a violation is [`PrepareError::Invalid`], never sent.
//!
//! Tool output reaches the model through [`crate::text::for_model`] when
//! the request is assembled: colour (SGR) sequences stripped, every other
//! escape and control shown as `^[`, `^G` and the like, so the model sees
//! what a command tried to do to a terminal without it costing tokens or
//! acting anywhere. The store keeps the output as captured. (Sessions from
//! before this rule see their cached prefix change once, at the first tool
//! result that held an escape.)
//!
//! Tokens: untouched messages cost their cached count; truncated copies are
//! counted with the counter once per (message, cut) and memo, messages that
//! lost tool calls on every call (rare); a
//! message merged into the one before it costs its count less its framing
//! (`3 + role`) plus the `\n\n` separator, which matches a recount up to a
//! token at the seam. `prepared_tokens` is therefore computed without
//! tokenising any untouched message.
//!
//! Per-turn reminders (DESIGN §4) are stored by the runtime as their own
//! `user` message of kind `synthetic` with `ephemeral_ttl = Some(1)`, right
//! after the user's message: repair merges it into that message, it stays
//! for the whole tool loop of its turn (a turn counts once it is complete),
//! and prune drops it from the next turn on, so the system prompt and the
//! cached prefix never change.

pub mod enrich;
pub mod exclude;
mod limit;
mod memo;
mod oversize;
mod repair;
pub mod rows;
mod truncate;
mod validate;
mod work;

use crate::domain::{ChatRequest, Message, MessageId, RequestSystem};
use crate::tokens::TokenCounter;
use serde::{Deserialize, Serialize};

pub use exclude::{Exclusions, excluded_units, exclusions};
pub use memo::CutMemo;
pub use rows::{ContextRow, RowState, context_rows, keep_tool_outputs, sort_by_cost, sort_by_position};
pub(crate) use work::last_user;

/// Soft limit as a share of the effective window when the tokenizer is
/// exact for the model.
pub const SOFT_LIMIT_EXACT: f64 = 0.9;

/// Soft limit when counts are only an estimate (e.g. Anthropic models).
pub const SOFT_LIMIT_APPROXIMATE: f64 = 0.75;

/// Everything one preparation needs. Token figures are in the tokens of
/// `counter`; `counts` come from
/// [`TokenCache::count_history`](crate::tokens::TokenCache::count_history).
#[derive(Clone, Copy)]
pub struct PrepareInput<'a> {
    /// The frozen system prompt: exact text and cache boundary.
    pub system: &'a RequestSystem,
    /// Tokens of `system.text` (text only; its message framing is part of
    /// [`request_overhead`](crate::tokens::request_overhead)).
    pub system_tokens: u32,
    /// The session's active (non-archived) messages, oldest first.
    pub messages: &'a [Message],
    /// Tokens of each message, same order and length as `messages`, framing
    /// included (the value of `message_tokens`).
    pub counts: &'a [u32],
    /// Counts truncated copies; never used on untouched messages.
    pub counter: &'a dyn TokenCounter,
    /// Tool schemas to offer, OpenAI `tools[]` form; copied into the request.
    pub tools: &'a [serde_json::Value],
    /// Tokens of `tools` (see `tool_schema_tokens`).
    pub tool_tokens: u64,
    /// Context window of the model, tokens.
    pub window: u64,
    /// Output reserve (`max_tokens`), tokens.
    pub reserved_output: u64,
    /// Whether `counter` is exact for the model: soft limit
    /// [`SOFT_LIMIT_EXACT`], else [`SOFT_LIMIT_APPROXIMATE`].
    pub exact: bool,
    /// `history.max_messages`: at most this many messages are sent (pinned
    /// messages and the last user message are sent even beyond it).
    pub max_messages: Option<usize>,
    /// The provider takes a single system prompt: imported `system`
    /// messages are appended to it instead of being sent as messages.
    pub single_system: bool,
    /// Model name as the provider knows it.
    pub model: &'a str,
    /// `max_tokens` of the request.
    pub max_tokens: u64,
    /// Sampling temperature; `None` leaves the provider default.
    pub temperature: Option<f32>,
}

/// The outcome of [`prepare`].
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// The request to send.
    pub request: ChatRequest,
    /// One entry per input message, in input order.
    pub report: Vec<ReportEntry>,
    /// Per message of `request.messages`, the input messages it was formed
    /// from (several when merged; empty for a note strata inserted).
    pub sources: Vec<std::ops::Range<usize>>,
    /// Input tokens of `request` by strata's estimator: system prompt text,
    /// every message with its framing, and the request overhead. Tool
    /// schemas are not included (they are `tool_tokens`, a category of
    /// their own in the budget).
    pub prepared_tokens: u64,
    /// The *pre-limit estimate*: every message as the pipeline would send
    /// it — expired ones pruned, oversized ones already cut by reduce and,
    /// when the must-keep messages alone overflow, by the limit's middle cut
    /// — before whole turns are left out; plus the system prompt and the
    /// request overhead (tool schemas excluded, as in `prepared_tokens`).
    /// What the compression trigger compares with the threshold (DESIGN
    /// §5): a long history is summarised rather than silently dropped, and
    /// one huge new message that the pipeline cuts does not fire it.
    pub prelimit_tokens: u64,
    /// Per input message, its tokens in the pre-limit estimate (0 when
    /// pruned or excluded), in input order.
    pub prelimit_counts: Vec<u32>,
}

/// What happened to one stored message. Serialises as
/// `{message_id, action, tokens_before, tokens_after}` (the
/// `strata context --json` contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportEntry {
    /// The stored message.
    pub message_id: MessageId,
    /// The most significant thing done to it.
    pub action: Action,
    /// Its cached count.
    pub tokens_before: u32,
    /// What it adds to the request: 0 when it is not sent; for a message
    /// merged into the one before it (or into the system prompt), its text
    /// and separator without its own framing.
    pub tokens_after: u32,
}

/// The per-message outcome, most significant first when several apply:
/// `excluded`, `dropped`, `pruned`, `repaired`, `truncated`, `merged`,
/// `kept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Not sent: the user excluded it, or the tool call unit it belongs to
    /// (see [`exclude`]). Nothing else applies to it.
    Excluded,
    /// Sent as stored.
    Kept,
    /// Sent with the middle of code blocks, `<details>` blocks or a long
    /// text cut out.
    Truncated,
    /// Not sent: its `ephemeral_ttl` expired.
    Pruned,
    /// Not sent: outside the window or the message cap, or unpaired (a tool
    /// result whose call is gone, an assistant message left empty).
    Dropped,
    /// Sent without the tool calls whose results are missing.
    Repaired,
    /// Sent as part of the message before it or of the system prompt.
    Merged,
}

/// Why no request could be prepared.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    /// The system prompt, tool schemas, output reserve and the request's
    /// framing leave no room for any message. Retrying cannot help;
    /// compressing the history cannot either.
    #[error(
        "the context window of {window} tokens is too small: the system prompt ({system}), tool schemas \
         ({tools}), output reserve ({reserve}) and request framing ({framing}) alone need {}; choose a model \
         with a larger window, a smaller max_tokens, fewer tools or a shorter prompt (--prompt-mode minimal or \
         none)",
        system + tools + reserve + framing
    )]
    WindowTooSmall {
        /// System prompt, tokens.
        system: u64,
        /// Tool schemas, tokens.
        tools: u64,
        /// Reserved output (`max_tokens`), tokens.
        reserve: u64,
        /// Per-request framing and room for the omitted-messages note,
        /// tokens.
        framing: u64,
        /// The model's window, tokens.
        window: u64,
    },
    /// The messages that are never dropped (the last user message, the
    /// pinned messages and the compaction summary) do not fit even after
    /// truncation.
    #[error(
        "{} {needed} tokens even after truncation but only {room} are left in the context window; {}",
        must_keep_words(*pinned, *summary),
        must_keep_advice(*pinned, *summary)
    )]
    TooLargeToSend {
        /// Tokens those messages need.
        needed: u64,
        /// Tokens left for messages.
        room: u64,
        /// Pinned messages among them.
        pinned: usize,
        /// Whether the compaction summary is among them.
        summary: bool,
    },
    /// The prepared request breaks a provider rule: a bug in strata. The
    /// request is not sent.
    #[error("the prepared request broke a provider rule ({0}); this is a bug in strata and nothing was sent")]
    Invalid(String),
}

impl PrepareError {
    /// For [`PrepareError::WindowTooSmall`]: everything but the messages,
    /// tokens.
    #[must_use]
    pub fn fixed_tokens(&self) -> Option<u64> {
        match self {
            Self::WindowTooSmall {
                system,
                tools,
                reserve,
                framing,
                ..
            } => Some(system + tools + reserve + framing),
            _ => None,
        }
    }
}

/// "the last message, 2 pinned messages and the compaction summary need"
/// ("the last message needs" alone).
fn must_keep_words(pinned: usize, summary: bool) -> String {
    let mut parts = vec!["the last message".to_owned()];
    match pinned {
        0 => {}
        1 => parts.push("the pinned message".to_owned()),
        n => parts.push(format!("{n} pinned messages")),
    }
    if summary {
        parts.push("the compaction summary".to_owned());
    }
    match parts.len() {
        1 => format!("{} needs", parts.remove(0)),
        _ => {
            let last = parts.pop().unwrap_or_default();
            format!("{} and {last} need", parts.join(", "))
        }
    }
}

/// What would make them fit.
fn must_keep_advice(pinned: usize, summary: bool) -> &'static str {
    match (pinned > 0, summary) {
        (true, true) => {
            "unpin messages, /undo-compress, a smaller max_tokens or a larger window would make room"
        }
        (true, false) => {
            "unpin messages, shorten the message, or choose a smaller max_tokens or a larger window"
        }
        (false, true) => "/undo-compress, a smaller max_tokens or a larger window would make room",
        (false, false) => "shorten the message, or choose a smaller max_tokens or a larger window",
    }
}

/// Runs the pipeline: see the module doc for the stages.
///
/// # Errors
///
/// [`PrepareError::WindowTooSmall`] when the fixed part fills the window,
/// [`PrepareError::TooLargeToSend`] when the last user message and pinned
/// messages cannot fit, [`PrepareError::Invalid`] when the input is
/// inconsistent (`counts` of another length) or the result breaks a rule.
pub fn prepare(input: &PrepareInput<'_>) -> Result<Prepared, PrepareError> {
    prepare_with(input, &mut CutMemo::new())
}

/// [`prepare`] with the counts of truncated copies remembered in `memo`
/// between calls: a caller preparing the same session turn after turn keeps
/// one memo, so a copy is tokenised once rather than on every turn. The
/// result is identical to [`prepare`]'s.
///
/// # Errors
///
/// As [`prepare`].
pub fn prepare_with(input: &PrepareInput<'_>, memo: &mut CutMemo) -> Result<Prepared, PrepareError> {
    let prepared = run(input, memo, false)?;
    validate::validate(&prepared, input)?;
    Ok(prepared)
}

/// What [`prepare_with`] says of a request — its report, `prepared_tokens`,
/// `prelimit_tokens` and `prelimit_counts`, identical — without copying the
/// messages into a request: for showing the next request (the context pane,
/// `strata context`), not for sending it. The returned `request` holds
/// stand-in contents and is never valid to send; it is not validated.
///
/// # Errors
/// [`PrepareError::WindowTooSmall`] and [`PrepareError::TooLargeToSend`] as
/// [`prepare`]; [`PrepareError::Invalid`] for inconsistent input.
pub fn report_with(input: &PrepareInput<'_>, memo: &mut CutMemo) -> Result<Prepared, PrepareError> {
    run(input, memo, true)
}

/// The stages up to repair (see the module doc); validation is the
/// caller's.
fn run(input: &PrepareInput<'_>, memo: &mut CutMemo, report_only: bool) -> Result<Prepared, PrepareError> {
    if input.counts.len() != input.messages.len() {
        return Err(PrepareError::Invalid(format!(
            "{} counts for {} messages",
            input.counts.len(),
            input.messages.len()
        )));
    }
    let budget = limit::Budgets::new(input)?;
    let mut work = work::Work::new(input.messages, input.counts);
    work.count_partial_calls(input.counter);
    // Stage 1, enrich: see the module doc (needs attachment text from an adapter).
    work.prune();
    memo.use_tokenizer(input.counter.id());
    oversize::cap_oversized(&mut work, &budget, input.counter, memo);
    limit::reduce(&mut work, &budget, input.counter, memo);
    limit::limit(&mut work, &budget, input.counter, memo)?;
    Ok(repair::assemble(&mut work, input, report_only))
}
