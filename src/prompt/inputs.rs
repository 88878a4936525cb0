//! What prompt assembly is built from: everything gathered from disk and the
//! environment, already read and bounded by the `workspace` adapter (or built
//! by hand in tests). Plain data with serde, no behaviour beyond small helpers.

use super::fit::strip_frontmatter;
use super::settings::PromptSettings;
use crate::domain::{PromptMode, SourceStatus};
use serde::{Deserialize, Serialize};

/// The text of one source file as the adapter read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum SourceBody {
    /// Nothing was read (missing, skipped or blocked).
    #[default]
    Empty,
    /// The whole file, decoded.
    Whole {
        /// The decoded text.
        text: String,
    },
    /// A file too large to read whole: its first and last bytes, decoded.
    /// `head` holds at least the cap's head characters and `tail` at least
    /// its tail characters, so assembly can cut exactly.
    Excerpt {
        /// Decoded text from the start of the file.
        head: String,
        /// Decoded text from the end of the file.
        tail: String,
        /// Size of the whole file in bytes (it was never scanned whole).
        original_bytes: u64,
    },
}

/// One optional file: where it is, what the adapter found, and its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceText {
    /// Full path, as shown to the user and to the model.
    pub path: String,
    /// `Found` when there is text, else `Missing`, `Skipped` or `Blocked`.
    /// Never `Truncated`: assembly decides that.
    pub status: SourceStatus,
    /// The text that was read.
    pub body: SourceBody,
    /// Why a file was skipped or blocked, as a clause that completes
    /// "`<path>` was skipped: …" (for example "it is a directory").
    pub note: Option<String>,
    /// Invalid UTF-8 was replaced by U+FFFD while decoding.
    pub lossy: bool,
}

impl SourceText {
    /// A file that was looked for and is absent.
    #[must_use]
    pub fn missing(path: impl Into<String>) -> Self {
        Self::without_text(path, SourceStatus::Missing, None)
    }

    /// A file present but not read, with the reason.
    #[must_use]
    pub fn skipped(path: impl Into<String>, note: impl Into<String>) -> Self {
        Self::without_text(path, SourceStatus::Skipped, Some(note.into()))
    }

    /// A file refused, with the reason.
    #[must_use]
    pub fn blocked(path: impl Into<String>, note: impl Into<String>) -> Self {
        Self::without_text(path, SourceStatus::Blocked, Some(note.into()))
    }

    /// A file read whole.
    #[must_use]
    pub fn whole(path: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            status: SourceStatus::Found,
            body: SourceBody::Whole { text: text.into() },
            note: None,
            lossy: false,
        }
    }

    fn without_text(path: impl Into<String>, status: SourceStatus, note: Option<String>) -> Self {
        Self {
            path: path.into(),
            status,
            body: SourceBody::Empty,
            note,
            lossy: false,
        }
    }

    /// Whether this source has text to include (YAML frontmatter alone
    /// does not count).
    #[must_use]
    pub fn has_text(&self) -> bool {
        self.status == SourceStatus::Found
            && match &self.body {
                SourceBody::Empty => false,
                SourceBody::Whole { text } => !strip_frontmatter(text).trim().is_empty(),
                SourceBody::Excerpt { head, tail, .. } => {
                    !strip_frontmatter(head).trim().is_empty() || !tail.trim().is_empty()
                }
            }
    }
}

/// Tool availability for this prompt.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFacts {
    /// Tools are offered to the model at all.
    pub enabled: bool,
    /// The provider calls tools natively (schemas go in the request, not here).
    pub native: bool,
    /// A textual tool listing for providers without native tool calling.
    pub listing: Option<String>,
}

/// One skill found on disk (metadata only; the body is loaded on demand).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The skill's name (frontmatter `name`, else its directory name).
    pub name: String,
    /// Frontmatter `description`, if it had a usable one.
    pub description: Option<String>,
    /// Frontmatter `category`, if any.
    pub category: Option<String>,
    /// Full path of its `SKILL.md`.
    pub path: String,
    /// Size of `SKILL.md` in bytes.
    pub size: u64,
}

/// Facts about the machine that do not change within a day.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvFacts {
    /// Operating system, e.g. `linux (Debian GNU/Linux 12 (bookworm))`.
    pub os: Option<String>,
    /// The user's shell (`$SHELL`).
    pub shell: Option<String>,
    /// The terminal (`$TERM_PROGRAM`, else `$TERM`).
    pub terminal: Option<String>,
}

/// Where the session works.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceFacts {
    /// The workspace root: the git root inside a repository, else the
    /// working directory.
    pub root: String,
    /// The git repository root, when inside one.
    pub git_root: Option<String>,
    /// The working directory the session started in.
    pub cwd: String,
}

/// A digest of one earlier session of this workspace (`recent` layer).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentSession {
    /// Session title.
    pub title: String,
    /// When it started, formatted by the caller (a date, no time of day).
    pub started: String,
    /// The user's first request.
    pub first_request: String,
    /// The last substantive assistant reply.
    pub last_reply: String,
    /// Messages between the two that the digest leaves out.
    pub omitted: usize,
}

/// The output of `prompt.context_cmd`, as captured by the adapter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputedOutput {
    /// The command as configured.
    pub command: String,
    /// Its standard output, decoded.
    pub output: String,
    /// The adapter stopped reading before the output ended.
    pub cut_short: bool,
}

/// Facts fixed at session start (`session` layer).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFacts {
    /// The date, formatted by the caller, e.g. `Sunday, November 29, 2026`.
    /// Never a time of day: the prompt must not change within a day.
    pub date: String,
    /// The time-zone name, e.g. `Europe/Paris`.
    pub time_zone: String,
    /// Model name.
    pub model: String,
    /// Provider name.
    pub provider: String,
    /// Git branch when the session started, if in a repository.
    pub git_branch: Option<String>,
}

/// Everything [`assemble`](super::assemble) needs. Sources are given in the
/// order they are looked up or included; `Missing` ones are only listed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptInputs {
    /// `full`, `minimal` or `none` (already resolved).
    pub mode: PromptMode,
    /// A person is at the keyboard (the TUI) rather than a script.
    pub interactive: bool,
    /// The model's context window in tokens, for the per-file cap.
    pub context_window: Option<u64>,
    /// `SOUL.md` then `IDENTITY.md`; the first with text is the identity,
    /// else strata's built-in one.
    pub identity_files: Vec<SourceText>,
    /// `TOOLS.md`, appended to the guidelines when tools are enabled.
    pub tools_file: Option<SourceText>,
    /// Tool availability.
    pub tools: ToolFacts,
    /// Skills found (any order; assembly sorts them).
    pub skills: Vec<SkillEntry>,
    /// OS, shell, terminal.
    pub environment: EnvFacts,
    /// Workspace and git roots.
    pub workspace: WorkspaceFacts,
    /// Instruction files of the chosen families, general to specific.
    pub instruction_files: Vec<SourceText>,
    /// Minimal mode: instruction files of the families it does not read
    /// (`.strata.md`, `CLAUDE.md`, Cursor rules) that the workspace has,
    /// named in its warning; empty otherwise.
    pub left_out_instructions: Vec<String>,
    /// `MEMORY.md` from the config directory.
    pub memory_file: Option<SourceText>,
    /// `USER.md` from the config directory.
    pub user_file: Option<SourceText>,
    /// `BOOTSTRAP.md`, only on a workspace's first session.
    pub bootstrap: Option<SourceText>,
    /// Digests of recent sessions, newest first.
    pub recent: Vec<RecentSession>,
    /// Output of `prompt.context_cmd`, if configured.
    pub computed: Option<ComputedOutput>,
    /// Date, model, provider, branch.
    pub session: SessionFacts,
    /// The `[prompt]` settings.
    pub settings: PromptSettings,
    /// Problems found while gathering (one sentence each), reported first.
    pub warnings: Vec<String>,
}
