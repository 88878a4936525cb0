//! What a turn tells the user when it goes wrong, as values
//! ([`TurnNotice`]); the runtime words them for its client.

use crate::pipeline::PrepareError;

/// A problem of the turn, shown to the user with [`Effect::ShowError`](super::Effect::ShowError).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnNotice {
    /// The provider stopped the reply at the output limit ([`FinishReason::Length`](crate::domain::FinishReason::Length)):
    /// the reply is complete as far as the provider is concerned, but cut.
    OutputLimit {
        /// The request's `max_tokens`.
        max_tokens: u64,
    },
    /// The provider stopped the reply for length before `max_tokens`
    /// output tokens: the server's context window filled (its usage says
    /// how), as a server serving less than the configured window does.
    WindowFull {
        /// The request's `prompt_tokens`, as the provider reported them.
        prompt_tokens: u64,
        /// The reply's `completion_tokens`.
        completion_tokens: u64,
    },
    /// The stream ended after some output but before the provider said
    /// the reply was done (the partial reply is kept, interrupted).
    CutOff,
    /// The stream ended before any output.
    EmptyReply,
    /// The request failed; the provider adapter's sentence, passed through.
    Provider(String),
    /// The request is too long for the window and compressing changed
    /// nothing (when the provider's own sentence is not at hand).
    TooLong,
    /// The request could not be prepared; nothing was sent.
    Prepare(PrepareError),
    /// The turn reached `[tools] max_rounds`; the last reply's calls were
    /// not run.
    MaxRounds {
        /// The limit.
        max: u32,
    },
    /// The server refused tools; they are off for the session and the
    /// request went again without them.
    ToolsOff {
        /// The server's sentence.
        reason: String,
    },
}
