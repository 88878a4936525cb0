//! What strata records of a tool call's result: its status and what the
//! output limits did to it, stored with the `tool` message that answers the
//! call (DESIGN §15).

use serde::{Deserialize, Serialize};

/// How a tool call ended, as stored with its `tool` message and reported in
/// `strata chat --json` (`ok|error|denied|interrupted|not_run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool ran and succeeded.
    Ok,
    /// The tool ran and failed, or the call could not run (unknown tool,
    /// arguments that are not valid JSON, a path outside the workspace).
    Error,
    /// The user or a rule denied the call.
    Denied,
    /// The call was cancelled or strata stopped while it ran.
    Interrupted,
    /// The call was not run (the round limit was reached).
    NotRun,
}

impl ToolStatus {
    /// The wire name (`"ok"`, `"error"`, `"denied"`, `"interrupted"`, `"not_run"`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Denied => "denied",
            Self::Interrupted => "interrupted",
            Self::NotRun => "not_run",
        }
    }
}

/// The record of one tool result, kept with its `tool` message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultMeta {
    /// The tool's name.
    pub name: String,
    /// How the call ended.
    pub status: ToolStatus,
    /// The output was cut by the per-result limits.
    #[serde(default)]
    pub truncated: bool,
    /// The output was replaced by a preview (per-result or per-round budget).
    #[serde(default)]
    pub previewed: bool,
    /// Where the whole output was written (`DATA/spill/<session>/<id>.txt`).
    #[serde(default)]
    pub spilled_to: Option<String>,
    /// Characters of the whole output, before the limits.
    #[serde(default)]
    pub output_chars: u64,
    /// How long the call ran, milliseconds.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// `shell`: the sandbox the command ran in (`workspace-write`,
    /// `read-only`, `off`, `unavailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// `shell`: the command had the network (and sockets).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
}
