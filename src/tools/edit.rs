//! `write_file` and `edit_file`, the read log behind the changed-since-read
//! check, and undoing a change.

use super::{ToolEnv, ToolOutput};
use serde_json::Value;

/// What the model has read or written, per file.
#[derive(Debug, Default)]
pub struct ReadLog {}

pub fn write_file(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
pub fn edit_file(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}

/// Undoes `change` (stub).
///
/// # Errors
/// Always, in the stub.
pub fn undo(_change: &super::FileChange) -> Result<String, String> {
    Err("unimplemented".into())
}
