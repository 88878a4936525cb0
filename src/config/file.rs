//! The TOML config file: its sections and their defaults.

use super::ConfigError;
use serde::Deserialize;
use std::path::Path;

/// The whole config file. Every section and key is optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `[model]`: which provider and model, and their limits.
    pub model: ModelConfig,
    /// `[providers.*]`: per-provider endpoints and key variables.
    pub providers: ProvidersConfig,
    /// `[prompt]`: system prompt assembly.
    pub prompt: crate::prompt::PromptSettings,
    /// `[compression]`: when and how conversations are compressed.
    pub compression: CompressionConfig,
    /// `[history]`: limits of the per-turn pipeline.
    pub history: HistoryConfig,
    /// `[tools]`: the model's tools and their approval rules.
    pub tools: super::ToolsConfig,
    /// `[mcp]`: the MCP servers sessions start.
    pub mcp: super::McpConfig,
    /// `[ui]`: the full-screen app (read by the app itself).
    pub ui: toml::Table,
}

/// `[model]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ModelConfig {
    /// `openai`, `anthropic` or `local` (any case); unset: chosen from the
    /// keys present. Another name makes the file invalid.
    pub provider: Option<crate::domain::ProviderKind>,
    /// Model name as the provider knows it.
    pub name: Option<String>,
    /// The model's context window in tokens, when strata does not know it.
    pub context_window: Option<u64>,
    /// Tokens reserved for the reply (`max_tokens`).
    pub max_tokens: Option<u64>,
}

/// `[providers]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ProvidersConfig {
    /// `[providers.openai]`: any OpenAI-compatible chat-completions server.
    pub openai: ProviderConfig,
    /// `[providers.anthropic]`.
    pub anthropic: ProviderConfig,
    /// `[providers.local]`: the embedded model.
    pub local: ProviderConfig,
}

/// One `[providers.NAME]` section.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ProviderConfig {
    /// Base URL, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: Option<String>,
    /// The *name* of the environment variable that holds the API key (the key
    /// itself never goes in the file).
    pub api_key_env: Option<String>,
    /// Default model for this provider.
    pub model: Option<String>,
    /// `[providers.local]` only: a GGUF file to run instead of the pulled default.
    pub model_path: Option<std::path::PathBuf>,
    /// `[providers.local]` only: CPU threads (default 1).
    pub threads: Option<u32>,
    /// `[providers.local]` only: megabytes (10^6 bytes) of saved KV state
    /// kept in the data directory's `kv-state/` (default 1000; 0 saves
    /// none).
    pub kv_state_max_mb: Option<u64>,
}

/// `[history]` (DESIGN §6).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct HistoryConfig {
    /// A count cap on the messages sent, on top of the token limit, applied
    /// by whole turns; unset: no cap.
    pub max_messages: Option<usize>,
}

/// `[compression]` (DESIGN §7).
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct CompressionConfig {
    /// Automatic compression on or off.
    pub enabled: bool,
    /// Share of the effective window that triggers compression.
    pub threshold: f64,
    /// Upper bound of the effective threshold, in tokens.
    pub threshold_tokens: u64,
    /// Messages always kept verbatim at the end (the tail keeps at least
    /// `max(3, min(protect_last_n, 8))`).
    pub protect_last_n: usize,
    /// Who writes summaries: `auto` (the session's model, or the extractive
    /// summariser on the embedded model), `extractive`, or a model name of
    /// the session's provider.
    pub summarizer: String,
    /// Whether the app's `/compress` shows the summary first (to accept,
    /// edit or cancel) instead of storing it at once. Automatic
    /// compression never waits for a person.
    pub preview: bool,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: 0.75,
            threshold_tokens: 256_000,
            protect_last_n: 6,
            summarizer: "auto".to_owned(),
            preview: true,
        }
    }
}

/// A parsed config plus the warnings found while reading it.
#[derive(Clone, Debug, Default)]
pub struct LoadedConfig {
    /// The values.
    pub config: Config,
    /// One sentence per problem that did not stop loading (unknown keys).
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads `path`; a missing file gives the defaults.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when the file exists but cannot be read,
    /// [`ConfigError::Parse`] when it is not valid TOML for these sections.
    pub fn load(path: &Path) -> Result<LoadedConfig, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LoadedConfig::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        Self::parse(&text).map_err(|message| ConfigError::Parse {
            path: path.to_path_buf(),
            message,
        })
    }

    /// Parses TOML text, collecting unknown keys as warnings.
    ///
    /// # Errors
    /// The parser's message when the text is not valid for these sections.
    pub fn parse(text: &str) -> Result<LoadedConfig, String> {
        let describe = |e: toml::de::Error| describe_error(text, &e);
        let deserializer = toml::Deserializer::parse(text).map_err(describe)?;
        let mut unknown = Vec::new();
        let config: Config = serde_ignored::deserialize(deserializer, |path| {
            let key = path.to_string();
            if !key.starts_with("ui.") {
                unknown.push(key);
            }
        })
        .map_err(describe)?;
        let warnings = unknown
            .into_iter()
            .map(|key| format!("config.toml: unknown key '{key}' is ignored; check its spelling"))
            .collect();
        Ok(LoadedConfig { config, warnings })
    }
}

/// `line L, column C: message` on one line (the parser's own rendering
/// spans several lines with a source excerpt).
fn describe_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_gives_defaults() {
        let loaded = Config::parse("").unwrap();
        assert!(loaded.warnings.is_empty());
        assert!(loaded.config.compression.enabled);
        assert!((loaded.config.compression.threshold - 0.75).abs() < f64::EPSILON);
    }

    #[test]
    fn the_app_previews_a_summary_unless_told_not_to() {
        assert!(Config::parse("").unwrap().config.compression.preview);
        let loaded = Config::parse("[compression]\npreview = false\n").unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert!(!loaded.config.compression.preview);
    }

    #[test]
    fn unknown_keys_are_named_in_warnings() {
        let loaded = Config::parse("[model]\nname = \"gpt-4o\"\ncolour = 3\n[bogus]\nx = 1\n").unwrap();
        assert_eq!(loaded.config.model.name.as_deref(), Some("gpt-4o"));
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings.iter().any(|w| w.contains("'model.colour'")));
        assert!(loaded.warnings.iter().any(|w| w.contains("'bogus'")));
    }

    #[test]
    fn wrong_type_is_an_error_with_a_location() {
        let err = Config::parse("[model]\ncontext_window = \"big\"\n").unwrap_err();
        assert!(err.starts_with("line 2, column 18: "), "{err}");
        assert!(!err.contains('\n'), "{err}");
        let err = Config::parse("[model\nname=").unwrap_err();
        assert!(err.starts_with("line 1, column 7: "), "{err}");
    }

    #[test]
    fn the_provider_is_parsed_and_an_unknown_one_is_named_with_its_location() {
        let loaded = Config::parse("[model]\nprovider = \"Anthropic\"\n").unwrap();
        assert_eq!(
            loaded.config.model.provider,
            Some(crate::domain::ProviderKind::Anthropic)
        );
        let err = Config::parse("[model]\nprovider = \"gemini\"\n").unwrap_err();
        assert_eq!(
            err,
            "line 2, column 12: unknown provider 'gemini'; use openai, anthropic or local"
        );
    }

    #[test]
    fn missing_file_gives_defaults() {
        let loaded = Config::load(Path::new("/nonexistent/strata/config.toml")).unwrap();
        assert!(loaded.config.model.provider.is_none());
    }
}
