//! The embedded local model (DESIGN §8): a GGUF run in-process on the CPU
//! with llama.cpp (the `llama-cpp-2` crate), the offline default provider.
//!
//! Owns the llama.cpp backend (initialised once per process, its logging
//! silenced so nothing reaches the terminal), the loaded model and one
//! engine thread per [`LocalProvider`] that owns the context and KV cache.
//! Requests reach that thread over a channel and answers come back as an
//! [`EventStream`]; dropping the stream stops generation at the next token.
//! The KV cache is kept between requests and the longest shared token prefix
//! is re-used; re-used tokens are reported as `cache_read_tokens`. With a
//! state directory ([`LocalConfig::state_dir`]) the cache is also saved
//! after each request and re-used by later processes ([`kv_state`]).
//!
//! Loading is blocking (~0.2-0.6 s, mmap): call [`LocalProvider::load`] from
//! a blocking task or the CLI, never from the UI task. The model's own
//! tokenizer is available as a [`TokenCounter`](crate::tokens::TokenCounter)
//! through [`LocalProvider::tokenizer`] or [`LocalTokenizer::load`].
//! [`model_file`] obtains the default GGUF.

pub mod chatml;
pub mod converted;
mod engine;
pub mod file_sha;
pub mod kv_state;
pub mod model_file;
pub mod quantize;
pub mod staging;
mod tokenizer;
pub mod utf8;

pub use tokenizer::LocalTokenizer;

use super::{EventStream, Provider, ProviderError};
use crate::domain::ChatRequest;
use engine::{Command, Engine, Job, Shared};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Settings of the embedded model.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalConfig {
    /// The GGUF file (the pulled default, or `--model-path`).
    pub model_path: PathBuf,
    /// CPU threads for prefill and decode. Default 1: on a busy 2-core
    /// machine ggml's spinning thread pool with 2 threads collapsed to
    /// 0.5 tok/s where 1 thread gave ~50 (FACTS.md).
    pub threads: u32,
    /// Upper bound for the context window in tokens; the window is the
    /// smaller of this and the GGUF's training context (8192 for SmolLM2),
    /// which llama.cpp rounds up to a multiple of 256 (see
    /// [`LocalProvider::context_window`]). `None` uses the GGUF's value. The
    /// KV cache takes ~23 KB per token for SmolLM2-135M (~190 MB at 8192).
    pub max_context: Option<u32>,
    /// Default sampling temperature when a request has none; `None` or
    /// `<= 0` samples greedily.
    pub temperature: Option<f32>,
    /// Repetition penalty over the last 256 generated tokens (1.0 = off).
    pub repeat_penalty: f32,
    /// Seed of the random draw when sampling with a temperature.
    pub seed: u32,
    /// Where the KV state is saved after each request and looked up on the
    /// next (see [`kv_state`]); `None` keeps it in memory only.
    pub state_dir: Option<PathBuf>,
    /// Byte cap of `state_dir` (least recently used states go first);
    /// default [`kv_state::DEFAULT_CAP_BYTES`] (256 MB). 0 saves none and
    /// removes the states saved there before (at start).
    pub state_cap_bytes: u64,
}

impl LocalConfig {
    /// Defaults for `model_path`: 1 thread, the GGUF's window, greedy,
    /// repetition penalty 1.1 over the last 256 generated tokens (over 64
    /// tokens SmolLM2-135M repeated a 110-token paragraph until the output
    /// cap; 1.15 changed short factual answers).
    #[must_use]
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            threads: 1,
            max_context: None,
            temperature: None,
            repeat_penalty: 1.1,
            seed: 0x5eed,
            state_dir: None,
            state_cap_bytes: kv_state::DEFAULT_CAP_BYTES,
        }
    }
}

/// Sampling of one request.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sampling {
    temperature: Option<f32>,
    repeat_penalty: f32,
    seed: u32,
}

/// What the engine measured for the last request (for `strata doctor`,
/// benchmarks and tests).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalStats {
    /// Tokens of the whole prompt.
    pub prompt_tokens: usize,
    /// Prompt tokens whose KV entries were re-used (from the previous
    /// request or a saved state).
    pub reused_tokens: usize,
    /// Of those, tokens loaded from a saved state (0 when none was).
    pub restored_tokens: usize,
    /// Wall time of finding, checking and loading the saved state.
    pub state_load: Duration,
    /// Prompt tokens actually run through the model (`prompt_tokens -
    /// reused_tokens` unless cancelled during prefill).
    pub prefilled_tokens: usize,
    /// Tokens sampled, including the end-of-turn token.
    pub completion_tokens: usize,
    /// Tokens in the KV cache afterwards.
    pub kv_tokens: usize,
    /// Wall time of the prefill.
    pub prefill: Duration,
    /// Wall time from the end of the prefill to the last token.
    pub generation: Duration,
    /// From the request (`Provider::stream`) to the first text delta.
    pub first_token: Option<Duration>,
    /// `stop`, `length` or `cancelled`.
    pub finish_reason: Option<&'static str>,
}

impl LocalStats {
    /// Prefill speed in tokens per second (0 when nothing was prefilled).
    #[must_use]
    pub fn prefill_rate(&self) -> f64 {
        engine::rate(self.prefilled_tokens, self.prefill)
    }

    /// Generation speed in tokens per second.
    #[must_use]
    pub fn decode_rate(&self) -> f64 {
        engine::rate(self.completion_tokens, self.generation)
    }
}

/// One save of the KV state to the state directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateSave {
    /// Tokens saved.
    pub tokens: usize,
    /// Size of the saved state in bytes (~23 KB a token for SmolLM2-135M).
    pub bytes: u64,
    /// Wall time of the save (llama.cpp's write, the checksum, the renames
    /// and the cap).
    pub duration: Duration,
}

/// The embedded model as a [`Provider`]. Dropping it stops the current
/// request at its next token, lets the engine thread save the KV state and
/// waits for the thread to end.
pub struct LocalProvider {
    jobs: mpsc::Sender<Command>,
    thread: Option<std::thread::JoinHandle<()>>,
    tokenizer: LocalTokenizer,
    model_name: String,
    context_window: u32,
    sampling: Sampling,
    shared: Shared,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider")
            .field("model_name", &self.model_name)
            .field("context_window", &self.context_window)
            .finish_non_exhaustive()
    }
}

impl LocalProvider {
    /// Loads the model, creates its context (window and threads from
    /// `config`) and starts the engine thread. Blocking.
    ///
    /// # Errors
    /// `ProviderError::Local` when the file is missing or not a GGUF
    /// llama.cpp can run, or the context cannot be created.
    pub fn load(config: &LocalConfig) -> Result<Self, ProviderError> {
        let started = Instant::now();
        let loaded = load_model(&config.model_path)?;
        let backend = backend()?;
        let trained = loaded.model.n_ctx_train();
        let window = config.max_context.map_or(trained, |cap| cap.min(trained));
        let n_ctx = NonZeroU32::new(window)
            .ok_or_else(|| local("the context window is 0 tokens; set a larger limit"))?;
        let threads = i32::try_from(config.threads.max(1)).unwrap_or(1);
        let chunk = u32::try_from(engine::PREFILL_CHUNK).unwrap_or(512);
        let params = LlamaContextParams::default()
            .with_n_ctx(Some(n_ctx))
            .with_n_batch(chunk)
            .with_n_ubatch(chunk)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);

        let tokenizer = LocalTokenizer::new(Arc::clone(&loaded.model), loaded.id);
        let shared = Shared::default();
        let (jobs, job_queue) = mpsc::channel::<Command>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<u32, ProviderError>>(1);
        let model = loaded.model;
        let engine_tokenizer = tokenizer.clone();
        let engine_shared = shared.clone();
        let pruned = Arc::clone(&shared.pruned);
        let state = config
            .state_dir
            .clone()
            .map(|dir| (dir, config.model_path.clone(), config.state_cap_bytes));
        let thread = std::thread::Builder::new()
            .name("strata-llama".to_owned())
            .spawn(move || {
                let created = {
                    let _guard = LOAD_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
                    model.new_context(backend, params)
                };
                let ctx = match created {
                    Ok(ctx) => ctx,
                    Err(error) => {
                        let _ = ready_tx.send(Err(local(&format!(
                            "cannot create a context of {window} tokens ({error}); try a smaller window"
                        ))));
                        return;
                    }
                };
                let mut engine = Engine::new(&model, engine_tokenizer, ctx, engine_shared);
                let _ = ready_tx.send(Ok(u32::try_from(engine.window()).unwrap_or(u32::MAX)));
                if let Some(store) = state.and_then(|(dir, file, cap)| open_store(&dir, &file, cap, pruned)) {
                    engine.set_store(store);
                }
                while let Ok(command) = job_queue.recv() {
                    match command {
                        Command::Run(job) => engine.run(&job),
                        Command::Sync(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .map_err(|error| local(&format!("cannot start the model thread ({error})")))?;
        let context_window = ready_rx
            .recv()
            .map_err(|_| local("the model thread stopped while loading"))??;

        tracing::info!(
            model = loaded.name.as_str(),
            context_window,
            threads,
            load_ms = started.elapsed().as_millis(),
            "local model loaded"
        );
        Ok(Self {
            jobs,
            thread: Some(thread),
            tokenizer,
            model_name: loaded.name,
            context_window,
            sampling: Sampling {
                temperature: config.temperature,
                repeat_penalty: config.repeat_penalty,
                seed: config.seed,
            },
            shared,
        })
    }

    /// The model's tokenizer (exact counts for this provider).
    #[must_use]
    pub fn tokenizer(&self) -> LocalTokenizer {
        self.tokenizer.clone()
    }

    /// The context window in use, in tokens: `max_context` (or the GGUF's
    /// training context) rounded up by llama.cpp to a multiple of 256, but
    /// never beyond the training context.
    #[must_use]
    pub fn context_window(&self) -> u32 {
        self.context_window
    }

    /// The model file's name without `.gguf` (e.g. `SmolLM2-135M-Instruct.Q4_1`).
    #[must_use]
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// Measurements of the last request that reached the engine, once it
    /// finished (set before its `Usage` event is sent).
    #[must_use]
    pub fn last_stats(&self) -> Option<LocalStats> {
        self.shared
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The last save of the KV state to the state directory, if any.
    /// Saves run after a request's reply; [`LocalProvider::wait_idle`]
    /// waits for them.
    #[must_use]
    pub fn last_state_save(&self) -> Option<StateSave> {
        self.shared
            .saves
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Blocks until the engine thread has finished everything queued so
    /// far, the KV state save after the last reply included.
    pub fn wait_idle(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        if self.jobs.send(Command::Sync(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

impl Drop for LocalProvider {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Relaxed);
        // Closing the queue ends the thread after what it holds.
        self.jobs = mpsc::channel().0;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The state store of the model file `file` under `dir`, or `None` (logged)
/// when the file cannot be hashed or the directory not created, or when
/// `cap` is 0 (the states saved under `dir` are then removed).
fn open_store(
    dir: &Path,
    file: &Path,
    cap: u64,
    pruned: Arc<std::sync::Mutex<kv_state::Pruned>>,
) -> Option<kv_state::StateStore> {
    let started = Instant::now();
    if cap == 0 {
        let removed = kv_state::clear(dir);
        if removed > 0 {
            tracing::info!(dir = %dir.display(), bytes = removed, "kv states removed: [providers.local] kv_state_max_mb = 0");
        }
        return None;
    }
    if let Err(error) = kv_state::create_private_dir(dir) {
        tracing::warn!(dir = %dir.display(), %error, "the kv state is not saved: cannot create its directory");
        return None;
    }
    let sha256 = match file_sha::cached_sha256(file, &dir.join("sha256.json")) {
        Ok(sha256) => sha256,
        Err(error) => {
            tracing::warn!(%error, "the kv state is not saved: the model file cannot be hashed");
            return None;
        }
    };
    match kv_state::StateStore::open(dir, &sha256, cap, pruned) {
        Ok(store) => {
            tracing::debug!(
                hash_ms = started.elapsed().as_millis(),
                "kv state directory ready"
            );
            Some(store)
        }
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "the kv state is not saved: cannot create its directory");
            None
        }
    }
}

impl Provider for LocalProvider {
    fn name(&self) -> &'static str {
        "local"
    }

    /// Once a process: the saved KV states the cap removed (at start, when
    /// the cap was lowered, or after a save).
    fn take_notice(&self) -> Option<String> {
        let sentence = self
            .shared
            .pruned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sentence()?;
        (!self.shared.pruned_said.swap(true, Ordering::Relaxed)).then_some(sentence)
    }

    /// Renders the request as ChatML and queues it for the engine thread
    /// (requests run one at a time, in order). `request.temperature`
    /// overrides the configured one; `tools` are not offered to the model.
    /// Generation ends at the end-of-turn token (`stop`), at `max_tokens` or
    /// at the end of the window (`length`). Errors: `ContextOverflow` when
    /// the prompt alone does not fit the window, `Local` when llama.cpp
    /// fails.
    fn stream(&self, request: ChatRequest) -> EventStream {
        let (events, stream) = futures::channel::mpsc::unbounded();
        // The engine thread enters this span (a child of the caller's) for the job's log lines.
        let span = tracing::info_span!("request", provider = "local", model = self.model_name.as_str());
        span.in_scope(|| {
            tracing::info!(
                messages = request.messages.len(),
                max_tokens = request.max_tokens,
                "request"
            );
        });
        let job = Job {
            prompt: chatml::render(&request),
            max_tokens: request.max_tokens,
            sampling: Sampling {
                temperature: request.temperature.or(self.sampling.temperature),
                ..self.sampling
            },
            submitted_at: Instant::now(),
            events,
            span,
        };
        if let Err(mpsc::SendError(Command::Run(job))) = self.jobs.send(Command::Run(job)) {
            let _ = job
                .events
                .unbounded_send(Err(local("the model thread has stopped; restart strata")));
        }
        Box::pin(stream)
    }
}

/// The process-wide llama.cpp backend, initialised (and silenced) once.
static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

/// Serialises model loading and context creation across providers.
static LOAD_LOCK: Mutex<()> = Mutex::new(());

fn backend() -> Result<&'static LlamaBackend, ProviderError> {
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|error| error.to_string())?;
            backend.void_logs();
            Ok(backend)
        })
        .as_ref()
        .map_err(|message| local(&format!("cannot initialise llama.cpp ({message})")))
}

/// A loaded model and the names derived from it.
struct LoadedModel {
    model: Arc<LlamaModel>,
    name: String,
    id: String,
}

fn load_model(path: &Path) -> Result<LoadedModel, ProviderError> {
    if !path.is_file() {
        return Err(local(&format!(
            "no model file at {}; run `strata model pull` or pass --model-path FILE.gguf",
            path.display()
        )));
    }
    let backend = backend()?;
    let model = {
        let _guard = LOAD_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
    }
    .map_err(|error| {
        tracing::warn!(path = %path.display(), %error, "llama.cpp could not load the model");
        local(&format!(
            "llama.cpp cannot load {} as a model, so it is damaged or of a kind llama.cpp does not support; \
             use another GGUF file",
            path.display()
        ))
    })?;
    let name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let meta = |key: &str| {
        model
            .meta_val_str(key)
            .ok()
            .filter(|value| !value.trim().is_empty())
    };
    let family = match (meta("general.basename"), meta("general.size_label")) {
        (Some(base), Some(size)) => Some(format!("{base} {size}")),
        (base, _) => base.or_else(|| meta("general.name")),
    };
    let id = tokenizer_id(family.as_deref().unwrap_or(&name));
    Ok(LoadedModel {
        model: Arc::new(model),
        name,
        id,
    })
}

/// The tokenizer id: a slug of the GGUF's `general.basename` and
/// `general.size_label` (`smollm2` + `135M` → `smollm2-135m`), else of
/// `general.name`, else of the file name.
fn tokenizer_id(name: &str) -> String {
    let mut id = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            id.push(c.to_ascii_lowercase());
        } else if !id.is_empty() && !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id.trim_end_matches('-');
    if id.is_empty() {
        "local-model".to_owned()
    } else {
        id.to_owned()
    }
}

fn local(message: &str) -> ProviderError {
    ProviderError::Local {
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_id_is_a_slug_of_the_model_name() {
        assert_eq!(tokenizer_id("smollm2 135M"), "smollm2-135m");
        assert_eq!(tokenizer_id("  Qwen2.5 (0.5B)  "), "qwen2.5-0.5b");
        assert_eq!(tokenizer_id("???"), "local-model");
    }

    #[test]
    fn a_missing_file_is_a_clear_local_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("model.gguf");
        let error = LocalProvider::load(&LocalConfig::new(missing)).unwrap_err();
        assert!(matches!(error, ProviderError::Local { .. }));
        assert!(error.to_string().contains("strata model pull"), "{error}");
    }

    #[test]
    fn defaults_are_one_thread_and_greedy() {
        let config = LocalConfig::new("m.gguf");
        assert_eq!(config.threads, 1);
        assert_eq!(config.temperature, None);
        assert_eq!(config.max_context, None);
    }
}
