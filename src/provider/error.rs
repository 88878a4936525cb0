//! How a provider request can fail, and what strata does about each kind
//! (DESIGN §8): authentication and bad requests are fatal; rate limits,
//! overload, server and network errors are retried with backoff; a context
//! overflow goes to compression.

use std::time::Duration;

/// A failed provider request. Each message is one sentence for the user.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The key is missing, wrong or not allowed (HTTP 401/403). Fatal.
    #[error("the {provider} API rejected the key ({message}); check {key_env}")]
    Auth {
        /// Provider name.
        provider: &'static str,
        /// Variable the key was read from.
        key_env: String,
        /// The provider's message.
        message: String,
    },
    /// No key is set for a hosted provider. Fatal.
    #[error(
        "{key_env} is not set; export your {provider} API key in it, or choose another provider with --provider"
    )]
    NoKey {
        /// Provider name.
        provider: &'static str,
        /// The variable strata read.
        key_env: String,
    },
    /// Too many requests (HTTP 429). Retried, honouring `retry_after`.
    #[error("the provider is rate-limiting requests ({message}); wait a moment and try again")]
    RateLimited {
        /// What `Retry-After` asked for.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The provider is overloaded (HTTP 529, Anthropic `overloaded_error`). Retried.
    #[error("the provider is overloaded ({message}); try again in a moment")]
    Overloaded {
        /// What `Retry-After` asked for.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The server failed (HTTP 5xx). Retried.
    #[error("the provider's server failed with HTTP {status} ({message}); try again later")]
    Server {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The request is longer than the model's context window. Goes to compression.
    #[error(
        "the request is too long for the model's context window ({message}); compress the session (`strata compress ID` or /compress), start a new one (`strata chat --new` or /new), or use a model with a larger window"
    )]
    ContextOverflow {
        /// The provider's message.
        message: String,
        /// The window the error states, tokens (llama.cpp's `n_ctx`, or
        /// "maximum context length is N" in the text), if it states one.
        window: Option<u64>,
        /// The request's size as the provider counted it (llama.cpp's
        /// `n_prompt_tokens`, or "request (N tokens)" in the text), if said.
        prompt_tokens: Option<u64>,
    },
    /// The provider refused the request as malformed (HTTP 400/404/422). Fatal.
    #[error("the provider refused the request: {message}")]
    BadRequest {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The connection failed or timed out. Retried, then reported.
    #[error("cannot reach the provider at {url} ({message}); check the network and the base URL")]
    Network {
        /// Where strata tried to connect.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The connection broke, or closed, after the reply had begun. Retried
    /// like [`ProviderError::Network`] while nothing of the reply arrived;
    /// otherwise reported (the partial reply is kept).
    #[error("the connection to the provider at {url} broke during the reply ({message}); try again")]
    Broken {
        /// The endpoint of the request.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The stream ended without a reply (e.g. HTTP 200 with an empty body).
    #[error("the provider ended the reply without sending anything; try again")]
    EmptyResponse,
    /// The stream could not be understood.
    #[error("the provider sent a reply strata cannot read ({message})")]
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// The embedded model could not be loaded or run.
    #[error("the local model failed: {message}")]
    Local {
        /// What went wrong, with what to do.
        message: String,
    },
}

impl ProviderError {
    /// Whether retrying the same request may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Overloaded { .. }
                | Self::Server { .. }
                | Self::Network { .. }
                | Self::Broken { .. }
        )
    }

    /// The delay the provider asked for, if any.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether the server refused the request because it carried tools the
    /// model cannot call (Ollama: "registry.ollama.ai/... does not support
    /// tools"; llama.cpp without `--jinja`: "tools param requires --jinja
    /// flag"; vLLM without auto tool choice: "\"auto\" tool choice requires
    /// --enable-auto-tool-choice"): strata switches tools off for the session
    /// and sends the request again without them.
    #[must_use]
    pub fn is_tools_unsupported(&self) -> bool {
        let Self::BadRequest { message, .. } = self else {
            return false;
        };
        let m = message.to_ascii_lowercase();
        m.contains("does not support tools")
            || m.contains("tools param requires")
            || m.contains("tool choice requires")
            || m.contains("tool use is not supported")
            || (m.contains("tools") && m.contains("not supported"))
    }

    /// Whether this is a context overflow (which compression may fix).
    #[must_use]
    pub fn is_overflow(&self) -> bool {
        matches!(self, Self::ContextOverflow { .. })
    }

    /// For an overflow, the request's size as the provider counted it.
    #[must_use]
    pub fn stated_prompt_tokens(&self) -> Option<u64> {
        match self {
            Self::ContextOverflow { prompt_tokens, .. } => *prompt_tokens,
            _ => None,
        }
    }

    /// For an overflow, the window the provider says it has, tokens.
    #[must_use]
    pub fn stated_window(&self) -> Option<u64> {
        match self {
            Self::ContextOverflow { window, .. } => *window,
            _ => None,
        }
    }
}
