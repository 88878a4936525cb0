//! The engine's vocabulary: triggers, configuration, input, decisions,
//! summariser outcomes, errors and the state kept between processes.

use super::super::notices::LockReason;
use crate::domain::{CompactionTrigger, Message};
use crate::tokens::{Threshold, TokenCounter};

/// What asks for a compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Before a request, on the estimate.
    Preflight,
    /// After a response, on the provider's `prompt_tokens`.
    AfterResponse,
    /// The provider rejected the request as too long.
    Overflow,
    /// `/compress [topic]`.
    Manual,
}

impl Trigger {
    /// Whether strikes, cooldowns, lockout and the 10 % rule apply.
    #[must_use]
    pub fn automatic(self) -> bool {
        !matches!(self, Self::Manual)
    }

    /// The stored trigger of a compaction row.
    #[must_use]
    pub fn compaction_trigger(self) -> CompactionTrigger {
        match self {
            Self::Preflight | Self::AfterResponse => CompactionTrigger::Auto,
            Self::Overflow => CompactionTrigger::Overflow,
            Self::Manual => CompactionTrigger::Manual,
        }
    }
}

/// Who writes the summary (the `auto` choice is resolved by the caller).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummarizerChoice {
    /// A model, by name: [`CompressionEngine::prepare`] returns a request.
    Model(String),
    /// The extractive summariser; no model call.
    Extractive,
}

/// The session's numbers for the engine.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// Context window, tokens.
    pub window: u64,
    /// Output reserve (`max_tokens`), tokens.
    pub reserved_output: u64,
    /// The threshold ([`Threshold::compute`]).
    pub threshold: Threshold,
    /// `compress.protect_last_n`.
    pub protect_last_n: usize,
    /// Who summarises.
    pub summarizer: SummarizerChoice,
    /// Automatic compression on (manual always works).
    pub enabled: bool,
}

/// One compression's input.
pub struct CompressionInput<'a> {
    /// The active (non-archived) messages, in order.
    pub messages: &'a [Message],
    /// Tokens of the request besides the messages: system prompt, tool
    /// schemas, request overhead.
    pub fixed_tokens: u64,
    /// The session's counter (the one estimator).
    pub counter: &'a dyn TokenCounter,
    /// The focus of `/compress <topic>`.
    pub topic: Option<&'a str>,
    /// What each message costs the request as the pipeline sends it (a
    /// message too large to send whole counts its cut copy), same order
    /// and length as `messages`, when known; else each message's own
    /// count. Boundaries, savings and the figures use it, so they are
    /// those of the request.
    pub sent_tokens: Option<&'a [u32]>,
    /// The messages that request leaves out to fit (same order), when
    /// known: never protected at the start or the end.
    pub sent_dropped: Option<&'a [bool]>,
}

/// Why automatic compression does not run now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// Under the threshold.
    BelowThreshold,
    /// Automatic compression is off.
    Disabled,
    /// Waiting for the provider's reading (just compacted, or the last
    /// reading fit and the estimate grew only a little).
    Deferred,
    /// A summariser failure's cooldown runs until this time (unix ms).
    CoolingDown {
        /// End of the cooldown, unix milliseconds.
        until_ms: i64,
    },
    /// Blocked after repeated strikes or fallback summaries; why.
    LockedOut(LockReason),
    /// The overflow retry was already used since the last reading.
    RetryUsed,
}

/// The answer of [`CompressionEngine::should_compress`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Compress now.
    Compress,
    /// Do not; why.
    Skip(SkipReason),
}

/// How a model summary failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryFailure {
    /// Credentials rejected (HTTP 401/403): abort, nothing changed.
    Auth(String),
    /// Connection failed or timed out: abort, nothing changed.
    Network(String),
    /// Empty or unusable reply: fallback, 30 s cooldown.
    Malformed(String),
    /// No summariser model available: fallback, 600 s cooldown.
    NoModel(String),
    /// Anything else: fallback, 60 s cooldown.
    Other(String),
}

/// What the runtime hands back after performing a [`SummaryRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryOutcome {
    /// The model's summary text.
    Summary(String),
    /// The call failed.
    Failed(SummaryFailure),
    /// A summary body the user gave (a previewed summary, edited or not):
    /// used instead of the summariser's, redacted and framed like any other,
    /// never refused for its size and never replaced by a fallback.
    Given(String),
}

/// Why a compression produced no plan. Messages are for the user.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompressError {
    /// Everything is inside the protected head and tail; not retryable
    /// until the conversation grows.
    #[error(
        "Nothing to compress: every message is inside the protected start and end of the session (the end always holds the last user request and everything after it)."
    )]
    NothingToCompress,
    /// The estimated saving is under 10 %; automatic compression only (a
    /// manual one would run: the client's renderer says how to ask).
    #[error("Compression skipped: it would save only about {percent}% of the context.")]
    NotWorthIt {
        /// Estimated saving, percent.
        percent: u64,
    },
    /// An automatic compression's summary would take at least as many
    /// tokens as the messages it replaces (a short middle); nothing changed.
    #[error(
        "Nothing changed: the summary would take as much room as the messages it replaces ({before} → {after} tokens)."
    )]
    NoSaving {
        /// Request input before, tokens.
        before: u64,
        /// Request input the compression would leave, tokens.
        after: u64,
    },
    /// Nothing outside the protected head lies before the chosen cut (fewer
    /// exchanges than asked to keep, or a message inside the head).
    #[error(
        "Nothing to compress before that point: everything before it is inside the protected start of the session; choose a later message or keep fewer exchanges."
    )]
    NothingBeforeCut,
    /// A cut that keeps no exchange; not retryable as asked.
    #[error(
        "Keep at least one exchange: the last request and its reply always stay verbatim after the summary."
    )]
    KeepNothing,
    /// The message to compress up to is not among the active messages.
    #[error(
        "The message to compress up to is not an active message of the session; choose one that the session shows (strata show lists them)."
    )]
    CutNotFound,
    /// A given summary holds no letter or digit once cleaned.
    #[error("The given summary is empty; write the summary's text and apply it again.")]
    EmptySummary,
    /// The summariser failed to authenticate or connect; nothing changed.
    /// Retry after fixing the credentials or the connection.
    #[error("Compression aborted and nothing changed, because the summariser failed: {0}")]
    Aborted(String),
}

/// The engine's state for the pane and `strata context --json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct EngineStatus {
    /// Strikes since the last fitting reading.
    pub strikes: u32,
    /// Fallback summaries in a row.
    pub fallbacks_in_row: u32,
    /// Why automatic compression is blocked, if it is.
    pub locked: Option<LockReason>,
    /// End of the current cooldown (unix ms), if any.
    pub cooldown_until_ms: Option<i64>,
}

/// The last provider reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reading {
    /// The provider's `prompt_tokens`.
    pub prompt_tokens: u64,
    /// strata's estimate of the same request.
    pub estimate: u64,
}

/// Everything [`DefaultEngine`] remembers between requests, so that a
/// session's strikes, lockout and cooldown survive a restart (the runtime
/// stores it as JSON per session).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct EngineState {
    /// Strikes, lockout, cooldown.
    pub status: EngineStatus,
    /// The last provider reading.
    pub last_reading: Option<Reading>,
    /// A compaction happened since the last reading (preflight defers).
    pub compacted_since_reading: bool,
    /// The overflow retry was used since the last reading.
    pub overflow_retry_used: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_stored_with_the_older_lockout_sentence_loads_as_its_reason() {
        let old = r#"{"status":{"strikes":2,"fallbacks_in_row":2,"locked":"Automatic compression is paused: the summariser failed twice in a row and fallback summaries were used; start a new session (/new, or `strata chat --new`) or compress by hand (/compress <topic>, or `strata compress ID --topic T`).","cooldown_until_ms":1700000060000},"last_reading":{"prompt_tokens":90000,"estimate":88000},"compacted_since_reading":true,"overflow_retry_used":false}"#;
        let state: EngineState = serde_json::from_str(old).unwrap();
        assert_eq!(state.status.locked, Some(LockReason::FallbacksInRow));
        assert_eq!((state.status.strikes, state.status.fallbacks_in_row), (2, 2));
        assert_eq!(state.status.cooldown_until_ms, Some(1_700_000_060_000));
        assert!(state.compacted_since_reading);
        // Written back in the new form, it reads the same.
        let json = serde_json::to_string(&state).unwrap();
        assert!(json.contains(r#""locked":"fallbacks_in_row""#), "{json}");
        assert_eq!(serde_json::from_str::<EngineState>(&json).unwrap(), state);
    }
}
