//! What a tool call waiting for approval shows: the command or the diff
//! of the change, why it asks, how it would run, and what a lasting grant
//! would allow.

use super::McpSession;
use super::service::ApprovalRequest;
use crate::domain::ToolCall;
use crate::tooling::{Access, approval, schema};
use crate::tools::ToolEnv;

/// The sentence `call` would fail with, found by a dry run, for the calls
/// that can be tried without effect: an edit or a write (the diff is
/// computed without writing) and a note to memory (checked without
/// appending). Such a call is answered with the error instead of being
/// offered for approval; `None` when it would run, or cannot be tried.
#[must_use]
pub fn would_fail(env: Option<&ToolEnv>, call: &ToolCall, arguments: &serde_json::Value) -> Option<String> {
    let env = env?;
    match call.name.as_str() {
        name @ ("edit_file" | "write_file") => crate::tools::edit::preview(env, name, arguments).err(),
        "memory" => crate::tools::files::memory_line(env, &call.id, arguments).err(),
        _ => None,
    }
}

/// The approval request shown to the user for a call: the command, or
/// the diff the change would make (computed without writing; when the
/// call would fail, the sentence it would fail with).
pub fn approval_request(
    env: Option<&ToolEnv>,
    mcp: Option<&McpSession>,
    call: &ToolCall,
    arguments: &serde_json::Value,
    access: Access,
) -> ApprovalRequest {
    let text = |key: &str| {
        arguments
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    };
    let detail = match (call.name.as_str(), env) {
        ("shell", _) => text("command").to_owned(),
        (name @ ("edit_file" | "write_file"), Some(env)) => crate::tools::edit::preview(env, name, arguments)
            .unwrap_or_else(|why| format!("This call would fail: {why}")),
        ("memory", Some(env)) => crate::tools::files::memory_line(env, &call.id, arguments)
            .map_or_else(|why| format!("This call would fail: {why}"), |(line, _)| line),
        _ => serde_json::to_string_pretty(arguments).unwrap_or_default(),
    };
    let why = match (call.name.as_str(), env) {
        ("memory", Some(env)) => format!(
            "This note is appended to {}, which goes into the system prompt of every new session; allow it only if it is a fact you want kept.",
            env.memory_file.display()
        ),
        ("read_file", _) => approval::sensitive_read(&call.name, arguments)
            .map(|kind| {
                format!(
                    "`{}` looks like {}; reading it sends it to the model.",
                    text("path"),
                    kind.describe()
                )
            })
            .unwrap_or_default(),
        (name, _) => mcp
            .and_then(|m| m.access_rule(name))
            .map(|rule| {
                let mut chars = rule.chars();
                let first: String = chars
                    .next()
                    .map(|c| c.to_uppercase().collect())
                    .unwrap_or_default();
                format!("{first}{}.", chars.as_str())
            })
            .unwrap_or_default(),
    };
    let confinement = env
        .and_then(|e| e.shell.sandbox.as_ref())
        .map(|s| &s.confinement)
        .filter(|_| call.name == "shell");
    let leave = confinement.and_then(|c| c.leaving(&call.name, arguments));
    let sandbox = confinement.map(|c| match &leave {
        Some(leave) => leave.describe(),
        None => c.describe(c.for_call(arguments)),
    });
    let offer = approval::grant_offer(&call.name, arguments);
    ApprovalRequest {
        call: call.clone(),
        summary: schema::summary(&call.name, arguments),
        detail,
        access,
        grant: match &offer {
            approval::GrantOffer::None => String::new(),
            approval::GrantOffer::Plain(rule) | approval::GrantOffer::Risky(rule) => rule.to_string(),
        },
        grant_risky: matches!(offer, approval::GrantOffer::Risky(_)),
        why,
        sandbox,
        leaves_sandbox: leave.is_some(),
    }
}
