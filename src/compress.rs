//! Layer 1 (pure): compression of a session's history (DESIGN §7). Takes the
//! active messages and the numbers of the session in, gives a
//! [`CompressionPlan`] out; the runtime performs the summariser call and
//! persists the plan in one transaction.
//!
//! - [`prune`]: free pruning outside the protected tail (no model call);
//! - [`boundary`]: the protected head and tail, and the middle between them;
//! - [`input`]: the summariser's input (role-labelled, capped, redacted),
//!   its prompt and its target size;
//! - [`redact`]: secret redaction;
//! - [`extractive`]: the deterministic summariser that needs no model;
//! - [`assemble`]: the summary message (notice, body, end marker, role);
//! - [`engine`]: the [`CompressionEngine`] trait, the trigger state machine
//!   (preflight, after-response, overflow, manual), strikes, lockout and
//!   cooldowns, and [`DefaultEngine`];
//! - [`feedback`]: the one-line report shown after a compression;
//! - [`notices`]: why automatic compression is paused and what a
//!   compression warns about, as values the clients word.
//!
//! Invariants of every plan: the tail holds the last real user message and
//! the last visible assistant reply; a tool call and its results stay
//! together; a user message stays with its reply; the summary is never the
//! last message; exactly one active summary exists afterwards; nothing is
//! deleted (originals are archived, rewrites are new copies).
//!
//! No I/O, no clock: times (`now_ms`, unix milliseconds) are passed in. Who
//! may call it: the conversation core and the runtime; `strata compress`.

pub mod assemble;
pub mod boundary;
pub mod engine;
pub mod extractive;
pub mod feedback;
pub mod input;
mod keywords;
pub mod notices;
pub mod prune;
pub mod redact;
mod view;

pub use assemble::{END_MARKER, NOTICE, split_summary};
pub use boundary::{
    Boundaries, Cut, cut_boundaries, find_boundaries, find_boundaries_sent, find_boundaries_with,
    min_tail_messages,
};
pub use engine::{
    CompressError, CompressionEngine, CompressionInput, Decision, DefaultEngine, EngineConfig, EngineState,
    EngineStatus, MAX_PREFLIGHT_PASSES, Pending, Reading, SkipReason, SummarizerChoice, SummaryFailure,
    SummaryOutcome, Trigger,
};
pub use extractive::{ExtractiveInput, extractive_summary};
pub use feedback::feedback_line;
pub use input::{SummaryRequest, summary_input, summary_request, target_summary_tokens};
pub use notices::{CompressWarning, LockReason};
pub use prune::Pruner;
pub use redact::redact;

use crate::domain::{CompactionTrigger, Message, MessageId, MessageKind, Role, Summarizer};
use crate::tokens::{TokenCounter, message_tokens};

/// The result of one compression, ready to persist: archive `archived`,
/// insert `summary`, store each rewritten copy as a new row in its
/// original's place and archive the original (DESIGN §7 "Persistence").
#[derive(Clone, Debug, PartialEq)]
pub struct CompressionPlan {
    /// What started it.
    pub trigger: CompactionTrigger,
    /// Originals to mark `archived_by` the compaction: the middle, the
    /// message the summary was merged into (if any), and every original that
    /// `rewritten` replaces.
    pub archived: Vec<MessageId>,
    /// The summary message (kind `Summary`), with `seq` set to the position
    /// it takes (the seq of the first message it replaces).
    pub summary: Message,
    /// When the summary had to be merged into the first message after it to
    /// keep user/assistant alternation: that message's id (the summary then
    /// carries its role and its text after the end marker).
    pub merged_into: Option<MessageId>,
    /// `(original id, rewritten copy)` of kept messages changed by free
    /// pruning or image stripping; each copy has a new id and the
    /// original's `seq`.
    pub rewritten: Vec<(MessageId, Message)>,
    /// The active history after the compression, in order.
    pub messages: Vec<Message>,
    /// Request input estimate before (fixed part + messages), tokens.
    pub tokens_before: u64,
    /// Request input estimate after, tokens.
    pub tokens_after: u64,
    /// Tokens of the summary message.
    pub summary_tokens: u64,
    /// Active messages before.
    pub messages_before: usize,
    /// Active messages after.
    pub messages_after: usize,
    /// Who wrote the summary.
    pub summarizer: Summarizer,
    /// The focus of `/compress <topic>`.
    pub topic: Option<String>,
    /// Whether the token numbers are exact for the model (else shown with `~`).
    pub exact: bool,
    /// Problems that did not stop it (a fallback summary, for instance).
    pub warnings: Vec<CompressWarning>,
}

/// Tokens of one message under `counter`: the cached count when it was made
/// by the same tokenizer, else [`message_tokens`] (the one estimator).
#[must_use]
pub fn tokens_of(counter: &dyn TokenCounter, message: &Message) -> u32 {
    match &message.tokens {
        Some(tc) if tc.tokenizer == counter.id() => tc.tokens,
        _ => message_tokens(counter, message),
    }
}

/// A user message written by the user: a normal user message, or a summary
/// that was merged into one (its text after the end marker is the user's).
#[must_use]
pub fn is_real_user(message: &Message) -> bool {
    message.role == Role::User
        && match message.kind {
            MessageKind::Normal => true,
            MessageKind::Summary => split_summary(&message.content)
                .1
                .is_some_and(|r| !r.trim().is_empty()),
            MessageKind::Synthetic => false,
        }
}

/// An assistant reply the user saw: a normal assistant message with text.
#[must_use]
pub fn is_visible_assistant(message: &Message) -> bool {
    message.role == Role::Assistant
        && message.kind == MessageKind::Normal
        && !message.content.trim().is_empty()
}

/// The first `max` chars of `text`.
pub(crate) fn cut_at(text: &str, max: usize) -> &str {
    text.char_indices().nth(max).map_or(text, |(i, _)| &text[..i])
}

/// The last `max` chars of `text`.
pub(crate) fn tail_of(text: &str, max: usize) -> &str {
    // A char takes at most 4 bytes, so the last `4 * max + 3` bytes (from a
    // char boundary) hold at least `max` chars: count only those.
    let reach = max.saturating_mul(4).saturating_add(3);
    let mut cut = text.len().saturating_sub(reach);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let text = &text[cut..];
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    text.char_indices()
        .nth(count - max)
        .map_or("", |(i, _)| &text[i..])
}
