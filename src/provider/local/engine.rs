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
//! With a [`StateStore`], a job first looks on disk for a saved state that
//! shares a longer prefix with its prompt than the cache does, and loads it
//! (a new process resumes a conversation without prefilling it again); after
//! the job, once its reply is sent, the cache is saved there. A state that
//! cannot be used is logged and ignored.
//!
//! Each job logs, in its request's span, the prefill (prompt and re-used
//! tokens), the first token and the end with its timings and speeds, or
//! its error; never the prompt or the reply text.

use super::chatml::ChatmlPrompt;
use super::kv_state::{SaveError, StateStore};
use super::tokenizer::LocalTokenizer;
use super::utf8::Utf8Carry;
use super::{LocalStats, Sampling, StateSave};
use crate::domain::{FinishReason, ProviderUsage, StreamEvent};
use crate::provider::ProviderError;
use futures::channel::mpsc::UnboundedSender;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Prompt tokens decoded per `decode` call (llama.cpp lowers it to the
/// window when the window is smaller). Also the cancellation grain of a long
/// prefill.
pub(super) const PREFILL_CHUNK: usize = 256;

/// Tokens of the repetition-penalty window (generated tokens only: the
/// prompt's own `<|im_end|>` markers must not be penalised, or the model
/// could not end its turn).
const PENALTY_WINDOW: i32 = 256;

/// A saved state is loaded only when it re-uses at least this many more
/// tokens than the cache already holds, and at least one in
/// [`RESTORE_SHARE`] of its own tokens: a load costs about 1 ms per 40
/// tokens of the state, a prefill 3 to 10 ms per token.
const MIN_RESTORE_GAIN: usize = 16;
/// See [`MIN_RESTORE_GAIN`].
const RESTORE_SHARE: usize = 32;

/// Caches shorter than this are not saved (prefilling them is quicker
/// than a save and a load).
const MIN_SAVE_TOKENS: usize = 32;

/// Saved states tried per request before prefilling from scratch.
const MAX_RESTORE_TRIES: usize = 3;

/// What the engine shares with its provider.
#[derive(Clone, Default)]
pub(super) struct Shared {
    /// The last request's measurements.
    pub stats: Arc<Mutex<Option<LocalStats>>>,
    /// The last save of the KV state.
    pub saves: Arc<Mutex<Option<StateSave>>>,
    /// Set when the provider is dropped: the current job stops at the next
    /// token, as if its stream had been dropped.
    pub stopping: Arc<AtomicBool>,
    /// What the state directory's cap removed.
    pub pruned: Arc<Mutex<super::kv_state::Pruned>>,
    /// The removals already said (said once a process).
    pub pruned_said: Arc<AtomicBool>,
}

/// What the engine thread is asked to do.
pub(super) enum Command {
    /// Answer a request.
    Run(Job),
    /// Answer once everything queued before, state saves included, is done.
    Sync(std::sync::mpsc::SyncSender<()>),
}

/// The state directory of this model and what was last saved to or loaded
/// from it.
struct Persist {
    store: StateStore,
    saved: Vec<LlamaToken>,
    /// Tokens of the first state found larger than the cap: longer ones
    /// are not written (a state grows with its tokens), and that is logged
    /// once.
    too_big_at: Option<usize>,
}

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
    shared: Shared,
    persist: Option<Persist>,
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
        shared: Shared,
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
            shared,
            persist: None,
        }
    }

    /// Saves states to and loads them from `store` from now on.
    pub(super) fn set_store(&mut self, store: StateStore) {
        self.persist = Some(Persist {
            store,
            saved: Vec::new(),
            too_big_at: None,
        });
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
            Ok(Ok(())) => {
                self.save_state();
                return;
            }
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

        self.restore(&tokens, &mut stats);
        let reused = self.keep_prefix(&tokens);
        stats.reused_tokens = reused;
        tracing::info!(
            prompt_tokens = tokens.len(),
            reused_tokens = reused,
            restored_tokens = stats.restored_tokens,
            queued_ms = job.submitted_at.elapsed().as_millis(),
            "prefill"
        );
        // The model thread took the job: what follows is the prefill.
        let _ = job.events.unbounded_send(Ok(StreamEvent::Connected));
        let prefill_started = Instant::now();
        let total = tokens.len() as u64;
        let progress = |done: usize| {
            let _ = job.events.unbounded_send(Ok(StreamEvent::Prefill {
                done: done as u64,
                total,
            }));
        };
        progress(reused);
        for chunk in tokens[reused..].chunks(self.chunk) {
            if self.cancelled(job) {
                stats.prefill = prefill_started.elapsed();
                stats.kv_tokens = self.cached.len();
                stats.finish_reason = Some("cancelled");
                self.publish(job, stats);
                return Ok(());
            }
            let last_chunk = self.cached.len() + chunk.len() == tokens.len();
            self.decode(chunk, last_chunk)?;
            stats.prefilled_tokens += chunk.len();
            progress(self.cached.len());
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
            if self.cancelled(job) {
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

    /// Whether `job` should stop: its stream was dropped or the provider is.
    fn cancelled(&self, job: &Job) -> bool {
        job.events.is_closed() || self.shared.stopping.load(Ordering::Relaxed)
    }

    /// Loads the saved state sharing the longest prefix with `tokens` when
    /// it re-uses more than the cache does. A state that fails its check or
    /// llama.cpp's load is logged and removed; after a failed load the cache
    /// is cleared.
    fn restore(&mut self, tokens: &[LlamaToken], stats: &mut LocalStats) {
        let Some(store) = self.persist.as_ref().map(|p| p.store.clone()) else {
            return;
        };
        let started = Instant::now();
        let usable = tokens.len().saturating_sub(1);
        let in_memory = common_prefix(&self.cached, tokens).min(usable);
        let ids: Vec<i32> = tokens.iter().map(|t| t.0).collect();
        let candidates = store.candidates(&ids, in_memory + MIN_RESTORE_GAIN, self.n_ctx);
        let worth_it = candidates
            .into_iter()
            .filter(|(shared, entry)| shared * RESTORE_SHARE >= entry.tokens.len());
        for (shared, entry) in worth_it.take(MAX_RESTORE_TRIES) {
            let path = match store.verify(&entry) {
                Ok(path) => path,
                Err(problem) => {
                    tracing::warn!(entry = entry.id.as_str(), %problem, "kv state ignored and removed");
                    continue;
                }
            };
            self.reset();
            let problem = match self.ctx.state_seq_load_file(&path, 0, entry.tokens.len()) {
                Ok((loaded, _)) if loaded.iter().map(|t| t.0).eq(entry.tokens.iter().copied()) => {
                    self.cached = loaded;
                    store.touch(&entry.id);
                    if let Some(persist) = self.persist.as_mut() {
                        persist.saved.clone_from(&self.cached);
                    }
                    stats.restored_tokens = shared.min(usable);
                    stats.state_load = started.elapsed();
                    tracing::info!(
                        entry = entry.id.as_str(),
                        state_tokens = entry.tokens.len(),
                        restored_tokens = stats.restored_tokens,
                        bytes = entry.kv_size,
                        load_ms = stats.state_load.as_millis(),
                        "kv state restored"
                    );
                    return;
                }
                Ok(_) => "llama.cpp read other tokens than were saved".to_owned(),
                Err(error) => format!("llama.cpp could not load it ({error})"),
            };
            tracing::warn!(entry = entry.id.as_str(), %problem, "kv state ignored and removed");
            self.reset();
            store.remove(&entry.id);
        }
    }

    /// Saves the cache to the state directory unless it is short, already
    /// saved, or longer than a state already found too big for the cap. A
    /// failure is logged (with the file and the OS reason; a state too big
    /// for the cap once); nothing else changes.
    fn save_state(&mut self) {
        let Some(persist) = self.persist.as_mut() else {
            return;
        };
        if self.cached.len() < MIN_SAVE_TOKENS
            || persist.saved == self.cached
            || persist.too_big_at.is_some_and(|at| self.cached.len() >= at)
        {
            return;
        }
        let started = Instant::now();
        let staged = match persist.store.create_staging() {
            Ok(staged) => staged,
            Err(error) => {
                tracing::warn!(%error, "kv state not saved");
                return;
            }
        };
        let tokens: Vec<i32> = self.cached.iter().map(|t| t.0).collect();
        let result = self
            .ctx
            .state_seq_save_file(&staged, 0, &self.cached)
            .map_err(|error| {
                SaveError::Io(format!(
                    "llama.cpp could not write {} ({error})",
                    staged.display()
                ))
            })
            .and_then(|_| persist.store.commit(&staged, &tokens));
        match result {
            Ok(bytes) => {
                persist.saved.clone_from(&self.cached);
                let save = StateSave {
                    tokens: tokens.len(),
                    bytes,
                    duration: started.elapsed(),
                };
                tracing::info!(
                    tokens = save.tokens,
                    bytes = save.bytes,
                    save_ms = save.duration.as_millis(),
                    "kv state saved"
                );
                *self.shared.saves.lock().unwrap_or_else(PoisonError::into_inner) = Some(save);
            }
            Err(error) => {
                let _ = std::fs::remove_file(&staged);
                // Only shorter states are tried after one too big for the cap.
                let first_too_big = matches!(error, SaveError::TooBig { .. })
                    && persist.too_big_at.replace(tokens.len()).is_none();
                if first_too_big || !matches!(error, SaveError::TooBig { .. }) {
                    tracing::warn!(%error, "kv state not saved");
                }
            }
        }
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
            restored_tokens = stats.restored_tokens,
            completion_tokens = stats.completion_tokens,
            prefill_tokens_per_s = format_args!("{:.1}", stats.prefill_rate()),
            decode_tokens_per_s = format_args!("{:.1}", stats.decode_rate()),
            "{message}"
        );
        *self.shared.stats.lock().unwrap_or_else(PoisonError::into_inner) = Some(stats);
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
