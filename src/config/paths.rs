//! Where strata's files live.

use super::ConfigError;
use std::path::{Path, PathBuf};

/// The two directories strata uses.
///
/// - `config_dir`: `config.toml`, `SOUL.md`, `IDENTITY.md`, `TOOLS.md`,
///   `USER.md`, `MEMORY.md`, `BOOTSTRAP.md`, `skills/`.
/// - `data_dir`: the database `strata.db`, downloaded models, caches, the
///   log files in `logs/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    /// The configuration directory.
    pub config_dir: PathBuf,
    /// The data directory.
    pub data_dir: PathBuf,
}

impl Paths {
    /// Paths under one root: `root` is the config directory, `root/data` the
    /// data directory (the `STRATA_HOME` layout).
    #[must_use]
    pub fn under(root: &Path) -> Self {
        Self {
            config_dir: root.to_path_buf(),
            data_dir: root.join("data"),
        }
    }

    /// Paths from the environment: `STRATA_HOME` when set and non-empty,
    /// else `$XDG_CONFIG_HOME/strata` and `$XDG_DATA_HOME/strata` (with the
    /// XDG defaults `~/.config` and `~/.local/share`).
    ///
    /// # Errors
    /// [`ConfigError::NoHome`] when neither is known.
    pub fn from_env() -> Result<Self, ConfigError> {
        if let Some(root) = std::env::var_os("STRATA_HOME").filter(|v| !v.is_empty()) {
            // A relative STRATA_HOME would name a different home in every directory.
            let root = std::path::absolute(Path::new(&root)).map_err(|_| ConfigError::NoHome)?;
            return Ok(Self::under(&root));
        }
        let config = dirs::config_dir().ok_or(ConfigError::NoHome)?;
        let data = dirs::data_dir().ok_or(ConfigError::NoHome)?;
        Ok(Self {
            config_dir: config.join("strata"),
            data_dir: data.join("strata"),
        })
    }

    /// `config_dir/config.toml`.
    #[must_use]
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    /// `data_dir/strata.db`.
    #[must_use]
    pub fn database(&self) -> PathBuf {
        self.data_dir.join("strata.db")
    }

    /// `data_dir/models`.
    #[must_use]
    pub fn models_dir(&self) -> PathBuf {
        self.data_dir.join("models")
    }

    /// `data_dir/kv-state`: the embedded model's saved KV states, one
    /// directory per model file.
    #[must_use]
    pub fn kv_state_dir(&self) -> PathBuf {
        self.data_dir.join("kv-state")
    }

    /// `data_dir/logs`: the daily log files `strata.log.YYYY-MM-DD`.
    #[must_use]
    pub fn logs_dir(&self) -> PathBuf {
        self.data_dir.join("logs")
    }

    /// `data_dir/spill`: whole tool outputs too large for the context,
    /// one directory per session (`spill/<session>/<tool_call_id>.txt`).
    #[must_use]
    pub fn spill_dir(&self) -> PathBuf {
        self.data_dir.join("spill")
    }

    /// `data_dir/exports/`: where the app's `/export` writes transcripts.
    #[must_use]
    pub fn exports_dir(&self) -> PathBuf {
        self.data_dir.join("exports")
    }

    /// `data_dir/run/shell-groups/`: one file per process group of a
    /// `shell` call running now, swept at start-up.
    #[must_use]
    pub fn shell_registry(&self) -> PathBuf {
        self.data_dir.join("run").join("shell-groups")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strata_home_layout_puts_data_below_config() {
        let p = Paths::under(Path::new("/x/home"));
        assert_eq!(p.config_file(), Path::new("/x/home/config.toml"));
        assert_eq!(p.database(), Path::new("/x/home/data/strata.db"));
        assert_eq!(p.models_dir(), Path::new("/x/home/data/models"));
        assert_eq!(p.logs_dir(), Path::new("/x/home/data/logs"));
    }
}
