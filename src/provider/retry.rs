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

use super::http::{ByteStream, Endpoint};
use super::{EventStream, ProviderError};
use crate::domain::StreamEvent;
use std::collections::VecDeque;
use std::future::Future;
use std::time::Duration;

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
}

/// The stream of one logical request: `open` sends an attempt and returns
/// its body, `D` decodes it, and retryable failures before the first
/// yielded event start a new attempt after the policy's wait.
pub(crate) fn drive<D, F, Fut>(
    endpoint: Endpoint,
    policy: RetryPolicy,
    idle: Duration,
    open: F,
) -> EventStream
where
    D: Decoder,
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<ByteStream, ProviderError>> + Send,
{
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
    };
    Box::pin(futures::stream::unfold(driver, |mut driver| async move {
        let item = driver.next().await?;
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
                    self.yielded = true;
                    return Some(Ok(event));
                }
                Some(Err(error)) => {
                    self.queue.clear();
                    self.phase = Phase::Finished;
                    match self.retry_wait(&error) {
                        Some(wait) => {
                            tokio::time::sleep(wait).await;
                            self.retries += 1;
                            self.phase = Phase::Connect;
                            continue;
                        }
                        None => return Some(Err(error)),
                    }
                }
                None => {}
            }
            match &mut self.phase {
                Phase::Finished => return None,
                Phase::Connect => match (self.open)().await {
                    Ok(body) => {
                        self.decoder = D::default();
                        self.phase = Phase::Read(Box::new(eventsource_stream::EventStream::new(body)));
                    }
                    Err(error) => self.queue.push_back(Err(error)),
                },
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
                let error = self.endpoint.network(format!("no data for {:?}", self.idle));
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
                    let error = self.endpoint.network(format!(
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
