//! The built-in tools' schemas and the byte-stable tools array (stub).

use super::Access;
use serde_json::Value;

/// A tool.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Parameters.
    pub parameters: Value,
    /// Access.
    pub access: Access,
}

/// The built-in tools (stub).
#[must_use]
pub fn builtin() -> Vec<ToolSpec> {
    Vec::new()
}

/// A tool set (stub).
#[derive(Clone, Debug, Default)]
pub struct ToolSet {
    specs: Vec<ToolSpec>,
    array: Vec<Value>,
}

impl ToolSet {
    /// New.
    #[must_use]
    pub fn new(specs: Vec<ToolSpec>) -> Self {
        let array = specs.iter().map(|s| serde_json::json!({"type": "function", "function": {"name": s.name, "description": s.description, "parameters": s.parameters}})).collect();
        Self { specs, array }
    }
    /// Get.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.specs.iter().find(|s| s.name == name)
    }
    /// Array.
    #[must_use]
    pub fn array(&self) -> &[Value] {
        &self.array
    }
    /// Json.
    #[must_use]
    pub fn json(&self) -> String {
        Value::Array(self.array.clone()).to_string()
    }
    /// Sha.
    #[must_use]
    pub fn sha256(&self) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(self.json().as_bytes()))
    }
    /// Tokens (stub).
    #[must_use]
    pub fn tokens(&self, counter: &dyn crate::tokens::TokenCounter) -> Vec<(String, u32)> {
        self.specs
            .iter()
            .zip(&self.array)
            .map(|(s, a)| {
                (
                    s.name.clone(),
                    u32::try_from(counter.count(&a.to_string())).unwrap_or(u32::MAX),
                )
            })
            .collect()
    }
    /// Set enabled.
    pub fn set_enabled(&mut self, _name: &str, _on: bool) -> bool {
        false
    }
}

/// Summary (stub).
#[must_use]
pub fn summary(name: &str, _arguments: &Value) -> String {
    name.to_owned()
}
