//! Layer 2 adapter: providers turn a [`ChatRequest`] into a stream of
//! [`StreamEvent`]s — OpenAI-compatible chat completions, Anthropic
//! Messages, and the embedded llama.cpp model.
//!
//! Invariant: dropping the stream cancels the request (the HTTP connection
//! is closed, or the local model stops generating at the next token).
//! Providers never touch the store, the workspace or the UI.

pub mod anthropic;
mod error;
mod http;
pub mod local;
pub mod models;
pub mod openai;
mod retry;
pub mod served_window;
pub mod tokenize;

pub use anthropic::AnthropicProvider;
pub use error::ProviderError;
pub use http::{HttpProviderConfig, Timeouts, Wire};
pub use openai::OpenAiProvider;
pub use retry::RetryPolicy;

use crate::domain::{ChatRequest, StreamEvent};
use futures::Stream;
use std::pin::Pin;

/// A streamed reply: events until `Done`, or one error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// Something that answers chat requests.
pub trait Provider: Send + Sync {
    /// `openai`, `anthropic` or `local`.
    fn name(&self) -> &'static str;

    /// Starts a request. The stream yields deltas, usage, then `Done`, or an
    /// error; dropping it cancels the request.
    fn stream(&self, request: ChatRequest) -> EventStream;

    /// Something the provider did on its own that the user should hear
    /// about once (the embedded model removing saved KV states to stay
    /// under their cap); `None` when there is nothing new.
    fn take_notice(&self) -> Option<String> {
        None
    }
}
