//! Layer 2 adapter: reads what the prompt is built from — instruction files,
//! identity, tools notes, memory, bootstrap, skills, the `context_cmd` output,
//! environment and git facts — into [`PromptInputs`] for the pure
//! [`crate::prompt::assemble`].
//!
//! Owns all file-system, environment and process access for prompt building,
//! and nothing else: no store, no UI. Invariants: it never fails (every
//! problem becomes a skipped/blocked source or a warning); files in the
//! workspace that resolve outside its root are never read; no file is read
//! further than its cap can use (a 1 GB file costs what the cap costs).
//!
//! It also watches those files for changes ([`WorkspaceWatcher`], in
//! `watch`), reporting which layers went stale.
//!
//! Callers: the session runtime when it builds a prompt, `strata prompt`,
//! the TUI's driver (the watcher), the bench and tests.

mod command;
mod env;
mod instructions;
mod read;
mod roots;
mod skills;
mod skills_cache;
mod watch;

pub use command::{CONTEXT_CMD_TIMEOUT, run_context_cmd, stop_running_commands};
pub use env::{format_session_date, session_time_zone};
pub use read::{BINARY_SNIFF_BYTES, ReadStats, read_attachment};
pub use roots::{chain, find_git_root, git_branch};
pub use skills::{list_skills, read_skill_body};
pub use skills_cache::SKILLS_CACHE_FILE;
pub use watch::{
    LayerChange, WATCH_DEBOUNCE, WatchDirs, WatchError, WatchEvent, WatchPlan, WorkspaceWatcher,
};

use crate::domain::PromptMode;
use crate::prompt::{
    EnvFacts, PromptInputs, PromptSettings, RecentSession, SessionFacts, ToolFacts, WorkspaceFacts,
    per_file_cap,
};
use std::fs;
use std::path::{Path, PathBuf};

/// Problems met while gathering. The file variants read as a clause that
/// completes "`<path>` was skipped: …" (they end up in a source's `note`);
/// the others are whole sentences for the warning list. None is fatal.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A directory carries an instruction file's name.
    #[error("it is a directory, not a file")]
    IsDirectory,
    /// A FIFO, socket or device carries an instruction file's name.
    #[error("it is not a regular file")]
    NotRegularFile,
    /// Symbolic links point at each other.
    #[error("it is a symbolic link loop")]
    SymlinkLoop,
    /// A symbolic link points at nothing.
    #[error("it is a symbolic link to a file that does not exist")]
    BrokenSymlink,
    /// The file's real path leaves the workspace (it is never read).
    #[error("it resolves to {target}, outside the workspace")]
    OutsideWorkspace {
        /// The resolved path.
        target: String,
    },
    /// The file exists but may not be read.
    #[error("permission was denied")]
    PermissionDenied,
    /// A NUL byte in the first 8 KiB.
    #[error("it looks binary (a NUL byte in its first 8 KiB)")]
    Binary,
    /// Any other read error.
    #[error("it could not be read ({0})")]
    Read(#[source] std::io::Error),
    /// A workspace skill resolving outside the workspace.
    #[error("Skill {path} was not read because it resolves outside the workspace.")]
    SkillOutsideWorkspace {
        /// The `SKILL.md` path.
        path: String,
    },
    /// A `SKILL.md` whose metadata could not be used.
    #[error(
        "Skill {path} is listed by its directory name without a description because {reason}; fix its frontmatter (name, description) to describe it."
    )]
    SkillFrontmatter {
        /// The `SKILL.md` path.
        path: String,
        /// Why, as a clause.
        reason: String,
    },
    /// The skills cache could not be saved; the next run parses again.
    #[error(
        "The skills cache {path} could not be written ({source}); skills still work but are re-read each time."
    )]
    CacheWrite {
        /// The cache file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A configured command (`prompt.context_cmd`, `prompt.turn_reminder_cmd`)
    /// could not be started.
    #[error("{setting} `{command}` could not be started ({source}); check the command in the config.")]
    CommandSpawn {
        /// The setting that names the command.
        setting: &'static str,
        /// The command.
        command: String,
        /// The spawn error.
        #[source]
        source: std::io::Error,
    },
    /// A configured command exited unsuccessfully (its output is still used).
    #[error("{setting} `{command}` exited with status {status}; its output is used as it is.")]
    CommandFailed {
        /// The setting that names the command.
        setting: &'static str,
        /// The command.
        command: String,
        /// Exit code, or "a signal".
        status: String,
    },
    /// A configured command ran past its timeout and was killed.
    #[error(
        "{setting} `{command}` did not finish within {seconds} s and was stopped; make it faster or remove it."
    )]
    CommandTimeout {
        /// The setting that names the command.
        setting: &'static str,
        /// The command.
        command: String,
        /// The timeout in seconds.
        seconds: f64,
    },
}

/// What to gather, and the facts the caller already knows.
#[derive(Clone, Debug, Default)]
pub struct GatherRequest {
    /// The working directory the session starts in.
    pub cwd: PathBuf,
    /// The config directory (`SOUL.md`, `IDENTITY.md`, `TOOLS.md`,
    /// `MEMORY.md`, `USER.md`, `BOOTSTRAP.md`, `skills/`).
    pub config_dir: PathBuf,
    /// The data directory (holds `skills-cache.json`).
    pub data_dir: PathBuf,
    /// The `[prompt]` settings.
    pub settings: PromptSettings,
    /// The resolved mode (see [`crate::prompt::resolve_mode`]).
    pub mode: PromptMode,
    /// The model's context window in tokens, for the per-file cap.
    pub context_window: Option<u64>,
    /// This is the first session ever created for the workspace
    /// (`BOOTSTRAP.md` is included only then).
    pub first_session: bool,
    /// Digests of the workspace's recent sessions, newest first (from the store).
    pub recent: Vec<RecentSession>,
    /// Model name.
    pub model: String,
    /// Provider name.
    pub provider: String,
    /// The session date, see [`format_session_date`].
    pub session_date: String,
    /// The time-zone name, see [`session_time_zone`].
    pub time_zone: String,
    /// A person is at the keyboard.
    pub interactive: bool,
    /// OS, shell, terminal ([`EnvFacts::from_process`] outside tests).
    pub env: EnvFacts,
    /// Tool availability.
    pub tools: ToolFacts,
}

/// The workspace root of a working directory: the git root when `cwd` is
/// inside a repository, else `cwd` itself (symlinks resolved when possible).
/// Sessions are grouped by this path.
#[must_use]
pub fn workspace_root(cwd: &Path) -> PathBuf {
    let cwd = fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    find_git_root(&cwd).unwrap_or(cwd)
}

/// Gathers everything [`crate::prompt::assemble`] needs. Never fails.
#[must_use]
pub fn gather(request: &GatherRequest) -> PromptInputs {
    gather_with_stats(request).0
}

/// [`gather`], also returning how many bytes were read from files.
#[must_use]
pub fn gather_with_stats(request: &GatherRequest) -> (PromptInputs, ReadStats) {
    let mut warnings = Vec::new();
    let mut reader = read::Reader::default();
    let cap = per_file_cap(&request.settings, request.context_window);
    let mode = request.mode;
    let full = mode == PromptMode::Full;
    let some = mode != PromptMode::None;

    let cwd = fs::canonicalize(&request.cwd).unwrap_or_else(|_| request.cwd.clone());
    let git_root = find_git_root(&cwd);
    let root = git_root.clone().unwrap_or_else(|| cwd.clone());
    debug_assert_eq!(root, workspace_root(&request.cwd));
    let dirs = chain(&root, &cwd);
    let shown = |p: &Path| p.display().to_string();
    let config = |name: &str| request.config_dir.join(name);

    let mut identity_files = vec![reader.read(&config("SOUL.md"), None, cap)];
    if !identity_files[0].has_text() {
        identity_files.push(reader.read(&config("IDENTITY.md"), None, cap));
    }
    let tools_file = (some && request.tools.enabled).then(|| reader.read(&config("TOOLS.md"), None, cap));
    let instruction_files = if some {
        instructions::instruction_files(
            request.settings.instruction_files,
            mode == PromptMode::Minimal,
            &dirs,
            &root,
            &mut reader,
            cap,
        )
    } else {
        Vec::new()
    };
    // Minimal mode includes none of these, but says which it leaves out:
    // they are looked for (not sent) so the warning can name them.
    let minimal = mode == PromptMode::Minimal;
    // Skills are gathered (and their cache written) in full mode only;
    // minimal mode's warning names the files it leaves out, not skills.
    let skills = if full {
        skills::gather_skills(
            &request.config_dir,
            &root,
            &request.data_dir,
            &mut reader,
            &mut warnings,
        )
    } else {
        Vec::new()
    };
    let memory_file = (full || minimal).then(|| reader.read(&config("MEMORY.md"), None, cap));
    let user_file = (full || minimal).then(|| reader.read(&config("USER.md"), None, cap));
    let bootstrap =
        ((full || minimal) && request.first_session).then(|| reader.read(&config("BOOTSTRAP.md"), None, cap));
    let left_out_instructions = if minimal {
        instructions::other_families(&dirs, &root)
    } else {
        Vec::new()
    };
    let computed = match request.settings.context_cmd.as_deref().map(str::trim) {
        Some(cmd) if full && !cmd.is_empty() => {
            let (out, cmd_warnings) = run_context_cmd("prompt.context_cmd", cmd, &root, CONTEXT_CMD_TIMEOUT);
            warnings.extend(cmd_warnings);
            Some(out)
        }
        _ => None,
    };
    let inputs = PromptInputs {
        mode,
        interactive: request.interactive,
        context_window: request.context_window,
        identity_files,
        tools_file,
        tools: request.tools.clone(),
        skills,
        environment: request.env.clone(),
        workspace: WorkspaceFacts {
            root: shown(&root),
            git_root: git_root.as_deref().map(shown),
            cwd: shown(&cwd),
        },
        instruction_files,
        left_out_instructions,
        memory_file,
        user_file,
        bootstrap,
        recent: request.recent.clone(),
        computed,
        session: SessionFacts {
            date: request.session_date.clone(),
            time_zone: request.time_zone.clone(),
            model: request.model.clone(),
            provider: request.provider.clone(),
            git_branch: git_root.as_deref().and_then(git_branch),
        },
        settings: request.settings.clone(),
        warnings,
    };
    (inputs, reader.stats)
}
