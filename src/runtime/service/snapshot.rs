//! Building what clients show of a session, on the service's thread: its
//! messages, the budget and pipeline report of the next request, the last
//! usage and compaction; and for a session not stored yet, the budget of
//! the prompt a new session here would get.

use super::{ContextSnapshot, SessionView};
use crate::config::ModelChoice;
use crate::domain::{PromptMode, SessionId};
use crate::prompt::EnvFacts;
use crate::runtime::{PromptPreview, Runtime, fingerprint, session_counter, to_system_prompt};
use std::path::Path;

/// The view of a new session before its first message: no messages, the
/// budget of the prompt it would get; and that prompt's warnings (files
/// cut, refused as prompt injections, left out by the mode).
///
/// # Errors
/// When the store cannot be read while assembling the prompt.
pub fn pending_view(
    runtime: &Runtime,
    choice: &ModelChoice,
    mode: PromptMode,
    cwd: &Path,
) -> anyhow::Result<(SessionView, Vec<String>)> {
    let now = jiff::Zoned::now();
    // `prompt.context_cmd` runs when the session starts, once, not to
    // show what it would get.
    let mut config = runtime.config.clone();
    config.prompt.context_cmd = None;
    let built = PromptPreview {
        paths: &runtime.paths,
        config: &config,
        choice,
        mode,
        cwd,
        now: &now,
        interactive: true,
        env: EnvFacts::from_process(),
    }
    .build(Some(&runtime.store))?;
    let prompt = to_system_prompt(
        &built,
        SessionId::new(),
        1,
        fingerprint(choice, mode),
        now.timestamp().as_millisecond(),
    );
    let counter = session_counter(&runtime.paths, &runtime.config, choice.provider, &choice.model);
    let budget = runtime.budget_of(&prompt, counter.as_ref(), &[], &[], choice);
    let warnings = built.warnings.clone();
    let view = SessionView {
        session: None,
        messages: Vec::new(),
        context: Some(ContextSnapshot {
            prompt,
            budget,
            report: Vec::new(),
            prepared_tokens: None,
            prelimit_tokens: None,
            compression_helps: false,
            stored_tokens: 0,
            prepare_error: None,
            last_usage: None,
            last_compaction: None,
            requests: Vec::new(),
            blocked_reason: runtime.blocked_reason(None),
            tools_off: crate::runtime::tools_state(&runtime.config, choice).why_off,
            sandbox_note: None,
            tool_servers: None,
            prompt_warnings: warnings.clone(),
        }),
    };
    Ok((view, warnings))
}
