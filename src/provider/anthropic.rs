//! Anthropic Messages, streamed (`POST {base_url}/v1/messages`, DESIGN §8),
//! with the prompt-cache layout of [`wire`]: the system prompt split at the
//! cache boundary, markers on the last two messages, at most four markers.
//!
//! Owns one HTTP client per provider. Invariants: the key goes only into
//! the `x-api-key` header (marked sensitive) and never into `Debug` output
//! or error messages. Callers: whoever selects the provider (the runtime).

mod decode;
mod wire;

/// The request body as it goes over the wire (also shown by the request inspector).
pub use wire::request_body;

use super::http::{self, Endpoint, HttpProviderConfig, Timeouts};
use super::retry::{self, RetryPolicy};
use super::{EventStream, Provider, ProviderError};
use crate::domain::ChatRequest;
use bytes::Bytes;
use reqwest::header::{self, HeaderValue};

/// The API version strata speaks (`anthropic-version` header).
pub const API_VERSION: &str = "2023-06-01";

/// A streaming client for the Anthropic Messages API.
#[derive(Clone)]
pub struct AnthropicProvider {
    client: reqwest::Client,
    endpoint: Endpoint,
    api_key: Option<HeaderValue>,
    retry: RetryPolicy,
    timeouts: Timeouts,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// Sets up the client; sends nothing yet.
    ///
    /// # Errors
    /// `Auth` if the key cannot be sent in a header (control characters),
    /// `Network` if the HTTP client cannot be built.
    pub fn new(config: HttpProviderConfig) -> Result<Self, ProviderError> {
        let endpoint = Endpoint {
            provider: "anthropic",
            url: format!("{}/v1/messages", config.base_url.trim_end_matches('/')),
            key_env: config.key_env,
            api_key: config.api_key.filter(|k| !k.is_empty()),
        };
        let api_key = match &endpoint.api_key {
            None => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(key).map_err(|_| ProviderError::Auth {
                    provider: endpoint.provider,
                    key_env: endpoint.key_env.clone(),
                    message: "the key contains characters that cannot be sent".to_owned(),
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let client = http::build_client(&endpoint, config.timeouts)?;
        Ok(Self {
            client,
            endpoint,
            api_key,
            retry: config.retry,
            timeouts: config.timeouts,
        })
    }

    /// The full URL requests go to (`{base_url}/v1/messages`).
    #[must_use]
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn stream(&self, request: ChatRequest) -> EventStream {
        let body = wire::request_body(&request);
        debug_assert!(wire::count_markers(&body) <= wire::MAX_CACHE_MARKERS);
        let body = Bytes::from(body.to_string());
        let this = self.clone();
        let idle = self.timeouts.idle;
        retry::drive::<decode::AnthropicDecoder, _, _>(
            self.endpoint.clone(),
            self.retry,
            idle,
            &request,
            move || {
                let mut builder = this
                    .client
                    .post(&this.endpoint.url)
                    .header(header::CONTENT_TYPE, "application/json")
                    .header(header::ACCEPT, "text/event-stream")
                    .header("anthropic-version", API_VERSION)
                    .body(body.clone());
                if let Some(key) = &this.api_key {
                    builder = builder.header("x-api-key", key.clone());
                }
                let endpoint = this.endpoint.clone();
                async move { http::open_stream(&endpoint, builder, idle).await }
            },
        )
    }
}
