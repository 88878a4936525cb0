//! `read_file`, `list_dir`, `memory`, `skill_view` and `current_time`.

use super::{ToolEnv, ToolOutput};
use serde_json::Value;

pub fn read_file(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
pub fn list_dir(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
pub fn memory(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
pub fn skill_view(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
pub fn current_time(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
