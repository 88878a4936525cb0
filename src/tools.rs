//! Layer 2 (adapter): the built-in tools' handlers (DESIGN §15). Each takes
//! the call's parsed arguments and the session's [`ToolEnv`] and returns a
//! [`ToolOutput`]; nothing here decides approval, limits or storage (that is
//! `tooling` and the runtime). File tools are confined to the workspace
//! ([`paths`]); `shell` is confined by its supervisor's sandbox
//! ([`sandbox`], [`protect`]).
//!
//! Cancelling a call is dropping its future: a running `shell` command's
//! process group is killed when its guard drops.

pub mod capture;
pub mod catalog;
pub mod confine;
pub mod edit;
pub mod files;
pub mod paths;
pub mod protect;
pub mod reaper;
pub mod sandbox;
pub mod search;
pub mod shell;
pub mod spill;
pub mod supervisor;
pub mod sweep;

use crate::tooling::{Output, ToolStatus};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A skill whose body `skill_view` can return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillEntry {
    /// The skill's name as the prompt's skills index lists it.
    pub name: String,
    /// Its `SKILL.md`.
    pub path: PathBuf,
}

/// Limits of the `shell` tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellLimits {
    /// Timeout when the model gives none, seconds (120).
    pub default_timeout_s: u64,
    /// The longest timeout the model may ask for, seconds (600).
    pub max_timeout_s: u64,
    /// The strata binary that supervises the command's process group
    /// (`strata __supervise`), or `None` to run it directly (tests of the
    /// library, where no strata binary exists).
    pub supervisor: Option<PathBuf>,
    /// Where running process groups are recorded for the start-up sweep.
    pub registry: Option<PathBuf>,
    /// The sandbox commands run in (applied by the supervisor), or `None`
    /// for none.
    pub sandbox: Option<ShellSandbox>,
    /// Variables removed from a command's environment besides those whose
    /// names hold a secret word: the providers' `api_key_env` names.
    pub hidden_env: Vec<String>,
}

/// The sandbox of a session's `shell` commands (DESIGN §19 "The shell").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellSandbox {
    /// What every command gets and what a call may ask for.
    pub confinement: crate::tooling::sandbox::Confinement,
    /// Where a `workspace-write` command may write besides the workspace
    /// and the temporary directory: a linked worktree's git directories,
    /// `[tools] allow_paths`, `[tools.sandbox] writable` (absolute).
    pub writable: Vec<PathBuf>,
    /// The session's private temporary directory (`TMPDIR`), writable in
    /// every mode.
    pub tmpdir: PathBuf,
    /// `[tools.sandbox] required`: refuse commands when the kernel cannot
    /// confine them.
    pub required: bool,
}

impl Default for ShellLimits {
    fn default() -> Self {
        Self {
            default_timeout_s: 120,
            max_timeout_s: 600,
            supervisor: None,
            registry: None,
            sandbox: None,
            hidden_env: Vec::new(),
        }
    }
}

/// Everything a session's tools need to know about the machine.
#[derive(Debug)]
pub struct ToolEnv {
    /// The workspace root (canonical).
    pub root: PathBuf,
    /// More roots file tools may use (`[tools] allow_paths`, canonical).
    pub allow_paths: Vec<PathBuf>,
    /// `DATA/spill/<session>/`: where large outputs are written, and where
    /// `read_file` may also read.
    pub spill_dir: PathBuf,
    /// The `MEMORY.md` that `memory` appends to.
    pub memory_file: PathBuf,
    /// The session's short id (`1a2b3c4d`): the origin a `memory` note
    /// records.
    pub session: String,
    /// The skills `skill_view` knows.
    pub skills: Vec<SkillEntry>,
    /// `read_file`'s character cap for one call (at most 50,000; smaller
    /// for small windows so a page fits).
    pub read_max_chars: usize,
    /// `read_file`'s line cap for one call (2,000).
    pub read_max_lines: usize,
    /// The `shell` limits.
    pub shell: ShellLimits,
    /// What the model has read or written, for `edit_file`'s
    /// changed-since-read check.
    pub reads: Mutex<edit::ReadLog>,
    /// The characters a streaming handler keeps of each end of its output
    /// (at least the output limit, so the cut is the same as on the whole).
    pub keep_chars: usize,
}

/// The previous state of a file a tool changed, so the change can be undone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The file (canonical path of the file or, for a new file, of its
    /// parent joined with its name).
    pub path: PathBuf,
    /// Its bytes before the change; `None` when the tool created it.
    pub before: Option<Vec<u8>>,
    /// SHA-256 (hex) of its bytes after the change.
    pub after_sha256: String,
}

/// What a handler returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    /// `Ok` or `Error` (a handler never denies or interrupts).
    pub status: ToolStatus,
    /// The output text for the model (before the limits).
    pub output: Output,
    /// A unified diff of a file change, for the user.
    pub diff: Option<String>,
    /// The file change to keep for undo.
    pub change: Option<FileChange>,
    /// `read_file`: the result pages itself and must never be spilled.
    pub paged: bool,
    /// `shell`: the sandbox the command ran in (`None` for other tools).
    pub sandbox: Option<crate::tooling::sandbox::RanIn>,
}

impl ToolOutput {
    /// A successful result with `text`.
    #[must_use]
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Ok,
            output: Output::whole(text),
            diff: None,
            change: None,
            paged: false,
            sandbox: None,
        }
    }

    /// A failed result whose `text` is one sentence for the model.
    #[must_use]
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Error,
            ..Self::ok(text)
        }
    }
}

/// Live progress of a running call (the shell's latest output line).
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

/// The spill file of a call: `spill_dir/<tool_call_id>.txt`, the id made
/// safe for a file name (anything but ASCII letters, digits, `-` and `_`
/// becomes `_`).
#[must_use]
pub fn spill_path(env: &ToolEnv, tool_call_id: &str) -> PathBuf {
    env.spill_dir.join(format!(
        "{}.txt",
        crate::tooling::limits::spill_name(tool_call_id)
    ))
}

/// A text too long to hold in memory, in the file `file` (an MCP
/// result), as the output of the call `tool_call_id`: captured as the
/// shell's output is, so the spill file holds all of it (lines folded) and
/// memory only its head and tail. The file is left in place.
#[must_use]
pub fn output_from_file(env: &ToolEnv, tool_call_id: &str, file: &std::path::Path) -> ToolOutput {
    let mut capture = capture::Capture::new(
        spill_path(env, tool_call_id),
        env.keep_chars,
        crate::tooling::limits::Limits::DEFAULT.max_line_chars,
    );
    if let Err(e) = capture.push_file(file) {
        return ToolOutput::error(format!(
            "The tool's result could not be read back from {} ({e}); call it again.",
            crate::text::visible(&file.display().to_string())
        ));
    }
    let captured = capture.finish();
    if let Some(e) = &captured.spill_error {
        tracing::warn!(error = %e, "a long MCP result could not be written to its spill file");
    }
    ToolOutput {
        output: captured.output,
        ..ToolOutput::ok(String::new())
    }
}

/// Runs the built-in tool `name` with `args` (parsed JSON). File tools run
/// on the blocking pool; `shell` streams its output to `progress`. An
/// unknown name is an error result (the router checks names first).
pub async fn run(
    env: Arc<ToolEnv>,
    tool_call_id: String,
    name: String,
    args: serde_json::Value,
    progress: Progress,
) -> ToolOutput {
    if name == "shell" {
        return shell::run(&env, &tool_call_id, &args, progress).await;
    }
    let blocking = tokio::task::spawn_blocking(move || run_file_tool(&env, &tool_call_id, &name, &args));
    blocking
        .await
        .unwrap_or_else(|e| ToolOutput::error(format!("The tool stopped unexpectedly ({e}).")))
}

fn run_file_tool(env: &ToolEnv, tool_call_id: &str, name: &str, args: &serde_json::Value) -> ToolOutput {
    match name {
        "read_file" => files::read_file(env, args),
        "list_dir" => files::list_dir(env, args),
        "glob" => search::glob(env, args),
        "grep" => search::grep(env, args),
        "write_file" => edit::write_file(env, args),
        "edit_file" => edit::edit_file(env, args),
        "memory" => files::memory(env, tool_call_id, args),
        "skill_view" => files::skill_view(env, args),
        "current_time" => files::current_time(env, args),
        other => ToolOutput::error(format!("There is no tool named `{other}`.")),
    }
}

pub use spill::write_spill;
