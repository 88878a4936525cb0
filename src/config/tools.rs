//! `[tools]`: whether the model may call tools, and under which rules
//! (DESIGN §15).

use serde::Deserialize;
use std::path::PathBuf;

/// `[tools]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct ToolsConfig {
    /// On or off; unset: on for providers with native tool calling when
    /// the effective window is at least 16,000 tokens, off for the
    /// embedded model.
    pub enabled: Option<bool>,
    /// `ask` (the app asks before a call that may change things:
    /// `write_file`, `edit_file`, `shell`, `memory`, an MCP tool of an
    /// untrusted server, a `read_file` of a credential; headless runs treat
    /// it as `read-only`), `read-only` or `all`.
    pub approval: String,
    /// Rules that run a call without asking: a tool name (`edit_file`) or
    /// a shell command prefix (`shell:cargo test`).
    pub allow: Vec<String>,
    /// Rules that deny a call, checked first.
    pub deny: Vec<String>,
    /// Tool rounds of one turn, at most.
    pub max_rounds: u32,
    /// Directories outside the workspace that file tools and `@path`
    /// attachments may use (and sandboxed `shell` commands may write).
    pub allow_paths: Vec<PathBuf>,
    /// `[tools.sandbox]`: how `shell` commands are confined.
    pub sandbox: SandboxConfig,
    /// Megabytes (10^6 bytes) of spill files kept in the data directory's
    /// `spill/`; the oldest are removed past it (default 256).
    pub spill_max_mb: u64,
}

/// `[tools.sandbox]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// `workspace-write` (the default), `read-only` or `off`.
    pub mode: String,
    /// Whether commands may use the network (and sockets of any kind).
    pub network: bool,
    /// More directories sandboxed commands may write (absolute, or
    /// starting with `~/`), such as `~/.cargo/registry` or `~/.npm`.
    pub writable: Vec<PathBuf>,
    /// Command prefixes that run with the network on (`npm install`).
    pub allow_network: Vec<String>,
    /// Refuse to run `shell` when the kernel cannot confine it.
    pub required: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: "workspace-write".to_owned(),
            network: false,
            writable: Vec::new(),
            allow_network: Vec::new(),
            required: false,
        }
    }
}

/// Default cap of the spill directory (`[tools] spill_max_mb`), megabytes
/// (10^6 bytes).
pub const DEFAULT_SPILL_MAX_MB: u64 = 256;

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            enabled: None,
            approval: "ask".to_owned(),
            allow: Vec::new(),
            deny: Vec::new(),
            max_rounds: 50,
            allow_paths: Vec::new(),
            sandbox: SandboxConfig::default(),
            spill_max_mb: DEFAULT_SPILL_MAX_MB,
        }
    }
}
