//! One function per subcommand, plus the environment they share.

mod chat;
mod compress;
mod context;
mod control;
mod doctor;
mod import;
mod mcp;
mod message_arg;
mod model;
mod prompt;
mod sessions;

pub use chat::chat;
pub use compress::{compress, undo_compress, undo_edit, undo_edit_message};
pub use context::context;
pub use control::control;
pub use doctor::doctor;
pub use import::import;
pub use mcp::mcp;
pub use model::model;
pub use prompt::prompt;
pub use sessions::{export, sessions, show};

use super::args::GlobalArgs;
use anyhow::Context as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use strata::config::{Config, ModelChoice, Paths, SelectionRequest, select_model};
use strata::domain::PromptMode;
use strata::runtime::Runtime;

/// A usage error: bad arguments that clap could not catch. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// What every command needs: paths, config, and the global options.
pub struct Env {
    pub paths: Paths,
    pub config: Config,
    pub config_warnings: Vec<String>,
    /// Why the config could not be loaded (only for `strata doctor`, which
    /// goes on with the defaults).
    pub config_error: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub prompt_mode: Option<PromptMode>,
}

impl Env {
    /// Resolves paths and loads the config, printing its warnings to stderr.
    pub fn load(global: &GlobalArgs) -> anyhow::Result<Self> {
        let paths = Paths::from_env()?;
        let mut loaded = Config::load(&paths.config_file())?;
        for w in &loaded.warnings {
            eprintln!("strata: warning: {w}");
        }
        let mut provider = global.provider.clone();
        let mut model = global.model.clone();
        if let Some(path) = &global.model_path {
            let path = std::path::absolute(path)?;
            if !path.is_file() {
                let problem = strata::provider::local::model_file::file_problem(&path)
                    .unwrap_or_else(|| format!("{} is not a regular file", path.display()));
                return Err(
                    UsageError(format!("{problem}; pass an existing GGUF file to --model-path")).into(),
                );
            }
            provider.get_or_insert_with(|| "local".to_owned());
            model.get_or_insert_with(|| path.to_string_lossy().into_owned());
            loaded.config.providers.local.model_path = Some(path);
        }
        Ok(Self {
            paths,
            config: loaded.config,
            config_warnings: loaded.warnings,
            config_error: None,
            provider,
            model,
            prompt_mode: global.prompt_mode.map(Into::into),
        })
    }

    /// As [`Env::load`], but a config file that cannot be read or parsed is
    /// recorded in `config_error` and the defaults are used.
    pub fn load_for_doctor(global: &GlobalArgs) -> anyhow::Result<Self> {
        match Self::load(global) {
            Ok(env) => Ok(env),
            Err(e) => match e.downcast::<strata::config::ConfigError>() {
                Ok(
                    err @ (strata::config::ConfigError::Parse { .. }
                    | strata::config::ConfigError::Read { .. }),
                ) => Ok(Self {
                    paths: Paths::from_env()?,
                    config: Config::default(),
                    config_warnings: Vec::new(),
                    config_error: Some(err.to_string()),
                    provider: global.provider.clone(),
                    model: global.model.clone(),
                    prompt_mode: global.prompt_mode.map(Into::into),
                }),
                Ok(other) => Err(other.into()),
                Err(e) => Err(e),
            },
        }
    }

    /// Provider and model from the options, config and environment.
    pub fn choice(&self) -> anyhow::Result<ModelChoice> {
        let env = |name: &str| std::env::var(name).ok();
        Ok(select_model(&SelectionRequest {
            provider: self.provider.as_deref(),
            model: self.model.as_deref(),
            config: &self.config,
            env: &env,
        })?)
    }

    /// Provider and model of an existing session, with this config's limits.
    pub fn choice_for(&self, session: &strata::domain::Session) -> anyhow::Result<ModelChoice> {
        let env = |name: &str| std::env::var(name).ok();
        Ok(select_model(&SelectionRequest {
            provider: Some(session.provider.as_str()),
            model: Some(&session.model),
            config: &self.config,
            env: &env,
        })?)
    }

    /// Opens the store (creating it when missing).
    pub fn runtime(&self) -> anyhow::Result<Runtime> {
        Ok(Runtime::open(self.paths.clone(), self.config.clone())?)
    }

    /// Opens the store only when the database already exists.
    pub fn existing_runtime(&self) -> anyhow::Result<Option<Runtime>> {
        if self.paths.database().exists() {
            self.runtime().map(Some)
        } else {
            // No store yet: none is made, but a data directory that could
            // never hold one is said now, not taken for "no sessions".
            strata::store::check_writable_dir(&self.paths.data_dir)?;
            Ok(None)
        }
    }
}

/// `strata` with no subcommand: the full-screen app, on a new session, the
/// session `--resume ID` names, the picker (`--resume` alone) or the latest
/// session of the workspace (`--continue`).
///
/// What can be checked without a terminal is checked before the app opens
/// (the screen is never switched for a bad argument): the provider named
/// by `--provider` or the config, and the session `--resume ID` names.
pub fn app(env: &Env, resume: Option<String>, continue_latest: bool) -> anyhow::Result<()> {
    use strata::tui::Opening;
    env.choice()?;
    // Nothing typed in the app could be kept: refuse before the screen opens.
    strata::store::check_writable_dir(&env.paths.data_dir)?;
    let opening = match (resume, continue_latest) {
        (Some(id), _) if id.trim().is_empty() => Opening::Picker,
        (Some(id), _) => Opening::Resume(resume_target(env, &id)?.to_string()),
        (None, true) => Opening::Continue,
        (None, false) => Opening::New,
    };
    let cwd = workspace_dir(None)?;
    let ended = strata::tui::run(strata::tui::Launch {
        paths: env.paths.clone(),
        config: env.config.clone(),
        provider: env.provider.clone(),
        model: env.model.clone(),
        prompt_mode: env.prompt_mode,
        opening,
        cwd,
        env: std::sync::Arc::new(|name: &str| std::env::var(name).ok()),
        interactive: true,
    })?;
    if let Some(id) = ended.session {
        // The terminal may be gone (a hang-up): nothing to report then.
        let _ = writeln!(std::io::stdout(), "strata --resume {}", resume_id(env, id));
    }
    if let Some(signal) = ended.signal {
        std::process::exit(128 + signal);
    }
    Ok(())
}

/// How to name `id` to `--resume`: its short id, or the full id when the
/// short one would not find it alone (another session has the same).
fn resume_id(env: &Env, id: strata::domain::SessionId) -> String {
    let short = id.short();
    let unique = env
        .existing_runtime()
        .ok()
        .flatten()
        .is_some_and(|runtime| runtime.find_session(&short).is_ok_and(|s| s.id == id));
    if unique { short } else { id.to_string() }
}

/// The session `--resume ID` names. An id that matches no session (or
/// several, or is too short to look up) is a usage error, exit code 2; the
/// database is not created for it.
fn resume_target(env: &Env, id: &str) -> anyhow::Result<strata::domain::SessionId> {
    use strata::store::StoreError;
    let found = match env.existing_runtime()? {
        Some(runtime) => runtime.find_session(id),
        None => Err(StoreError::SessionNotFound {
            id: id.trim().to_owned(),
        }),
    };
    match found {
        Ok(session) => Ok(session.id),
        Err(
            e @ (StoreError::SessionNotFound { .. }
            | StoreError::IdTooShort { .. }
            | StoreError::AmbiguousSession { .. }),
        ) => Err(UsageError(e.to_string()).into()),
        Err(e) => Err(e.into()),
    }
}

/// The working directory to use: `dir` when given (it must be a directory), else the current one.
pub fn workspace_dir(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    match dir {
        Some(d) => {
            if !d.is_dir() {
                return Err(UsageError(format!(
                    "the workspace {} is not a directory; pass an existing directory to --workspace",
                    d.display()
                ))
                .into());
            }
            std::path::absolute(d)
                .with_context(|| format!("cannot resolve the workspace path {}", d.display()))
        }
        None => std::env::current_dir()
            .context("cannot read the current directory; cd into an existing directory"),
    }
}

/// Writes JSON, pretty-printed, followed by a newline, through a 64 KiB
/// buffer flushed once at the end (standard output is line-buffered:
/// unbuffered, 10,000 sessions took 110,000 `write` calls).
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
