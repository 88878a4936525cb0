//! Shared HTTP plumbing of the remote providers: their configuration
//! ([`config`]), building the client, sending one streaming request, and
//! turning an HTTP failure into a classified [`ProviderError`] (DESIGN §8).
//!
//! Invariants: an API key is only ever put into a request header; every
//! message that leaves this module has the key removed ([`Endpoint::redact`])
//! and is cut to a readable length. Only the provider adapters call this.

mod config;

pub use config::{HttpProviderConfig, Wire};

use super::ProviderError;
use bytes::Bytes;
use futures::Stream;
use std::pin::Pin;
use std::time::Duration;

/// The response body of a streaming request, as raw chunks.
pub(crate) type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// Longest provider message kept in an error, in characters.
const MAX_MESSAGE_CHARS: usize = 400;

/// How long strata waits on the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Time allowed to open the TCP (and TLS) connection. Default 10 s.
    pub connect: Duration,
    /// Longest silence allowed while waiting for the response headers or
    /// the next bytes of the stream. Default 120 s.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(120),
        }
    }
}

/// Where and as whom a provider sends its requests; used to word errors.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// `openai` or `anthropic`.
    pub provider: &'static str,
    /// Full URL of the endpoint (never contains the key).
    pub url: String,
    /// Name of the variable the key comes from, for messages.
    pub key_env: String,
    /// The key itself, only to scrub it from messages.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("provider", &self.provider)
            .field("url", &self.url)
            .field("key_env", &self.key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

/// Keys shorter than this are not removed from error text (see
/// [`Endpoint::redact`]).
pub const MIN_REDACTED_KEY_CHARS: usize = 12;

impl Endpoint {
    /// Removes the key from `text` and cuts it to [`MAX_MESSAGE_CHARS`]. A
    /// key shorter than [`MIN_REDACTED_KEY_CHARS`] is a placeholder (a
    /// local server's `x`, `none`, `ollama`), not a secret: replacing it
    /// everywhere would only garble the text.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.trim().to_owned();
        if let Some(key) = self
            .api_key
            .as_deref()
            .filter(|k| k.chars().count() >= MIN_REDACTED_KEY_CHARS)
        {
            text = text.replace(key, "[redacted]");
        }
        if let Some((cut, _)) = text.char_indices().nth(MAX_MESSAGE_CHARS) {
            text.truncate(cut);
            text.push('…');
        }
        text
    }

    /// A network error at this endpoint.
    pub fn network(&self, message: impl AsRef<str>) -> ProviderError {
        ProviderError::Network {
            url: self.url.clone(),
            message: self.redact(message.as_ref()),
        }
    }

    /// The error for a connection that broke after the reply had begun.
    pub fn broken(&self, message: impl AsRef<str>) -> ProviderError {
        ProviderError::Broken {
            url: self.url.clone(),
            message: self.redact(message.as_ref()),
        }
    }

    /// The error for a body that ended before the reply finished.
    pub fn cut(&self) -> ProviderError {
        self.broken("the connection closed before the reply finished")
    }
}

/// Builds the HTTP client shared by all requests of one provider.
///
/// Installs rustls' `ring` crypto provider as the process default if none is
/// installed yet (reqwest is built without its own provider).
///
/// # Errors
/// `Network` if the TLS setup fails.
pub(crate) fn build_client(
    endpoint: &Endpoint,
    timeouts: Timeouts,
) -> Result<reqwest::Client, ProviderError> {
    install_crypto();
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .build()
        .map_err(|e| endpoint.network(format!("cannot set up the HTTP client: {e}")))
}

/// Installs rustls' `ring` provider for reqwest once per process (before
/// any client is built).
pub(crate) fn install_crypto() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err only means another thread installed one first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Sends one request and returns its body as a byte stream once the status
/// says success and the body is an event stream.
///
/// # Errors
/// A classified [`ProviderError`]: the HTTP status and error body
/// ([`classify`]), `Network` for connection failures or no response within
/// `idle`, `Protocol` for a 200 response that is not an event stream.
pub(crate) async fn open_stream(
    endpoint: &Endpoint,
    request: reqwest::RequestBuilder,
    idle: Duration,
) -> Result<ByteStream, ProviderError> {
    let response = match tokio::time::timeout(idle, request.send()).await {
        Err(_) => return Err(endpoint.network(format!("no response within {idle:?}"))),
        Ok(Err(e)) => return Err(endpoint.network(describe_reqwest(&e))),
        Ok(Ok(response)) => response,
    };
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers(), jiff::Timestamp::now());
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let is_json = content_type.contains("json");
    // A text body that is not an event stream (an HTML page, plain text) is
    // not a reply: most likely the base URL points at another server.
    if response.status().is_success()
        && content_type.starts_with("text/")
        && !content_type.starts_with("text/event-stream")
    {
        let kind = content_type.split(';').next().unwrap_or("").trim().to_owned();
        return Err(ProviderError::Protocol {
            message: format!(
                "expected an event stream (text/event-stream) but got {kind}; check the base URL"
            ),
        });
    }
    if response.status().is_success() && !is_json {
        return Ok(Box::pin(response.bytes_stream()));
    }
    let body = match tokio::time::timeout(idle, response.bytes()).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) if !(200..300).contains(&status) => {
            return Err(classify(
                endpoint,
                Some(status),
                retry_after,
                &ErrorInfo::plain(describe_reqwest(&e)),
            ));
        }
        Ok(Err(e)) => return Err(endpoint.network(describe_reqwest(&e))),
        Err(_) => return Err(endpoint.network(format!("no data for {idle:?}"))),
    };
    let info = ErrorInfo::parse(&body);
    if (200..300).contains(&status) {
        // A JSON body on success: an error object, or a server that ignored `stream: true`.
        return Err(match info {
            Some(info) => classify(endpoint, None, retry_after, &info),
            None => ProviderError::Protocol {
                message: "expected an event stream but got a JSON body".to_owned(),
            },
        });
    }
    let info = info.unwrap_or_else(|| ErrorInfo::plain(body_text(&body)));
    Err(classify(endpoint, Some(status), retry_after, &info))
}

/// An error body that is not JSON as one line of text: an HTML page's
/// text without its markup, styles and scripts, whitespace collapsed.
pub(crate) fn body_text(body: &[u8]) -> String {
    static MARKUP: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"(?is)<head\b.*?</head\s*>|<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<[^>]*>",
        )
        .ok()
    });
    let text = String::from_utf8_lossy(body);
    let text = match MARKUP.as_ref() {
        Some(markup) if text.trim_start().starts_with('<') => markup.replace_all(&text, " "),
        _ => text,
    };
    let text = text
        .replace("&nbsp;", " ")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A reqwest error in words: what kind of failure, then its root cause
/// (reqwest's own `Display` stops at "error sending request").
pub(crate) fn describe_reqwest(error: &reqwest::Error) -> String {
    use std::error::Error as _;
    let kind = if error.is_connect() {
        "cannot connect".to_owned()
    } else if error.is_timeout() {
        "timed out".to_owned()
    } else if error.is_body() || error.is_decode() {
        "cannot read the body".to_owned()
    } else {
        error.to_string()
    };
    let mut root = error.source();
    while let Some(next) = root.and_then(|cause| cause.source()) {
        root = Some(next);
    }
    match root {
        Some(cause) => format!("{kind}: {cause}"),
        None => kind,
    }
}

/// The parts of a provider's error object strata looks at:
/// OpenAI `{"error": {"message", "type", "code"}}`, Anthropic
/// `{"type": "error", "error": {"type", "message"}}`, Ollama-style
/// `{"error": "text"}`, FastAPI-style `{"detail": ...}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorInfo {
    /// Human-readable message.
    pub message: String,
    /// `type`, e.g. `overloaded_error`, `exceed_context_size_error`.
    pub kind: Option<String>,
    /// `code`, e.g. `context_length_exceeded` (numbers are kept as text).
    pub code: Option<String>,
    /// llama.cpp's `n_ctx`: the window the server serves, tokens.
    pub n_ctx: Option<u64>,
    /// llama.cpp's `n_prompt_tokens`: the request as the server counted it.
    pub n_prompt_tokens: Option<u64>,
}

impl ErrorInfo {
    /// An error known only by its text.
    pub fn plain(message: String) -> Self {
        Self {
            message,
            kind: None,
            code: None,
            n_ctx: None,
            n_prompt_tokens: None,
        }
    }

    /// Reads an error body; `None` when it is not JSON with an error in it.
    pub fn parse(body: &[u8]) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        Self::from_value(&value)
    }

    /// Reads an already-parsed error body or in-stream error event.
    pub fn from_value(value: &serde_json::Value) -> Option<Self> {
        let text = |v: Option<&serde_json::Value>| match v? {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            other => Some(other.to_string()),
        };
        match value.get("error") {
            Some(serde_json::Value::String(message)) => Some(Self::plain(message.clone())),
            Some(error @ serde_json::Value::Object(_)) => Some(Self {
                message: text(error.get("message")).unwrap_or_else(|| error.to_string()),
                kind: text(error.get("type")),
                code: text(error.get("code")),
                n_ctx: error.get("n_ctx").and_then(serde_json::Value::as_u64),
                n_prompt_tokens: error.get("n_prompt_tokens").and_then(serde_json::Value::as_u64),
            }),
            _ => {
                let message = text(value.get("detail")).or_else(|| text(value.get("message")))?;
                Some(Self::plain(message))
            }
        }
    }

    /// Whether the provider says the prompt does not fit the context window.
    pub fn is_overflow(&self) -> bool {
        if self.code.as_deref() == Some("context_length_exceeded")
            || self.kind.as_deref() == Some("exceed_context_size_error")
        {
            return true;
        }
        let message = self.message.to_lowercase();
        [
            "prompt is too long",
            "context is too long",
            "maximum context length",
            "context length exceeded",
        ]
        .iter()
        .any(|phrase| message.contains(phrase))
            || (message.contains("context") && (message.contains("exceed") || message.contains("too long")))
    }
}

/// Turns an HTTP status (or, with `status: None`, an error event inside a
/// stream) and the provider's error object into a [`ProviderError`].
///
/// Order: overflow wording wins over the status (llama.cpp and Anthropic
/// send overflow as 400), then the error `type`, then the status: 401/403
/// auth, 429 rate limit (except OpenAI's `insufficient_quota`, which no
/// retry fixes), 529 overloaded, 413 overflow, 408 and 5xx server, other
/// 4xx bad request.
pub(crate) fn classify(
    endpoint: &Endpoint,
    status: Option<u16>,
    retry_after: Option<Duration>,
    info: &ErrorInfo,
) -> ProviderError {
    let message = endpoint.redact(&info.message);
    let message = if message.is_empty() {
        "no details given".to_owned()
    } else {
        message
    };
    let window = super::served_window::stated_window(&message, info.n_ctx);
    let prompt_tokens = info
        .n_prompt_tokens
        .or_else(|| super::served_window::stated_prompt_tokens(&message));
    if info.is_overflow() {
        return ProviderError::ContextOverflow {
            message,
            window,
            prompt_tokens,
        };
    }
    if info.code.as_deref() == Some("insufficient_quota") {
        return ProviderError::BadRequest {
            status: status.unwrap_or(429),
            message,
        };
    }
    let auth = || ProviderError::Auth {
        provider: endpoint.provider,
        key_env: endpoint.key_env.clone(),
        message: message.clone(),
    };
    match info.kind.as_deref() {
        Some("overloaded_error") => {
            return ProviderError::Overloaded { retry_after, message };
        }
        Some("rate_limit_error") => {
            return ProviderError::RateLimited { retry_after, message };
        }
        Some("authentication_error" | "permission_error") => return auth(),
        _ => {}
    }
    match status {
        Some(401 | 403) => auth(),
        Some(429) => ProviderError::RateLimited { retry_after, message },
        Some(529) => ProviderError::Overloaded { retry_after, message },
        Some(413) => ProviderError::ContextOverflow {
            message,
            window,
            prompt_tokens,
        },
        // Not implemented, or no such path with no error object to say
        // more: another server, or the wrong base URL; no retry helps.
        Some(status @ 501) => wrong_server(status, &message),
        Some(status @ (404 | 405)) if info.kind.is_none() && info.code.is_none() => {
            wrong_server(status, &message)
        }
        Some(status @ (408 | 500..=599)) => ProviderError::Server { status, message },
        Some(status) => ProviderError::BadRequest { status, message },
        None => match info.kind.as_deref() {
            Some("invalid_request_error") => ProviderError::BadRequest { status: 400, message },
            _ => ProviderError::Server { status: 500, message },
        },
    }
}

/// A request the server does not serve at all (HTTP 404, 405, 501).
fn wrong_server(status: u16, message: &str) -> ProviderError {
    ProviderError::BadRequest {
        status,
        message: format!(
            "HTTP {status}: {}; check the base URL",
            message.trim_end_matches('.')
        ),
    }
}

/// How long the response asks the client to wait: `retry-after-ms`
/// (milliseconds, sent by OpenAI) or `Retry-After` as seconds or an HTTP
/// date (RFC 9110 §10.2.3), relative to `now`. A date in the past is zero.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap, now: jiff::Timestamp) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    parse_retry_after(header("retry-after")?, now)
}

/// Parses a `Retry-After` value: delay seconds or an HTTP date.
pub(crate) fn parse_retry_after(value: &str, now: jiff::Timestamp) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let at = jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(value)
        .ok()?;
    let millis = at.as_millisecond().saturating_sub(now.as_millisecond());
    Some(Duration::from_millis(u64::try_from(millis).unwrap_or(0)))
}

/// A client for a server's side endpoints (window discovery, `/tokenize`):
/// `api_key` as an `Authorization: Bearer` header when given, and a
/// connect timeout.
///
/// # Errors
/// When the client cannot be built (the TLS backend).
pub(crate) fn bearer_client(
    api_key: Option<&str>,
    connect_timeout: std::time::Duration,
) -> reqwest::Result<reqwest::Client> {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(key) = api_key
        && let Ok(value) = reqwest::header::HeaderValue::from_str(&format!("Bearer {key}"))
    {
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    install_crypto();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .default_headers(headers)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Endpoint {
        Endpoint {
            provider: "openai",
            url: "http://127.0.0.1:1/v1/chat/completions".to_owned(),
            key_env: "OPENAI_API_KEY".to_owned(),
            api_key: Some("sk-secret-123".to_owned()),
        }
    }

    fn info(body: &str) -> ErrorInfo {
        ErrorInfo::parse(body.as_bytes()).unwrap()
    }

    #[test]
    fn a_key_is_redacted_but_a_short_placeholder_leaves_the_text_alone() {
        let e = endpoint();
        assert_eq!(
            e.redact("bad key sk-secret-123 given"),
            "bad key [redacted] given"
        );
        let placeholder = Endpoint {
            api_key: Some("x".to_owned()),
            ..endpoint()
        };
        let text = "This model's maximum context length is 4096 tokens";
        assert_eq!(placeholder.redact(text), text);
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now: jiff::Timestamp = "2015-10-21T07:27:00Z".parse().unwrap();
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("0.5", now), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn retry_after_ms_header_wins() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "20".parse().unwrap());
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(
            retry_after(&headers, jiff::Timestamp::UNIX_EPOCH),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn overflow_is_recognised_in_every_known_shape() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3000,"n_ctx":2048}}"#;
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        for body in [openai, llama, anthropic] {
            assert!(
                classify(&endpoint(), Some(400), None, &info(body)).is_overflow(),
                "{body}"
            );
        }
        let other = r#"{"error":{"message":"Invalid value for temperature","type":"invalid_request_error"}}"#;
        assert!(matches!(
            classify(&endpoint(), Some(400), None, &info(other)),
            ProviderError::BadRequest { status: 400, .. }
        ));
    }

    #[test]
    fn statuses_map_to_kinds() {
        let e = endpoint();
        let plain = ErrorInfo::plain("nope".to_owned());
        let wait = Some(Duration::from_secs(2));
        assert!(matches!(
            classify(&e, Some(401), None, &plain),
            ProviderError::Auth { .. }
        ));
        assert!(matches!(
            classify(&e, Some(403), None, &plain),
            ProviderError::Auth { .. }
        ));
        assert_eq!(
            classify(&e, Some(429), wait, &plain),
            ProviderError::RateLimited {
                retry_after: wait,
                message: "nope".to_owned()
            }
        );
        assert!(matches!(
            classify(&e, Some(529), None, &plain),
            ProviderError::Overloaded { .. }
        ));
        assert!(matches!(
            classify(&e, Some(503), None, &plain),
            ProviderError::Server { status: 503, .. }
        ));
        assert!(matches!(
            classify(&e, Some(404), None, &plain),
            ProviderError::BadRequest { status: 404, .. }
        ));
        let quota = info(
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
        );
        assert!(!classify(&e, Some(429), None, &quota).is_retryable());
    }

    #[test]
    fn stream_errors_are_classified_by_type() {
        let e = endpoint();
        let overloaded =
            info(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert!(matches!(
            classify(&e, None, None, &overloaded),
            ProviderError::Overloaded { .. }
        ));
        let server = info(r#"{"error":{"message":"boom","type":"server_error"}}"#);
        assert!(classify(&e, None, None, &server).is_retryable());
    }

    #[test]
    fn messages_never_carry_the_key_and_are_bounded() {
        let e = endpoint();
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-secret-123.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let error = classify(&e, Some(401), None, &info(body));
        let text = error.to_string();
        assert!(!text.contains("sk-secret-123"), "{text}");
        assert!(text.contains("OPENAI_API_KEY"), "{text}");
        let long = ErrorInfo::plain("x".repeat(5000));
        assert!(classify(&e, Some(500), None, &long).to_string().len() < 1000);
        assert!(!format!("{e:?}").contains("sk-secret-123"));
    }

    #[test]
    fn error_bodies_in_other_shapes_are_read() {
        assert_eq!(info(r#"{"error":"model not found"}"#).message, "model not found");
        assert_eq!(info(r#"{"detail":"Not Found"}"#).message, "Not Found");
        assert_eq!(
            info(r#"{"error":{"code":500,"message":"x"}}"#).code.as_deref(),
            Some("500")
        );
        assert!(ErrorInfo::parse(b"<html>bad gateway</html>").is_none());
    }

    #[test]
    fn an_html_error_page_becomes_one_line_of_its_text() {
        // As Python's http.server answers a POST it does not handle.
        let page = b"<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        <meta charset=\"utf-8\">\n        \
            <style type=\"text/css\">\n:root { color-scheme: light dark; }\n</style>\n        \
            <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        \
            <p>Error code: 501</p>\n        <p>Message: Unsupported method (&#x27;POST&#x27;).</p>\n    </body>\n</html>\n";
        assert_eq!(
            body_text(page),
            "Error response Error code: 501 Message: Unsupported method ('POST')."
        );
        let error = classify(&endpoint(), Some(501), None, &ErrorInfo::plain(body_text(page)));
        let text = error.to_string();
        assert!(!text.contains('\n') && !text.contains('<'), "{text}");
        assert_eq!(body_text(b"plain\n  text\n"), "plain text");
    }
}
