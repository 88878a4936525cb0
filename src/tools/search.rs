//! `glob` and `grep`, honouring `.gitignore`.

use super::{ToolEnv, ToolOutput};
use serde_json::Value;

pub fn glob(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
pub fn grep(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    ToolOutput::error("unimplemented")
}
