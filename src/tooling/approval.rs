//! Approval policy and rules: run, ask or deny a call (stub).

use super::Access;
use serde_json::Value;

/// The approval policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Ask.
    Ask,
    /// Read-only.
    ReadOnly,
    /// All.
    All,
}

/// A rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    /// A tool.
    Tool(String),
    /// A command prefix.
    Command(String),
}

/// Rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Allow.
    pub allow: Vec<Rule>,
    /// Deny.
    pub deny: Vec<Rule>,
}

/// A verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Run.
    Run,
    /// Ask.
    Ask,
    /// Deny.
    Deny {
        /// Why.
        reason: String,
    },
}

/// Who denied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeniedBy {
    /// The user.
    User,
    /// A rule.
    Rule(String),
    /// Read-only policy.
    ReadOnly,
}

/// Decides (stub).
#[must_use]
pub fn decide(
    access: Access,
    _name: &str,
    _arguments: &Value,
    policy: Policy,
    _rules: &Rules,
    grants: &[Rule],
) -> Verdict {
    match (access, policy) {
        (Access::ReadOnly, _) | (_, Policy::All) => Verdict::Run,
        _ if !grants.is_empty() => Verdict::Run,
        (_, Policy::Ask) => Verdict::Ask,
        (_, Policy::ReadOnly) => Verdict::Deny {
            reason: "read-only".into(),
        },
    }
}

/// The grant (stub).
#[must_use]
pub fn grant_for(name: &str, _arguments: &Value) -> Rule {
    Rule::Tool(name.to_owned())
}

/// The denied text (stub).
#[must_use]
pub fn denied_text(name: &str, reason: Option<&str>, _by: DeniedBy) -> String {
    format!("denied {name}: {}", reason.unwrap_or(""))
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ask" => Ok(Self::Ask),
            "read-only" => Ok(Self::ReadOnly),
            "all" => Ok(Self::All),
            _ => Err(format!("unknown approval '{s}'")),
        }
    }
}

impl std::str::FromStr for Rule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.strip_prefix("shell:") {
            Some(p) => Self::Command(p.to_owned()),
            None => Self::Tool(s.to_owned()),
        })
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tool(t) => f.write_str(t),
            Self::Command(c) => write!(f, "shell:{c}"),
        }
    }
}
