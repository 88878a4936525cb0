//! Which provider and model a command talks to (DESIGN §8 order): the
//! command line, then the config file, then the keys present in the
//! environment (Anthropic, then OpenAI), then the embedded model.

use super::{Config, ConfigError, ProviderConfig};

pub use crate::domain::ProviderKind;

/// What the config knows about each provider: its key and base-URL
/// variables and its default model.
impl ProviderKind {
    /// The variable holding the key when the config names none
    /// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`; none for the local model).
    #[must_use]
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("OPENAI_API_KEY"),
            Self::Anthropic => Some("ANTHROPIC_API_KEY"),
            Self::Local => None,
        }
    }

    /// The variable that overrides the base URL, as the official SDKs read it.
    #[must_use]
    pub fn base_url_env(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("OPENAI_BASE_URL"),
            Self::Anthropic => Some("ANTHROPIC_BASE_URL"),
            Self::Local => None,
        }
    }

    /// The model used when nothing names one.
    #[must_use]
    pub fn default_model(self) -> &'static str {
        match self {
            Self::OpenAi => "gpt-4o",
            Self::Anthropic => "claude-sonnet-4-5",
            Self::Local => LOCAL_MODEL_NAME,
        }
    }
}

/// Name of the embedded model.
pub const LOCAL_MODEL_NAME: &str = "SmolLM2-135M-Instruct";
/// Context window of the embedded model in tokens (its GGUF metadata says 8,192).
pub const LOCAL_CONTEXT_WINDOW: u64 = 8_192;
/// Context window assumed for a model strata does not know and the config does not describe.
pub const FALLBACK_CONTEXT_WINDOW: u64 = 128_000;

/// What the caller asked for.
pub struct SelectionRequest<'a> {
    /// `--provider`.
    pub provider: Option<&'a str>,
    /// `--model`.
    pub model: Option<&'a str>,
    /// The loaded config.
    pub config: &'a Config,
    /// Reads an environment variable (the process environment in the binary).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// The resolved provider and model with their limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelChoice {
    /// Provider.
    pub provider: ProviderKind,
    /// Model name.
    pub model: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Where `context_window` comes from.
    pub window_source: WindowSource,
    /// Tokens reserved for the reply (`max_tokens`).
    pub max_tokens: u64,
    /// Name of the variable holding the API key, if the provider needs one.
    pub api_key_env: Option<String>,
    /// Base URL override, if any.
    pub base_url: Option<String>,
}

/// Resolves provider and model.
///
/// # Errors
/// [`ConfigError::UnknownProvider`] when `--provider` names an unknown
/// provider (an unknown `model.provider` is refused when the file is read).
pub fn select_model(req: &SelectionRequest<'_>) -> Result<ModelChoice, ConfigError> {
    let config = req.config;
    let has = |name: &str| (req.env)(name).is_some_and(|v| !v.trim().is_empty());
    let named = match req.provider {
        Some(name) => Some(name.parse::<ProviderKind>()?),
        None => config.model.provider,
    };
    let provider = match named {
        Some(kind) => kind,
        None => {
            let key_of = |kind: ProviderKind| {
                section(config, kind)
                    .api_key_env
                    .clone()
                    .or_else(|| kind.default_key_env().map(str::to_owned))
            };
            if key_of(ProviderKind::Anthropic).is_some_and(|k| has(&k)) {
                ProviderKind::Anthropic
            } else if key_of(ProviderKind::OpenAi).is_some_and(|k| has(&k))
                || config.providers.openai.base_url.is_some()
                || has("OPENAI_BASE_URL")
            {
                // A base URL alone means a local server that needs no key.
                ProviderKind::OpenAi
            } else {
                ProviderKind::Local
            }
        }
    };
    let section = section(config, provider);
    let model = req
        .model
        .map(str::to_owned)
        .or_else(|| config.model.name.clone())
        .or_else(|| section.model.clone())
        .unwrap_or_else(|| provider.default_model().to_owned());
    let (context_window, window_source) = match (config.model.context_window, known_window(provider, &model))
    {
        (Some(window), _) => (window, WindowSource::Config),
        (None, Some(window)) => (window, WindowSource::Catalog),
        (None, None) => (FALLBACK_CONTEXT_WINDOW, WindowSource::Default),
    };
    let max_tokens = config
        .model
        .max_tokens
        .unwrap_or_else(|| crate::tokens::default_reserved_output(provider, context_window));
    let api_key_env = section
        .api_key_env
        .clone()
        .or_else(|| provider.default_key_env().map(str::to_owned));
    let base_url = section.base_url.clone().or_else(|| {
        provider
            .base_url_env()
            .and_then(|v| (req.env)(v))
            .filter(|v| !v.trim().is_empty())
    });
    Ok(ModelChoice {
        provider,
        model,
        context_window,
        window_source,
        max_tokens,
        api_key_env,
        base_url,
    })
}

impl ModelChoice {
    /// The same choice with the window `window` from `source`: the output
    /// reserve follows the new window unless `[model] max_tokens` is set
    /// (`configured_max_tokens`).
    #[must_use]
    pub fn with_window(
        mut self,
        window: u64,
        source: WindowSource,
        configured_max_tokens: Option<u64>,
    ) -> Self {
        self.context_window = window;
        self.window_source = source;
        self.max_tokens = configured_max_tokens
            .unwrap_or_else(|| crate::tokens::default_reserved_output(self.provider, window));
        self
    }
}

/// Where a [`ModelChoice`]'s context window comes from (`window_source` of
/// `strata context --json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSource {
    /// `[model] context_window` in the config.
    Config,
    /// strata's catalog of known models (or the embedded model's window).
    #[default]
    Catalog,
    /// Not known: the fallback of 128,000 tokens.
    Default,
    /// The server said what it serves (llama.cpp, Ollama, vLLM, LM Studio).
    Server,
    /// A context overflow error stated the window.
    OverflowError,
}

impl WindowSource {
    /// The JSON name: `config`, `catalog`, `default`, `server` or `overflow_error`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Catalog => "catalog",
            Self::Default => "default",
            Self::Server => "server",
            Self::OverflowError => "overflow_error",
        }
    }
}

fn section(config: &Config, kind: ProviderKind) -> &ProviderConfig {
    match kind {
        ProviderKind::OpenAi => &config.providers.openai,
        ProviderKind::Anthropic => &config.providers.anthropic,
        ProviderKind::Local => &config.providers.local,
    }
}

fn known_window(provider: ProviderKind, model: &str) -> Option<u64> {
    match provider {
        // Any GGUF: the embedded model's window, unless `[model] context_window` says otherwise.
        ProviderKind::Local => Some(LOCAL_CONTEXT_WINDOW),
        _ => crate::tokens::context_window_for(provider, model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose(
        provider: Option<&str>,
        model: Option<&str>,
        vars: &[(&str, &str)],
        config: &Config,
    ) -> ModelChoice {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        select_model(&SelectionRequest {
            provider,
            model,
            config,
            env: &env,
        })
        .unwrap()
    }

    #[test]
    fn no_key_means_the_embedded_model() {
        let c = choose(None, None, &[], &Config::default());
        assert_eq!(c.provider, ProviderKind::Local);
        assert_eq!(c.model, LOCAL_MODEL_NAME);
        assert_eq!(c.context_window, LOCAL_CONTEXT_WINDOW);
    }

    #[test]
    fn an_openai_base_url_alone_selects_openai() {
        let c = choose(
            None,
            None,
            &[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")],
            &Config::default(),
        );
        assert_eq!(c.provider, ProviderKind::OpenAi);
        assert_eq!(c.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
    }

    #[test]
    fn anthropic_key_wins_over_openai_key() {
        let c = choose(
            None,
            None,
            &[("OPENAI_API_KEY", "a"), ("ANTHROPIC_API_KEY", "b")],
            &Config::default(),
        );
        assert_eq!(c.provider, ProviderKind::Anthropic);
        let c = choose(None, None, &[("OPENAI_API_KEY", "a")], &Config::default());
        assert_eq!(c.provider, ProviderKind::OpenAi);
    }

    #[test]
    fn command_line_wins_and_unknown_provider_is_an_error() {
        let c = choose(
            Some("openai"),
            Some("my-model"),
            &[("ANTHROPIC_API_KEY", "b")],
            &Config::default(),
        );
        assert_eq!((c.provider, c.model.as_str()), (ProviderKind::OpenAi, "my-model"));
        assert_eq!(c.context_window, FALLBACK_CONTEXT_WINDOW);
        let env = |_: &str| None;
        let err = select_model(&SelectionRequest {
            provider: Some("gemini"),
            model: None,
            config: &Config::default(),
            env: &env,
        })
        .unwrap_err();
        assert!(err.to_string().contains("gemini"));
    }

    #[test]
    fn config_names_the_key_variable_and_window() {
        let loaded = Config::parse(
            "[model]\ncontext_window = 32000\n[providers.openai]\napi_key_env = \"MY_KEY\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        )
        .unwrap();
        let c = choose(None, None, &[("MY_KEY", "k")], &loaded.config);
        assert_eq!(c.provider, ProviderKind::OpenAi);
        assert_eq!(c.api_key_env.as_deref(), Some("MY_KEY"));
        assert_eq!(c.context_window, 32_000);
        assert_eq!(c.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    }
}
