//! Turns "send one request, decode its event stream" into the
//! [`EventStream`] a provider returns: idle timeout per read, the end-of-body
//! rules, and retries with exponential backoff and full jitter that honour
//! `Retry-After` (DESIGN §8).
//!
//! Invariants: a request is retried only for a retryable error, at most
//! `max_retries` times, and only while no event has been yielded to the
//! caller, so output is never duplicated. Dropping the stream drops the
//! response body, which closes the connection. Only the provider adapters
//! call this.
//!
//! Each request is a `request{provider, model}` span in the log with its
//! phases (connecting, connected, first token, done or failed or
//! cancelled), timings, retries and errors; never its body or reply text.

use super::http::{ByteStream, Endpoint};
use super::{EventStream, ProviderError};
use crate::domain::{ChatRequest, FinishReason, ProviderUsage, StreamEvent};
use std::collections::VecDeque;
use std::future::Future;
use std::time::{Duration, Instant};
use tracing::Instrument as _;

/// When and how often a failed request is tried again.
///
/// The wait before retry `n` (0-based) is a uniformly random duration in
/// `[0, min(cap, base × 2ⁿ)]` ("full jitter"), or exactly what the
/// provider's `Retry-After` asked for when it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt. Default 3.
    pub max_retries: u32,
    /// Backoff ceiling of the first retry. Default 1 s.
    pub base: Duration,
    /// Largest backoff ceiling. Default 30 s.
    pub cap: Duration,
    /// A `Retry-After` longer than this is not waited for: the error is
    /// reported instead. Default 60 s.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    #[must_use]
    pub fn never() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry `retry` (0-based) given the provider's
    /// `Retry-After`, with `unit` in `[0, 1]` as the jitter draw; `None`
    /// when no retry is left or the provider asked for too long a wait.
    #[must_use]
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Option<Duration> {
        if retry >= self.max_retries {
            return None;
        }
        if let Some(wait) = retry_after {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let ceiling = self
            .base
            .saturating_mul(2u32.saturating_pow(retry.min(31)))
            .min(self.cap);
        Some(ceiling.mul_f64(unit.clamp(0.0, 1.0)))
    }
}

/// A uniformly distributed number in `[0, 1)`, from the standard library's
/// randomly keyed hasher (good enough for jitter).
fn jitter_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// How far a decoded reply got, judged when the body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Nothing meaningful arrived: the body end is `EmptyResponse`.
    Nothing,
    /// The reply started but did not finish: the body end is a cut.
    Partial,
    /// The provider said the reply is finished.
    Finished,
}

/// A provider's wire format: SSE events in, [`StreamEvent`]s out.
pub(crate) trait Decoder: Default + Send + 'static {
    /// Handles one SSE event, pushing what it means onto `out`; `endpoint`
    /// words errors.
    ///
    /// # Errors
    /// An error event from the provider, or data strata cannot read.
    fn event(
        &mut self,
        event: &eventsource_stream::Event,
        endpoint: &Endpoint,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError>;

    /// Whether the provider marked the end of the stream (`[DONE]`,
    /// `message_stop`): nothing more needs reading.
    fn is_complete(&self) -> bool;

    /// How far the reply got.
    fn progress(&self) -> Progress;

    /// The body ended after the reply finished: pushes the trailing events
    /// (usage, then `Done`).
    fn finish(&mut self, out: &mut Vec<StreamEvent>);
}

type Sse = eventsource_stream::EventStream<ByteStream>;

enum Phase {
    /// Next step: send a request.
    Connect,
    /// Waiting this long before the next attempt.
    Backoff(Duration),
    /// Reading the body of the current attempt.
    Read(Box<Sse>),
    /// Nothing more to read; drain the queue.
    Finished,
}

struct Driver<D, F> {
    endpoint: Endpoint,
    policy: RetryPolicy,
    idle: Duration,
    open: F,
    decoder: D,
    phase: Phase,
    queue: VecDeque<Result<StreamEvent, ProviderError>>,
    retries: u32,
    yielded: bool,
    log: RequestLog,
}

/// What the log says about one request.
struct RequestLog {
    /// `request{provider, model}`, a child of the caller's span.
    span: tracing::Span,
    started: Instant,
    /// Time to the first reply event (text, reasoning or tool call).
    first_token: Option<Duration>,
    usage: Option<ProviderUsage>,
    /// Done or failed was logged; otherwise dropping means cancelled.
    ended: bool,
}

impl RequestLog {
    fn start(endpoint: &Endpoint, request: &ChatRequest) -> Self {
        let span = tracing::info_span!(
            "request",
            provider = endpoint.provider,
            model = request.model.as_str()
        );
        span.in_scope(|| {
            tracing::info!(
                messages = request.messages.len(),
                tools = request.tools.len(),
                max_tokens = request.max_tokens,
                "request"
            );
        });
        Self {
            span,
            started: Instant::now(),
            first_token: None,
            usage: None,
            ended: false,
        }
    }

    fn elapsed_ms(&self) -> u128 {
        self.started.elapsed().as_millis()
    }

    /// Notes an event on its way to the caller.
    fn event(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta { .. }
            | StreamEvent::ReasoningDelta { .. }
            | StreamEvent::ToolCallDelta { .. } => {
                if self.first_token.is_none() {
                    let ttft = self.started.elapsed();
                    self.first_token = Some(ttft);
                    tracing::info!(ttft_ms = ttft.as_millis(), "first token");
                }
            }
            StreamEvent::Usage(usage) => self.usage = Some(*usage),
            // Logged where they happen (connected, retrying).
            StreamEvent::Connected | StreamEvent::Retrying { .. } | StreamEvent::Prefill { .. } => {}
            StreamEvent::Done { finish_reason } => {
                self.ended = true;
                let usage = self.usage.unwrap_or_default();
                tracing::info!(
                    duration_ms = self.elapsed_ms(),
                    ttft_ms = self.first_token.map(|t| t.as_millis()),
                    finish_reason = finish_reason.as_ref().map(FinishReason::as_str),
                    prompt_tokens = usage.prompt_tokens,
                    completion_tokens = usage.completion_tokens,
                    cache_read_tokens = usage.cache_read_tokens,
                    "done"
                );
            }
        }
    }

    /// Notes the error that ends the request.
    fn failed(&mut self, error: &ProviderError, retries: u32) {
        self.ended = true;
        let duration_ms = self.elapsed_ms();
        if error.is_overflow() {
            tracing::warn!(duration_ms, retries, %error, "failed");
        } else {
            tracing::error!(duration_ms, retries, %error, "failed");
        }
    }
}

impl<D, F> Drop for Driver<D, F> {
    fn drop(&mut self) {
        if !self.log.ended {
            let _entered = self.log.span.enter();
            tracing::info!(duration_ms = self.log.elapsed_ms(), "cancelled");
        }
    }
}

/// The stream of one logical request: `open` sends an attempt and returns
/// its body, `D` decodes it, and retryable failures before the first
/// yielded event start a new attempt after the policy's wait. `request`
/// only names the request in the log.
pub(crate) fn drive<D, F, Fut>(
    endpoint: Endpoint,
    policy: RetryPolicy,
    idle: Duration,
    request: &ChatRequest,
    open: F,
) -> EventStream
where
    D: Decoder,
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<ByteStream, ProviderError>> + Send,
{
    let log = RequestLog::start(&endpoint, request);
    let driver = Driver {
        endpoint,
        policy,
        idle,
        open,
        decoder: D::default(),
        phase: Phase::Connect,
        queue: VecDeque::new(),
        retries: 0,
        yielded: false,
        log,
    };
    Box::pin(futures::stream::unfold(driver, |mut driver| async move {
        let span = driver.log.span.clone();
        let item = driver.next().instrument(span).await?;
        Some((item, driver))
    }))
}

impl<D, F, Fut> Driver<D, F>
where
    D: Decoder,
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<ByteStream, ProviderError>> + Send,
{
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            match self.queue.pop_front() {
                Some(Ok(event)) => {
                    // Progress events are not the reply: a retry stays possible.
                    if !event.is_progress() {
                        self.yielded = true;
                        self.log.event(&event);
                    }
                    return Some(Ok(event));
                }
                Some(Err(error)) => {
                    self.queue.clear();
                    self.phase = Phase::Finished;
                    match self.retry_wait(&error) {
                        Some(wait) => {
                            tracing::warn!(
                                retry = self.retries + 1,
                                max_retries = self.policy.max_retries,
                                wait_ms = wait.as_millis(),
                                %error,
                                "retrying"
                            );
                            self.retries += 1;
                            self.phase = Phase::Backoff(wait);
                            return Some(Ok(StreamEvent::Retrying {
                                attempt: self.retries,
                                max: self.policy.max_retries,
                                reason: error.to_string(),
                                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                            }));
                        }
                        None => {
                            self.log.failed(&error, self.retries);
                            return Some(Err(error));
                        }
                    }
                }
                None => {}
            }
            match &mut self.phase {
                Phase::Finished => return None,
                Phase::Backoff(wait) => {
                    tokio::time::sleep(*wait).await;
                    self.phase = Phase::Connect;
                }
                Phase::Connect => {
                    tracing::info!(attempt = self.retries + 1, "connecting");
                    match (self.open)().await {
                        Ok(body) => {
                            tracing::info!(elapsed_ms = self.log.elapsed_ms(), "connected");
                            self.decoder = D::default();
                            self.phase = Phase::Read(Box::new(eventsource_stream::EventStream::new(body)));
                            self.queue.push_back(Ok(StreamEvent::Connected));
                        }
                        Err(error) => self.queue.push_back(Err(error)),
                    }
                }
                Phase::Read(sse) => {
                    let next = tokio::time::timeout(self.idle, futures::StreamExt::next(sse.as_mut())).await;
                    self.read(next);
                }
            }
        }
    }

    /// Handles one read from the body.
    fn read(
        &mut self,
        next: Result<Option<Result<eventsource_stream::Event, SseError>>, tokio::time::error::Elapsed>,
    ) {
        use eventsource_stream::EventStreamError;
        match next {
            Err(_) => {
                let silence = format!("no data for {:?}", self.idle);
                // A stall after the reply began: the server was reached.
                let error = match self.decoder.progress() {
                    Progress::Partial => self.endpoint.broken(silence),
                    Progress::Nothing | Progress::Finished => self.endpoint.network(silence),
                };
                self.fail(error);
            }
            Ok(None) => self.end(),
            Ok(Some(Ok(event))) => {
                let mut out = Vec::new();
                let result = self.decoder.event(&event, &self.endpoint, &mut out);
                self.queue.extend(out.into_iter().map(Ok));
                match result {
                    Err(error) => self.fail(error),
                    Ok(()) if self.decoder.is_complete() => self.end(),
                    Ok(()) => {}
                }
            }
            Ok(Some(Err(EventStreamError::Transport(error)))) => {
                if self.decoder.progress() == Progress::Finished {
                    self.end();
                } else {
                    let error = self.endpoint.broken(format!(
                        "the connection broke before the reply finished ({})",
                        super::http::describe_reqwest(&error)
                    ));
                    self.fail(error);
                }
            }
            Ok(Some(Err(EventStreamError::Utf8(_)))) => {
                self.fail(ProviderError::Protocol {
                    message: "the stream is not valid UTF-8".to_owned(),
                });
            }
            Ok(Some(Err(EventStreamError::Parser(error)))) => {
                let message = format!("the stream is not valid server-sent events ({error})");
                self.fail(ProviderError::Protocol {
                    message: self.endpoint.redact(&message),
                });
            }
        }
    }

    /// The body ended (or the provider marked the end): judge the reply.
    fn end(&mut self) {
        self.phase = Phase::Finished;
        match self.decoder.progress() {
            Progress::Nothing => self.queue.push_back(Err(ProviderError::EmptyResponse)),
            Progress::Partial => self.queue.push_back(Err(self.endpoint.cut())),
            Progress::Finished => {
                let mut out = Vec::new();
                self.decoder.finish(&mut out);
                self.queue.extend(out.into_iter().map(Ok));
            }
        }
    }

    /// Stops reading; the error is yielded after what was decoded before it.
    fn fail(&mut self, error: ProviderError) {
        self.phase = Phase::Finished;
        self.queue.push_back(Err(error));
    }

    /// The wait before another attempt, if this error allows one.
    fn retry_wait(&self, error: &ProviderError) -> Option<Duration> {
        if self.yielded || !error.is_retryable() {
            return None;
        }
        self.policy
            .delay(self.retries, error.retry_after(), jitter_unit())
    }
}

type SseError = eventsource_stream::EventStreamError<reqwest::Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy {
            max_retries: 10,
            base: Duration::from_millis(100),
            cap: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(5),
        };
        assert_eq!(policy.delay(0, None, 1.0), Some(Duration::from_millis(100)));
        assert_eq!(policy.delay(1, None, 1.0), Some(Duration::from_millis(200)));
        assert_eq!(policy.delay(2, None, 1.0), Some(Duration::from_millis(400)));
        assert_eq!(policy.delay(3, None, 1.0), Some(Duration::from_millis(500)));
        assert_eq!(policy.delay(9, None, 1.0), Some(Duration::from_millis(500)));
        assert_eq!(policy.delay(2, None, 0.5), Some(Duration::from_millis(200)));
        assert_eq!(policy.delay(2, None, 0.0), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_is_honoured_within_the_limit() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(7)), 0.0),
            Some(Duration::from_secs(7))
        );
        assert_eq!(policy.delay(0, Some(Duration::from_secs(3600)), 0.0), None);
    }

    #[test]
    fn retries_stop_after_max() {
        let policy = RetryPolicy::default();
        assert!(policy.delay(2, None, 0.3).is_some());
        assert_eq!(policy.delay(3, None, 0.3), None);
        assert_eq!(RetryPolicy::never().delay(0, None, 0.3), None);
    }

    #[test]
    fn jitter_draws_stay_in_range_and_vary() {
        let draws: Vec<f64> = (0..64).map(|_| jitter_unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        assert!(draws.iter().any(|u| (u - draws[0]).abs() > f64::EPSILON));
    }
}
