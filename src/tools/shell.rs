//! `shell`: `bash -c` in the workspace, in its own process group.

use super::{Progress, ToolEnv, ToolOutput};
use serde_json::Value;

pub async fn run(_env: &ToolEnv, _tool_call_id: &str, _args: &Value, _progress: Progress) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
