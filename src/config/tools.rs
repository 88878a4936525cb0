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
    /// attachments may use.
    pub allow_paths: Vec<PathBuf>,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            enabled: None,
            approval: "ask".to_owned(),
            allow: Vec::new(),
            deny: Vec::new(),
            max_rounds: 50,
            allow_paths: Vec::new(),
        }
    }
}
