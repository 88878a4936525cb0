//! A session's frozen system prompt: the exact bytes sent, the layer table that
//! explains them, and the cache boundary.

use super::ids::{PromptId, SessionId};
use serde::{Deserialize, Serialize};

/// Stability tier of a layer, from most to least stable. The text is ordered
/// by tier; the prompt-cache boundary sits between `context` and `volatile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Identical for every session of this installation.
    Stable,
    /// Identical for every session of one workspace.
    Context,
    /// Fixed for one session, different between sessions.
    Volatile,
}

impl Tier {
    /// `stable`, `context` or `volatile`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stable => "stable",
            Self::Context => "context",
            Self::Volatile => "volatile",
        }
    }
}

/// The name of a layer (DESIGN §4), in the order layers appear in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerName {
    /// Prompt-defence baseline.
    Safety,
    /// Who the assistant is (`SOUL.md`, `IDENTITY.md` or the built-in text).
    Identity,
    /// How to behave (interactive or headless), plus `TOOLS.md`.
    Guidelines,
    /// Notes for a model family.
    ModelGuidance,
    /// A textual tool listing for providers without native tool calling.
    Tools,
    /// Index of available skills.
    Skills,
    /// OS, shell, terminal.
    Environment,
    /// Workspace and git roots.
    Workspace,
    /// Instruction files (AGENTS.md, CLAUDE.md, ...).
    Project,
    /// strata's fixed marker where the cached prefix ends.
    CacheBoundary,
    /// `MEMORY.md` and `USER.md` snapshot.
    Memory,
    /// `BOOTSTRAP.md`, first session of a workspace only.
    Bootstrap,
    /// Digest of recent sessions of the workspace.
    Recent,
    /// Output of `prompt.context_cmd`.
    Computed,
    /// Date, model, provider and git branch at session start.
    Session,
}

impl LayerName {
    /// The snake_case name used in JSON and in the UI.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Safety => "safety",
            Self::Identity => "identity",
            Self::Guidelines => "guidelines",
            Self::ModelGuidance => "model_guidance",
            Self::Tools => "tools",
            Self::Skills => "skills",
            Self::Environment => "environment",
            Self::Workspace => "workspace",
            Self::Project => "project",
            Self::CacheBoundary => "cache_boundary",
            Self::Memory => "memory",
            Self::Bootstrap => "bootstrap",
            Self::Recent => "recent",
            Self::Computed => "computed",
            Self::Session => "session",
        }
    }

    /// The tier this layer belongs to. The cache boundary marker opens the
    /// volatile tier.
    #[must_use]
    pub fn tier(self) -> Tier {
        match self {
            Self::Safety
            | Self::Identity
            | Self::Guidelines
            | Self::ModelGuidance
            | Self::Tools
            | Self::Skills
            | Self::Environment => Tier::Stable,
            Self::Workspace | Self::Project => Tier::Context,
            Self::CacheBoundary
            | Self::Memory
            | Self::Bootstrap
            | Self::Recent
            | Self::Computed
            | Self::Session => Tier::Volatile,
        }
    }
}

/// How much goes into the prompt (DESIGN §4 "Modes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PromptMode {
    /// Everything.
    #[default]
    Full,
    /// For sub-agents and small models: no skills, memory, recent or bootstrap;
    /// project files from the AGENTS.md family only.
    Minimal,
    /// Identity and session only.
    None,
}

impl PromptMode {
    /// `full`, `minimal` or `none`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Minimal => "minimal",
            Self::None => "none",
        }
    }

    /// Parses `full`, `minimal` or `none`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full" => Some(Self::Full),
            "minimal" => Some(Self::Minimal),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

/// What happened to one source file of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceStatus {
    /// Read and included whole.
    Found,
    /// Looked for and absent (costs no tokens).
    Missing,
    /// Included with its middle cut (head 70 %, tail 20 %).
    Truncated,
    /// Present but not included (binary, unreadable, a directory, over the total cap).
    Skipped,
    /// Refused (outside the workspace, or replaced because it looked like an injection).
    Blocked,
}

impl SourceStatus {
    /// `found`, `missing`, `truncated`, `skipped` or `blocked`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Found => "found",
            Self::Missing => "missing",
            Self::Truncated => "truncated",
            Self::Skipped => "skipped",
            Self::Blocked => "blocked",
        }
    }
}

/// One source of a layer, as shown in the layer table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// Full path of the file, or `builtin:<asset>` for strata's own text.
    pub path: String,
    /// What happened to it.
    pub status: SourceStatus,
    /// Size of the original in characters (for a file too large to scan, its
    /// size in bytes).
    pub original_chars: u64,
    /// Characters of it that are in the prompt.
    pub kept_chars: u64,
}

/// One layer of an assembled prompt. `start..end` is a byte range of the
/// prompt text that includes the blank-line separator after the layer, so the
/// ranges of all layers tile the text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerInfo {
    /// Layer name.
    pub name: LayerName,
    /// Its tier.
    pub tier: Tier,
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// Characters in `start..end`.
    pub chars: usize,
    /// Tokens in `start..end` under the prompt's tokenizer.
    pub tokens: usize,
    /// The files it came from.
    pub sources: Vec<SourceInfo>,
}

/// What a frozen prompt was built for. A session whose fingerprint no longer
/// matches gets a new prompt version.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Provider (its name in the stored JSON).
    pub provider: super::provider::ProviderKind,
    /// Model name.
    pub model: String,
    /// Prompt mode.
    pub mode: PromptMode,
    /// Hash of the tool set offered (empty when no tools).
    pub tool_set_hash: String,
    /// Version of strata's prompt templates.
    pub template_version: u32,
}

/// One stored version of a session's system prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemPrompt {
    /// Unique id.
    pub id: PromptId,
    /// Owning session.
    pub session_id: SessionId,
    /// 1 for the prompt built at session creation, then 2, 3, ...
    pub version: u32,
    /// The exact bytes sent as the system prompt.
    pub text: String,
    /// The layer table.
    pub layers: Vec<LayerInfo>,
    /// Byte offset of the cache boundary marker in `text`, if there is one.
    pub boundary_offset: Option<usize>,
    /// Lower-case hex sha256 of `text`.
    pub sha256: String,
    /// What it was built for.
    pub fingerprint: Fingerprint,
    /// Creation time, unix milliseconds.
    pub created_at: i64,
}
