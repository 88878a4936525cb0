//! The engine thread: the one place where llama.cpp runs.
//!
//! Owns the `LlamaContext` (which borrows the shared model and is not Sync)
//! and its KV cache, and answers [`Job`]s one at a time in arrival order.
//! Events go back on the job's channel; a closed channel (the caller dropped
//! the stream) stops the job before the next prefill chunk or token.
//!
//! Invariant: `cached` is exactly the token sequence whose keys and values
//! are in the KV cache, at positions `0..cached.len()` of sequence 0. A new
//! prompt keeps the longest common prefix with it, removes the rest from the
//! cache and prefills only the remainder (prefix re-use, DESIGN §8). After
//! any llama.cpp failure the cache is cleared, so the invariant holds again.
//!
//! Each job logs, in its request's span, the prefill (prompt and re-used
//! tokens), the first token and the end with its timings and speeds, or
//! its error; never the prompt or the reply text.

use super::chatml::ChatmlPrompt;
use super::tokenizer::LocalTokenizer;
use super::utf8::Utf8Carry;
use super::{LocalStats, Sampling};
use crate::domain::{FinishReason, ProviderUsage, StreamEvent};
use crate::provider::ProviderError;
use futures::channel::mpsc::UnboundedSender;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Prompt tokens decoded per `decode` call (llama.cpp lowers it to the
/// window when the window is smaller). Also the cancellation grain of a long
/// prefill.
pub(super) const PREFILL_CHUNK: usize = 256;

/// Tokens of the repetition-penalty window (generated tokens only: the
/// prompt's own `<|im_end|>` markers must not be penalised, or the model
/// could not end its turn).
const PENALTY_WINDOW: i32 = 64;

/// One request for the engine.
pub(super) struct Job {
    /// The rendered prompt.
    pub prompt: ChatmlPrompt,
    /// Output limit (`max_tokens`).
    pub max_tokens: u64,
    /// Sampling for this request.
    pub sampling: Sampling,
    /// When the caller asked (time to first token is measured from here).
    pub submitted_at: Instant,
    /// Where events go; closed when the caller dropped the stream.
    pub events: UnboundedSender<Result<StreamEvent, ProviderError>>,
    /// The request's log span (`request{provider="local", model}`).
    pub span: tracing::Span,
}

/// What the engine thread owns.
pub(super) struct Engine<'m> {
    model: &'m LlamaModel,
    tokenizer: LocalTokenizer,
    ctx: LlamaContext<'m>,
    batch: LlamaBatch<'static>,
    cached: Vec<LlamaToken>,
    n_ctx: usize,
    chunk: usize,
    stats: Arc<Mutex<Option<LocalStats>>>,
}

/// How a job ended without an error.
enum Outcome {
    Finished(&'static str),
    Cancelled,
}

impl<'m> Engine<'m> {
    pub(super) fn new(
        model: &'m LlamaModel,
        tokenizer: LocalTokenizer,
        ctx: LlamaContext<'m>,
        stats: Arc<Mutex<Option<LocalStats>>>,
    ) -> Self {
        // llama.cpp rounds the window up to a multiple of 256; positions past
        // the training context are not used.
        let n_ctx = usize::try_from(ctx.n_ctx().min(model.n_ctx_train())).unwrap_or(usize::MAX);
        let chunk = usize::try_from(ctx.n_batch())
            .unwrap_or(PREFILL_CHUNK)
            .clamp(1, PREFILL_CHUNK);
        Self {
            model,
            tokenizer,
            ctx,
            batch: LlamaBatch::new(chunk, 1),
            cached: Vec::new(),
            n_ctx,
            chunk,
            stats,
        }
    }

    /// The window in tokens.
    pub(super) fn window(&self) -> usize {
        self.n_ctx
    }

    /// Runs one job to its end, sending its events. A panic inside is
    /// reported as an error on the job's stream and the cache is cleared, so
    /// the engine keeps serving.
    pub(super) fn run(&mut self, job: &Job) {
        let _entered = job.span.enter();
        if job.events.is_closed() {
            tracing::info!("cancelled before it started");
            return;
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.generate(job)));
        let error = match result {
            Ok(Ok(())) => return,
            Ok(Err(error)) => error,
            Err(_) => {
                self.reset();
                local("the model thread failed unexpectedly; the cache was cleared, try again")
            }
        };
        let duration_ms = job.submitted_at.elapsed().as_millis();
        if error.is_overflow() {
            tracing::warn!(duration_ms, %error, "failed");
        } else {
            tracing::error!(duration_ms, %error, "failed");
        }
        let _ = job.events.unbounded_send(Err(error));
    }

    fn generate(&mut self, job: &Job) -> Result<(), ProviderError> {
        let tokens = self.tokenizer.tokenize_prompt(&job.prompt);
        if tokens.len() >= self.n_ctx {
            return Err(ProviderError::ContextOverflow {
                message: format!(
                    "the prompt is {} tokens and the local model's window is {}",
                    tokens.len(),
                    self.n_ctx
                ),
                window: u64::try_from(self.n_ctx).ok(),
                prompt_tokens: u64::try_from(tokens.len()).ok(),
            });
        }
        let mut stats = LocalStats {
            prompt_tokens: tokens.len(),
            ..LocalStats::default()
        };

        let reused = self.keep_prefix(&tokens);
        stats.reused_tokens = reused;
        tracing::info!(
            prompt_tokens = tokens.len(),
            reused_tokens = reused,
            queued_ms = job.submitted_at.elapsed().as_millis(),
            "prefill"
        );
        // The model thread took the job: what follows is the prefill.
        let _ = job.events.unbounded_send(Ok(StreamEvent::Connected));
        let prefill_started = Instant::now();
        for chunk in tokens[reused..].chunks(self.chunk) {
            if job.events.is_closed() {
                stats.prefill = prefill_started.elapsed();
                stats.kv_tokens = self.cached.len();
                stats.finish_reason = Some("cancelled");
                self.publish(job, stats);
                return Ok(());
            }
            let last_chunk = self.cached.len() + chunk.len() == tokens.len();
            self.decode(chunk, last_chunk)?;
            stats.prefilled_tokens += chunk.len();
        }
        stats.prefill = prefill_started.elapsed();

        let generation_started = Instant::now();
        let outcome = self.sample_loop(job, &mut stats)?;
        stats.generation = generation_started.elapsed();
        stats.kv_tokens = self.cached.len();
        let finish_reason = match outcome {
            Outcome::Finished(reason) => reason,
            Outcome::Cancelled => {
                stats.finish_reason = Some("cancelled");
                self.publish(job, stats);
                return Ok(());
            }
        };
        stats.finish_reason = Some(finish_reason);
        let usage = ProviderUsage {
            prompt_tokens: Some(stats.prompt_tokens as u64),
            completion_tokens: Some(stats.completion_tokens as u64),
            cache_read_tokens: Some(stats.reused_tokens as u64),
            cache_write_tokens: None,
            reasoning_tokens: None,
        };
        self.publish(job, stats);
        let _ = job.events.unbounded_send(Ok(StreamEvent::Usage(usage)));
        let _ = job.events.unbounded_send(Ok(StreamEvent::Done {
            finish_reason: Some(FinishReason::parse(finish_reason)),
        }));
        Ok(())
    }

    /// Samples, streams and feeds back tokens until end of turn, the limit,
    /// the window's end or cancellation. Expects the logits of the prompt's
    /// last token to be ready.
    fn sample_loop(&mut self, job: &Job, stats: &mut LocalStats) -> Result<Outcome, ProviderError> {
        let model = self.model;
        let mut sampler = build_sampler(model.n_vocab(), job.sampling);
        let vocab = model.vocab();
        let mut carry = Utf8Carry::new();
        let mut piece = Vec::with_capacity(16);
        loop {
            if stats.completion_tokens as u64 >= job.max_tokens {
                return self.flush(job, &mut carry, Outcome::Finished("length"));
            }
            let token = sampler.sample(&self.ctx, -1);
            stats.completion_tokens += 1;
            if vocab.is_eog(token) {
                return self.flush(job, &mut carry, Outcome::Finished("stop"));
            }
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, false, None);
            let text = carry.push(&piece);
            if !text.is_empty() {
                if stats.first_token.is_none() {
                    let ttft = job.submitted_at.elapsed();
                    stats.first_token = Some(ttft);
                    tracing::info!(ttft_ms = ttft.as_millis(), "first token");
                }
                if job
                    .events
                    .unbounded_send(Ok(StreamEvent::TextDelta { text }))
                    .is_err()
                {
                    return Ok(Outcome::Cancelled);
                }
            }
            if job.events.is_closed() {
                return Ok(Outcome::Cancelled);
            }
            if self.cached.len() >= self.n_ctx {
                return self.flush(job, &mut carry, Outcome::Finished("length"));
            }
            self.decode(&[token], true)?;
        }
    }

    /// Sends what the carry buffer still holds, then passes `outcome` on.
    fn flush(&self, job: &Job, carry: &mut Utf8Carry, outcome: Outcome) -> Result<Outcome, ProviderError> {
        let rest = carry.finish();
        if !rest.is_empty()
            && job
                .events
                .unbounded_send(Ok(StreamEvent::TextDelta { text: rest }))
                .is_err()
        {
            return Ok(Outcome::Cancelled);
        }
        Ok(outcome)
    }

    /// Trims the KV cache to the longest prefix shared with `tokens` (at
    /// least one token is always left to decode, so its logits exist) and
    /// returns how many tokens are re-used.
    fn keep_prefix(&mut self, tokens: &[LlamaToken]) -> usize {
        let keep = common_prefix(&self.cached, tokens).min(tokens.len().saturating_sub(1));
        if keep == self.cached.len() {
            return keep;
        }
        let start = u32::try_from(keep).unwrap_or(u32::MAX);
        match self.ctx.clear_kv_cache_seq(Some(0), Some(start), None) {
            Ok(true) => {
                self.cached.truncate(keep);
                keep
            }
            _ => {
                self.reset();
                0
            }
        }
    }

    /// Decodes `tokens` at the next positions; logits only for the last
    /// token, and only when `want_logits`.
    fn decode(&mut self, tokens: &[LlamaToken], want_logits: bool) -> Result<(), ProviderError> {
        self.batch.clear();
        let start = self.cached.len();
        for (offset, &token) in tokens.iter().enumerate() {
            let position = i32::try_from(start + offset).map_err(|_| local("position out of range"))?;
            let logits = want_logits && offset + 1 == tokens.len();
            self.batch
                .add(token, position, &[0], logits)
                .map_err(|error| local(&format!("cannot build a batch: {error}")))?;
        }
        if let Err(error) = self.ctx.decode(&mut self.batch) {
            self.reset();
            return Err(local(&format!(
                "llama.cpp could not decode ({error}); the cache was cleared, try again"
            )));
        }
        self.cached.extend_from_slice(tokens);
        Ok(())
    }

    fn reset(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }

    /// Makes `stats` the last request's and logs how the request ended.
    fn publish(&self, job: &Job, stats: LocalStats) {
        let finish_reason = stats.finish_reason.unwrap_or("stop");
        let message = if finish_reason == "cancelled" {
            "cancelled"
        } else {
            "done"
        };
        tracing::info!(
            duration_ms = job.submitted_at.elapsed().as_millis(),
            prefill_ms = stats.prefill.as_millis(),
            generation_ms = stats.generation.as_millis(),
            ttft_ms = stats.first_token.map(|t| t.as_millis()),
            finish_reason,
            prompt_tokens = stats.prompt_tokens,
            reused_tokens = stats.reused_tokens,
            completion_tokens = stats.completion_tokens,
            prefill_tokens_per_s = format_args!("{:.1}", stats.prefill_rate()),
            decode_tokens_per_s = format_args!("{:.1}", stats.decode_rate()),
            "{message}"
        );
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner) = Some(stats);
    }
}

/// The sampler chain: repetition penalty, then greedy, or with a positive
/// temperature top-k 40 / top-p 0.95 / min-p 0.05 / temperature / random
/// draw (llama.cpp's usual defaults).
fn build_sampler(n_vocab: i32, sampling: Sampling) -> LlamaSampler {
    let penalties = LlamaSampler::penalties(n_vocab, PENALTY_WINDOW, sampling.repeat_penalty, 0.0, 0.0);
    match sampling.temperature {
        Some(temperature) if temperature > 0.0 => LlamaSampler::chain_simple([
            penalties,
            LlamaSampler::top_k(40),
            LlamaSampler::top_p(0.95, 1),
            LlamaSampler::min_p(0.05, 1),
            LlamaSampler::temp(temperature),
            LlamaSampler::dist(sampling.seed),
        ]),
        _ => LlamaSampler::chain_simple([penalties, LlamaSampler::greedy()]),
    }
}

/// Length of the longest common prefix of two token sequences.
pub(super) fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn local(message: &str) -> ProviderError {
    ProviderError::Local {
        message: message.to_owned(),
    }
}

/// Tokens per second, or 0 for an empty interval.
#[must_use]
pub(super) fn rate(tokens: usize, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        tokens as f64 / seconds
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_counts_shared_leading_items() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4, 5]), 2);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3]), 2);
        assert_eq!(common_prefix::<i32>(&[], &[1]), 0);
        assert_eq!(common_prefix(&[9], &[1]), 0);
    }

    #[test]
    fn rate_of_an_empty_interval_is_zero() {
        assert!(rate(10, Duration::ZERO).abs() < f64::EPSILON);
        assert!((rate(10, Duration::from_secs(2)) - 5.0).abs() < 1e-9);
    }
}
