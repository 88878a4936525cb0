//! Layer 2 adapter: where strata keeps its files and what the user configured.
//!
//! Paths follow the XDG base directories (`$XDG_CONFIG_HOME/strata`,
//! `$XDG_DATA_HOME/strata`); `STRATA_HOME=DIR` makes `DIR` the config
//! directory and `DIR/data` the data directory. The config file is TOML;
//! unknown keys are reported by name as warnings, never fatal.

mod file;
pub mod mcp;
mod paths;
mod selection;
mod tools;

pub use file::{CompressionConfig, Config, LoadedConfig, ModelConfig, ProviderConfig, ProvidersConfig};
pub use mcp::{Deferred, McpConfig, McpServerConfig};
pub use paths::Paths;
pub use selection::{
    FALLBACK_CONTEXT_WINDOW, LOCAL_CONTEXT_WINDOW, LOCAL_MODEL_NAME, ModelChoice, ProviderKind,
    SelectionRequest, WindowSource, select_model,
};
pub use tools::ToolsConfig;

use std::path::PathBuf;

/// Errors of reading configuration. Each message is one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither `STRATA_HOME` nor a home directory is known. Fatal.
    #[error("cannot find a home directory for strata's files; set STRATA_HOME to a writable directory")]
    NoHome,
    /// The config file exists but cannot be read. Fatal until fixed.
    #[error("cannot read the config file {path}: {source}; check its permissions")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The config file is not valid TOML or has a value of the wrong type. Fatal until fixed.
    #[error("the config file {path} is invalid: {message}; fix it or move it away")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's description, with line and column.
        message: String,
    },
    /// `--provider` names a provider strata does not have (the config
    /// file's `model.provider` is checked when the file is read: [`ConfigError::Parse`]).
    #[error(transparent)]
    UnknownProvider(#[from] crate::domain::UnknownProvider),
}
