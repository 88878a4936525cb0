//! Counting texts with a llama.cpp server's own tokenizer: `POST
//! {root}/tokenize` with `{"content": TEXT}` answers `{"tokens": [...]}`
//! (no BOS added: `add_special` is false by default; text that spells a
//! special token is parsed as one, as the server does with a chat prompt).
//!
//! `{root}` is the configured base URL without its trailing `/v1`. One
//! request per text, a few in flight at once; short timeouts, so a server
//! that does not answer leaves the caller with its estimate quickly.

use serde_json::Value;
use std::time::Duration;

/// Longest wait for one count (connection and answer), each.
pub const TOKENIZE_TIMEOUT: Duration = Duration::from_secs(5);

/// Requests in flight at once.
const IN_FLIGHT: usize = 4;

/// Why a count could not be had, one sentence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TokenizeError(String);

/// A llama.cpp server's `/tokenize`, ready to count.
#[derive(Clone, Debug)]
pub struct ServerTokenizer {
    client: reqwest::Client,
    url: String,
}

/// The base URL without a trailing `/` and without its `/v1`.
fn root_of(base: &str) -> &str {
    let base = base.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// The token count in a `/tokenize` answer: the length of its `tokens`.
#[must_use]
pub fn parse_count(body: &Value) -> Option<u32> {
    let tokens = body.get("tokens")?.as_array()?;
    u32::try_from(tokens.len()).ok()
}

impl ServerTokenizer {
    /// The tokenizer of the server at `base_url` (an OpenAI-compatible
    /// base, usually ending in `/v1`); `api_key` goes into an
    /// `Authorization: Bearer` header when given.
    ///
    /// # Errors
    /// [`TokenizeError`] when the HTTP client cannot be built.
    pub fn new(base_url: &str, api_key: Option<&str>) -> Result<Self, TokenizeError> {
        let client = super::http::bearer_client(api_key, TOKENIZE_TIMEOUT)
            .map_err(|e| TokenizeError(format!("the HTTP client for /tokenize could not be built ({e})")))?;
        Ok(Self {
            client,
            url: format!("{}/tokenize", root_of(base_url)),
        })
    }

    /// `POST {root}/tokenize`.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Tokens of `text` under the server's tokenizer.
    ///
    /// # Errors
    /// [`TokenizeError`] when the server cannot be reached, answers an
    /// HTTP error (an older server without `/tokenize`), takes longer than
    /// [`TOKENIZE_TIMEOUT`] or answers something that is not a count.
    pub async fn count(&self, text: &str) -> Result<u32, TokenizeError> {
        let body = serde_json::json!({ "content": text }).to_string();
        let request = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let fail = |why: String| TokenizeError(format!("POST {} {why}", self.url));
        let response = tokio::time::timeout(TOKENIZE_TIMEOUT, request.send())
            .await
            .map_err(|_| fail("did not answer in time".to_owned()))?
            .map_err(|e| fail(format!("failed ({e})")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(fail(format!("answered HTTP {}", status.as_u16())));
        }
        let bytes = tokio::time::timeout(TOKENIZE_TIMEOUT, response.bytes())
            .await
            .map_err(|_| fail("did not finish its answer in time".to_owned()))?
            .map_err(|e| fail(format!("broke off its answer ({e})")))?;
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .as_ref()
            .and_then(parse_count)
            .ok_or_else(|| fail("answered something other than {\"tokens\": [...]}".to_owned()))
    }

    /// Tokens of each of `texts`, in order, a few requests at a time; the
    /// first failure stops the batch.
    ///
    /// # Errors
    /// As [`ServerTokenizer::count`].
    pub async fn count_all(&self, texts: &[&str]) -> Result<Vec<u32>, TokenizeError> {
        use futures::StreamExt;
        let mut counts = Vec::with_capacity(texts.len());
        let mut answers = futures::stream::iter(texts.iter().map(|t| self.count(t))).buffered(IN_FLIGHT);
        while let Some(answer) = answers.next().await {
            counts.push(answer?);
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_count_is_the_number_of_tokens() {
        assert_eq!(parse_count(&json!({"tokens": [19556, 905, 28]})), Some(3));
        assert_eq!(parse_count(&json!({"tokens": []})), Some(0));
        assert_eq!(parse_count(&json!({"error": {"code": 404}})), None);
    }

    #[test]
    fn the_url_drops_v1() {
        let t = ServerTokenizer::new("http://127.0.0.1:8080/v1/", None).unwrap();
        assert_eq!(t.url(), "http://127.0.0.1:8080/tokenize");
    }
}
