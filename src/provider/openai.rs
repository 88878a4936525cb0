//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`,
//! streamed): OpenAI, OpenRouter, Ollama, llama.cpp's `llama-server`,
//! llama-cpp-python, vLLM, LM Studio (DESIGN §8).
//!
//! Owns one HTTP client per provider. Invariants: the key goes only into
//! the `Authorization` header (marked sensitive) and never into `Debug`
//! output or error messages; no key means no `Authorization` header (local
//! servers need none). Callers: whoever selects the provider (the runtime).

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

/// A streaming client for one OpenAI-compatible server.
#[derive(Clone)]
pub struct OpenAiProvider {
    client: reqwest::Client,
    endpoint: Endpoint,
    authorization: Option<HeaderValue>,
    retry: RetryPolicy,
    timeouts: Timeouts,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// Sets up the client; sends nothing yet.
    ///
    /// # Errors
    /// `Auth` if the key cannot be sent in a header (control characters),
    /// `Network` if the HTTP client cannot be built.
    pub fn new(config: HttpProviderConfig) -> Result<Self, ProviderError> {
        let endpoint = Endpoint {
            provider: "openai",
            url: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            key_env: config.key_env,
            api_key: config.api_key.filter(|k| !k.is_empty()),
        };
        let authorization = match &endpoint.api_key {
            None => None,
            Some(key) => {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| ProviderError::Auth {
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
            authorization,
            retry: config.retry,
            timeouts: config.timeouts,
        })
    }

    /// The full URL requests go to (`{base_url}/chat/completions`).
    #[must_use]
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn stream(&self, request: ChatRequest) -> EventStream {
        let body = Bytes::from(wire::request_body(&request).to_string());
        let this = self.clone();
        let idle = self.timeouts.idle;
        retry::drive::<decode::OpenAiDecoder, _, _>(
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
                    .body(body.clone());
                if let Some(authorization) = &this.authorization {
                    builder = builder.header(header::AUTHORIZATION, authorization.clone());
                }
                let endpoint = this.endpoint.clone();
                async move { http::open_stream(&endpoint, builder, idle).await }
            },
        )
    }
}
