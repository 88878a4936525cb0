//! How to reach a remote provider: the one configuration both HTTP wires
//! take ([`HttpProviderConfig`]), and each wire's defaults as the official
//! SDKs have them ([`Wire`]).
//!
//! Invariant: the key never appears in `Debug` output.

use super::Timeouts;
use crate::provider::retry::RetryPolicy;

/// The HTTP wire a remote provider speaks, with the defaults of its
/// official SDKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI-compatible chat completions (`{base_url}/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`{base_url}/v1/messages`).
    Anthropic,
}

impl Wire {
    /// The provider's own endpoint: `https://api.openai.com/v1` or
    /// `https://api.anthropic.com`.
    #[must_use]
    pub const fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com",
        }
    }

    /// Where the official SDKs read the key: `OPENAI_API_KEY` or
    /// `ANTHROPIC_API_KEY`.
    #[must_use]
    pub const fn key_env(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// Where the official SDKs read the base URL: `OPENAI_BASE_URL` or
    /// `ANTHROPIC_BASE_URL`.
    #[must_use]
    pub const fn base_url_env(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_BASE_URL",
            Self::Anthropic => "ANTHROPIC_BASE_URL",
        }
    }
}

/// How to reach a remote provider; taken by
/// [`OpenAiProvider::new`](crate::provider::OpenAiProvider::new) and
/// [`AnthropicProvider::new`](crate::provider::AnthropicProvider::new).
#[derive(Clone)]
pub struct HttpProviderConfig {
    /// Base URL; a trailing slash is ignored. OpenAI-compatible servers
    /// take it up to and including the version (`https://api.openai.com/v1`,
    /// `http://127.0.0.1:8080/v1`), Anthropic without the version
    /// (`https://api.anthropic.com`).
    pub base_url: String,
    /// API key, sent as `Authorization: Bearer` (OpenAI) or `x-api-key`
    /// (Anthropic); `None` sends no key header (local servers need none,
    /// the Anthropic API answers 401).
    pub api_key: Option<String>,
    /// Name of the variable the key came from, named in error messages.
    pub key_env: String,
    /// Retries of failed requests.
    pub retry: RetryPolicy,
    /// Connect and idle timeouts.
    pub timeouts: Timeouts,
}

impl HttpProviderConfig {
    /// The defaults of `wire`: its own endpoint, no key, the key variable
    /// of its SDKs, default retries and timeouts.
    #[must_use]
    pub fn new(wire: Wire) -> Self {
        Self {
            base_url: wire.default_base_url().to_owned(),
            api_key: None,
            key_env: wire.key_env().to_owned(),
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
        }
    }

    /// Reads the key from `key_env` and the base URL from
    /// [`Wire::base_url_env`] through `lookup` (normally
    /// `|name| std::env::var(name).ok()`), as the official SDKs do; empty
    /// values count as unset, an unset base URL is the wire's default.
    #[must_use]
    pub fn from_env(wire: Wire, key_env: &str, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let setting = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let defaults = Self::new(wire);
        Self {
            base_url: setting(wire.base_url_env()).unwrap_or(defaults.base_url),
            api_key: setting(key_env),
            key_env: key_env.to_owned(),
            ..defaults
        }
    }
}

impl std::fmt::Debug for HttpProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("key_env", &self.key_env)
            .field("retry", &self.retry)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}
