//! Whether a session's model gets tools, and the tools and environment its
//! conversation runs them with (DESIGN §15): the core's [`Tools`] (schemas,
//! policy, rules, limits) and the adapter's [`ToolEnv`] (workspace root,
//! spill directory, memory file, skills, shell limits).

use super::{Runtime, RuntimeError};
use crate::config::{Config, ModelChoice};
use crate::conversation::Tools;
use crate::domain::{ProviderKind, Session};
use crate::prompt::MINIMAL_MODE_WINDOW;
use crate::tooling::approval::{Policy, Rule, Rules};
use crate::tooling::limits::{Budgets, Limits};
use crate::tooling::sandbox::{Confinement, Mode};
use crate::tooling::schema::{ToolSet, builtin};
use crate::tools::{ShellLimits, ShellSandbox, SkillEntry, ToolEnv};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Whether tools are on for a model, and why not when they are off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolsState {
    /// Tools are offered.
    pub on: bool,
    /// Why they are off (one clause), when they are.
    pub why_off: Option<String>,
}

/// Tools are on for providers with native tool calling when the window is
/// at least [`MINIMAL_MODE_WINDOW`] tokens (below it the prompt is minimal);
/// off for the embedded model; `[tools] enabled` decides when set.
#[must_use]
pub fn tools_state(config: &Config, choice: &ModelChoice) -> ToolsState {
    let off = |why: String| ToolsState {
        on: false,
        why_off: Some(why),
    };
    if choice.provider == ProviderKind::Local {
        return off("the embedded model has no tool calling".to_owned());
    }
    match config.tools.enabled {
        Some(false) => off("[tools] enabled is false".to_owned()),
        Some(true) => ToolsState {
            on: true,
            why_off: None,
        },
        None if choice.context_window < MINIMAL_MODE_WINDOW => off(format!(
            "the context window ({} tokens) is under {MINIMAL_MODE_WINDOW}; set [tools] enabled = true to offer them anyway",
            choice.context_window
        )),
        None => ToolsState {
            on: true,
            why_off: None,
        },
    }
}

/// The approval policy and rules of `[tools]`, for an interactive client or
/// a headless one (where `ask` acts as `read-only`).
///
/// # Errors
/// One sentence naming the bad value and the values allowed.
pub fn approval_rules(config: &Config, interactive: bool) -> Result<(Policy, Rules), String> {
    let policy: Policy = config
        .tools
        .approval
        .parse()
        .map_err(|e| format!("[tools] approval: {e}"))?;
    let policy = match policy {
        Policy::Ask if !interactive => Policy::ReadOnly,
        p => p,
    };
    let parse = |list: &[String], key: &str| -> Result<Vec<Rule>, String> {
        list.iter()
            .map(|r| r.parse::<Rule>().map_err(|e| format!("[tools] {key}: {e}")))
            .collect()
    };
    let rules = Rules {
        allow: parse(&config.tools.allow, "allow")?,
        deny: parse(&config.tools.deny, "deny")?,
    };
    Ok((policy, rules))
}

/// What is wrong with `[tools]`: `Err` with one sentence when a value makes
/// tool calls impossible to decide (an unknown approval, a malformed rule,
/// `max_rounds = 0`), else warnings about values that do nothing (a rule
/// naming no tool strata has, an `allow_paths` entry that is not an existing
/// absolute directory).
///
/// # Errors
/// The sentence naming the bad value.
pub fn tools_config_problems(config: &Config) -> Result<Vec<String>, String> {
    approval_rules(config, true)?;
    if config.tools.max_rounds == 0 {
        return Err("[tools] max_rounds is 0; give it at least 1 (the default is 50)".to_owned());
    }
    let known: Vec<String> = builtin().into_iter().map(|t| t.name).collect();
    let mut warnings = Vec::new();
    for (key, list) in [("allow", &config.tools.allow), ("deny", &config.tools.deny)] {
        for rule in list.iter().filter(|r| !r.starts_with("shell:")) {
            if !known.contains(rule) {
                warnings.push(format!(
                    "[tools] {key}: \"{rule}\" names no tool strata has ({}); it does nothing",
                    known.join(", ")
                ));
            }
        }
    }
    for path in &config.tools.allow_paths {
        if !path.is_absolute() || !path.is_dir() {
            warnings.push(format!(
                "[tools] allow_paths: {} is not an existing absolute directory; it is ignored",
                path.display()
            ));
        }
    }
    Ok(warnings)
}

impl Runtime {
    /// The tools of `session`'s conversation and their environment, or
    /// `None` when tools are off for `choice`.
    ///
    /// # Errors
    /// [`RuntimeError::Config`] for a bad `[tools]` value.
    pub fn session_tools(
        &self,
        session: &Session,
        choice: &ModelChoice,
        interactive: bool,
    ) -> Result<Option<(Tools, Arc<ToolEnv>)>, RuntimeError> {
        if !tools_state(&self.config, choice).on {
            return Ok(None);
        }
        tools_config_problems(&self.config).map_err(RuntimeError::Config)?;
        let (policy, rules) = approval_rules(&self.config, interactive).map_err(RuntimeError::Config)?;
        let spill_dir = self.paths.spill_dir().join(session.id.to_string());
        let root = canonical(Path::new(&session.workspace));
        let allow_paths: Vec<PathBuf> = self
            .config
            .tools
            .allow_paths
            .iter()
            .filter(|p| p.is_absolute())
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
        let budgets = Budgets::for_window(choice.context_window);
        let limits = Limits::DEFAULT;
        let skills = self
            .skills(&root)
            .into_iter()
            .map(|s| SkillEntry {
                name: s.name,
                path: PathBuf::from(s.path),
            })
            .collect();
        let sandbox = shell_sandbox(
            &self.config,
            &root,
            &allow_paths,
            (&self.paths.data_dir.join("tmp"), &session.id.short()),
            interactive,
        )?;
        let env = ToolEnv {
            root,
            allow_paths,
            spill_dir: spill_dir.clone(),
            memory_file: self.paths.config_dir.join("MEMORY.md"),
            session: session.id.short(),
            skills,
            read_max_chars: limits.max_chars.min(budgets.per_result_chars),
            read_max_lines: limits.max_lines,
            shell: ShellLimits {
                registry: Some(self.paths.shell_registry()),
                supervisor: self.supervisor.clone(),
                sandbox: Some(sandbox),
                hidden_env: [&self.config.providers.openai, &self.config.providers.anthropic]
                    .into_iter()
                    .filter_map(|p| p.api_key_env.clone())
                    .collect(),
                ..ShellLimits::default()
            },
            reads: Mutex::default(),
            keep_chars: limits.max_chars,
        };
        let tools = Tools {
            set: ToolSet::new(builtin()),
            policy,
            rules,
            max_rounds: self.config.tools.max_rounds,
            limits,
            spill_dir: spill_dir.display().to_string(),
            request: None,
            sandbox: env
                .shell
                .sandbox
                .as_ref()
                .map(|s| s.confinement.clone())
                .unwrap_or_default(),
        };
        Ok(Some((tools, Arc::new(env))))
    }
}

/// The sandbox a session's `shell` commands run in (`[tools.sandbox]`):
/// the confinement approval and the supervisor use, the roots a command may
/// write besides the workspace, and the session's temporary directory.
///
/// The temporary directory is `tmp_base/strata-UID/SESSION` (`tmp_base`
/// is in strata's own data directory, which no other user can enter).
///
/// # Errors
/// [`RuntimeError::Config`]: an unknown mode, or no temporary directory.
pub fn shell_sandbox(
    config: &Config,
    root: &Path,
    allow_paths: &[PathBuf],
    (tmp_base, session): (&Path, &str),
    interactive: bool,
) -> Result<ShellSandbox, RuntimeError> {
    let sandbox = &config.tools.sandbox;
    let mode: Mode = sandbox
        .mode
        .parse()
        .map_err(|e| RuntimeError::Config(format!("[tools.sandbox] mode: {e}")))?;
    let tmpdir = crate::tools::sandbox::session_tmpdir(tmp_base, session).map_err(RuntimeError::Directory)?;
    let mut writable = crate::tools::sandbox::git_dirs(root);
    writable.extend(allow_paths.iter().cloned());
    writable.extend(sandbox.writable.iter().filter_map(|p| expand_home(p)));
    Ok(ShellSandbox {
        confinement: Confinement {
            mode,
            network: sandbox.network,
            available: crate::tools::sandbox::support().available(),
            interactive,
            allow_network: sandbox.allow_network.clone(),
        },
        writable,
        tmpdir,
        required: sandbox.required,
    })
}

/// An absolute path, or `~/…` under the home directory; `None` otherwise.
fn expand_home(path: &Path) -> Option<PathBuf> {
    if path.is_absolute() {
        return Some(path.to_path_buf());
    }
    let rest = path.strip_prefix("~").ok()?;
    dirs::home_dir().map(|home| home.join(rest))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

impl Runtime {
    /// The tools `session` on `choice` is offered (its tools switched off
    /// left out), with `mcp`'s tools after the built-in ones when given, or
    /// `None` when tools are off for it; and why they are off, when they
    /// are.
    #[must_use]
    pub fn tools_for(
        &self,
        session: crate::domain::SessionId,
        choice: &ModelChoice,
        mcp: Option<&super::McpSession>,
    ) -> (Option<ToolSet>, Option<String>) {
        let state = tools_state(&self.config, choice);
        if !state.on {
            return (None, state.why_off);
        }
        let stored = self.store.session_tools(session).unwrap_or_default();
        if let Some(why) = stored.refused {
            return (None, Some(why));
        }
        let mut set = ToolSet::new(builtin());
        for (server, specs) in mcp.map_or(&[][..], |m| m.groups()) {
            set = set.with_extra(server, specs.clone());
        }
        for name in &stored.disabled {
            set.set_enabled(name, false);
        }
        (Some(set), None)
    }

    /// Start-up maintenance of the tools: `shell` process groups recorded
    /// as running by a strata that is gone are killed (a backstop to the
    /// supervisor), and spill files and the sessions' shell temporary
    /// directories older than seven days are removed.
    /// Failures are logged, never fatal.
    pub fn tidy_tools(&self) -> Option<String> {
        let killed = crate::tools::sweep::sweep(&self.paths.shell_registry());
        if killed > 0 {
            tracing::warn!(
                groups = killed,
                "shell commands left by a strata that died were killed"
            );
        }
        let tmp = crate::tools::sandbox::remove_old_tmpdirs(
            &self.paths.data_dir.join("tmp"),
            crate::tools::spill::SPILL_MAX_AGE,
            std::time::SystemTime::now(),
        );
        if tmp > 0 {
            tracing::info!(
                dirs = tmp,
                "sessions' shell temporary directories older than seven days removed"
            );
        }
        let removed = crate::tools::spill::remove_older_than(
            &self.paths.spill_dir(),
            crate::tools::spill::SPILL_MAX_AGE,
            std::time::SystemTime::now(),
        );
        if removed.files > 0 {
            tracing::info!(
                files = removed.files,
                bytes = removed.bytes,
                "old spill files removed"
            );
        }
        self.trim_spill(None)
    }

    /// Keeps the spill files under `[tools] spill_max_mb` by removing the
    /// oldest, never those of the session `keep` (the one in use); returns
    /// the sentence saying what was removed, if anything.
    #[must_use]
    pub fn trim_spill(&self, keep: Option<crate::domain::SessionId>) -> Option<String> {
        let cap_mb = self.config.tools.spill_max_mb;
        let keep = keep.map(|id| id.to_string());
        let removed = crate::tools::spill::remove_over_cap(
            &self.paths.spill_dir(),
            cap_mb.saturating_mul(1_000_000),
            keep.as_deref(),
        );
        (removed.files > 0).then(|| {
            let what = if removed.files == 1 {
                "the oldest spill file was".to_owned()
            } else {
                format!("the {} oldest spill files were", removed.files)
            };
            format!(
                "{what} removed ({:.1} MB of whole tool outputs) to keep spill files under {cap_mb} MB; raise [tools] spill_max_mb to keep more",
                removed.bytes as f64 / 1_000_000.0
            )
        })
    }

    /// Undoes the latest file change of `session` not undone yet
    /// (`/undo-edit`, `strata undo-edit`): the file gets its previous
    /// bytes back (a file the tool created is removed), when it is
    /// unchanged since; returns one line saying what happened.
    ///
    /// # Errors
    /// [`RuntimeError::Store`], or [`RuntimeError::Undo`] with the
    /// sentence of why nothing changed.
    pub fn undo_edit(&mut self, session: &Session) -> Result<String, RuntimeError> {
        let Some(change) = self.store.last_change(session.id)? else {
            return Err(RuntimeError::Undo(
                "this session has no file change left to undo".to_owned(),
            ));
        };
        let file = crate::tools::FileChange {
            path: PathBuf::from(&change.path),
            before: change.before.clone(),
            after_sha256: change.after_sha256.clone(),
        };
        let line = crate::tools::edit::undo(&file).map_err(RuntimeError::Undo)?;
        self.store.mark_change_undone(change.num, super::now_ms())?;
        Ok(line)
    }
}
