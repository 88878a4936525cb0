//! Building a system prompt from disk: gather with the workspace adapter,
//! assemble with the pure core, and turn the result into a stored version.

use crate::config::{Config, ModelChoice, Paths};
use crate::domain::{
    Fingerprint, Message, MessageKind, PromptId, PromptMode, Role, Session, SessionId, SystemPrompt,
};
use crate::prompt::{self, AssembledPrompt, EnvFacts, RecentSession, ToolFacts};
use crate::store::{SessionQuery, Store};
use crate::workspace::{self, GatherRequest};
use std::path::Path;

/// The mode to use: an explicit one, then the config's, then `minimal` for
/// windows under 16k tokens and `full` otherwise (DESIGN §4).
#[must_use]
pub fn resolve_mode(explicit: Option<PromptMode>, config: &Config, context_window: u64) -> PromptMode {
    prompt::resolve_mode(explicit, &config.prompt, Some(context_window))
}

/// The fingerprint of a prompt built for `choice` in `mode`.
#[must_use]
pub fn fingerprint(choice: &ModelChoice, mode: PromptMode) -> Fingerprint {
    Fingerprint {
        provider: choice.provider,
        model: choice.model.clone(),
        mode,
        tool_set_hash: String::new(),
        template_version: prompt::TEMPLATE_VERSION,
    }
}

/// Whether `prompt` was built for the full-screen app (its guidelines layer
/// came from the interactive guidelines), so a rebuild keeps that choice.
pub(super) fn built_interactive(prompt: &SystemPrompt) -> bool {
    prompt
        .layers
        .iter()
        .flat_map(|l| &l.sources)
        .any(|s| s.path.ends_with("guidelines_interactive.md"))
}

/// The stored form of an assembled prompt as `version` of `session_id`.
#[must_use]
pub fn to_system_prompt(
    assembled: &AssembledPrompt,
    session_id: SessionId,
    version: u32,
    fingerprint: Fingerprint,
    created_at: i64,
) -> SystemPrompt {
    SystemPrompt {
        id: PromptId::new(),
        session_id,
        version,
        text: assembled.text.clone(),
        layers: assembled.layers.clone(),
        boundary_offset: assembled.boundary_offset,
        sha256: assembled.sha256.clone(),
        fingerprint,
        created_at,
    }
}

/// The prompt a new session would get, for `strata prompt` and for session
/// creation. Whether it is the workspace's first session and the recent
/// sessions digest come from the store when there is one.
pub struct PromptPreview<'a> {
    /// Where strata's files are.
    pub paths: &'a Paths,
    /// The loaded config.
    pub config: &'a Config,
    /// Provider, model and window.
    pub choice: &'a ModelChoice,
    /// The mode to build.
    pub mode: PromptMode,
    /// The working directory the session starts in.
    pub cwd: &'a Path,
    /// The session's start (local zone, for the date line).
    pub now: &'a jiff::Zoned,
    /// Full-screen app (true) or a headless command (false).
    pub interactive: bool,
    /// OS, shell and terminal facts.
    pub env: EnvFacts,
}

/// A [`PromptPreview`] that owns what it needs, with the store's answers
/// already read (whether it is the workspace's first session, the recent
/// ones): assembled off the session's thread, and abandoned when no longer
/// wanted (a `/reload` or a first message the user stops).
pub struct OwnedPreview {
    pub(super) paths: Paths,
    pub(super) config: Config,
    pub(super) choice: ModelChoice,
    pub(super) mode: PromptMode,
    pub(super) cwd: std::path::PathBuf,
    pub(super) now: jiff::Zoned,
    pub(super) interactive: bool,
    pub(super) env: EnvFacts,
    pub(super) first_session: bool,
    pub(super) recent: Vec<RecentSession>,
}

impl OwnedPreview {
    /// The prompt, from the files (no store access).
    #[must_use]
    pub fn assemble(&self) -> AssembledPrompt {
        PromptPreview {
            paths: &self.paths,
            config: &self.config,
            choice: &self.choice,
            mode: self.mode,
            cwd: &self.cwd,
            now: &self.now,
            interactive: self.interactive,
            env: self.env.clone(),
        }
        .assemble(self.first_session, self.recent.clone())
    }
}

impl PromptPreview<'_> {
    /// Builds the prompt; without a store the workspace counts as new.
    ///
    /// # Errors
    /// [`super::RuntimeError::Store`] when the store cannot be read.
    pub fn build(self, store: Option<&Store>) -> Result<AssembledPrompt, super::RuntimeError> {
        let (first_session, recent) = match store {
            Some(store) => history_for_new(store, self.config, self.cwd)?,
            None => (true, Vec::new()),
        };
        Ok(self.assemble(first_session, recent))
    }

    /// Builds the prompt again for an existing `session` (a rebuild after a
    /// compaction, `/reload`, or a model change): whether it was the
    /// workspace's first session and the digest of the sessions before it
    /// are decided as they were when it started, so only what changed on
    /// disk (and the date) changes the bytes.
    ///
    /// # Errors
    /// [`super::RuntimeError::Store`] when the store cannot be read.
    pub fn build_for(self, store: &Store, session: &Session) -> Result<AssembledPrompt, super::RuntimeError> {
        let (first_session, recent) = history_for(store, self.config, self.cwd, session)?;
        Ok(self.assemble(first_session, recent))
    }

    /// Builds the prompt from what the store said about the workspace's
    /// sessions (see [`history_for`]); reads only files.
    fn assemble(self, first_session: bool, recent: Vec<RecentSession>) -> AssembledPrompt {
        let counter =
            super::session_counter(self.paths, self.config, self.choice.provider, &self.choice.model);
        let inputs = workspace::gather(&GatherRequest {
            cwd: self.cwd.to_path_buf(),
            config_dir: self.paths.config_dir.clone(),
            data_dir: self.paths.data_dir.clone(),
            settings: self.config.prompt.clone(),
            mode: self.mode,
            context_window: Some(self.choice.context_window),
            first_session,
            recent,
            model: self.choice.model.clone(),
            provider: self.choice.provider.as_str().to_owned(),
            session_date: workspace::format_session_date(self.now),
            time_zone: workspace::session_time_zone(self.now),
            interactive: self.interactive,
            env: self.env,
            tools: ToolFacts {
                enabled: super::tools_state(self.config, self.choice).on,
                native: true,
                listing: None,
            },
        });
        prompt::assemble(&inputs, counter.as_ref())
    }
}

/// What the store says about a new session's workspace seen from `cwd`:
/// whether it has none yet, and the digest of the recent ones.
///
/// # Errors
/// [`super::RuntimeError::Store`] when the store cannot be read.
pub(super) fn history_for_new(
    store: &Store,
    config: &Config,
    cwd: &Path,
) -> Result<(bool, Vec<RecentSession>), super::RuntimeError> {
    let root = workspace::workspace_root(cwd).to_string_lossy().into_owned();
    Ok((
        store.count_sessions_in_workspace(&root)? == 0,
        recent_digest(store, &root, config.prompt.recent_sessions, None)?,
    ))
}

/// What the store says about the sessions before `session` in the
/// workspace seen from `cwd`: whether it was the first, and the digest of
/// the recent ones, decided as they were when it started.
///
/// # Errors
/// [`super::RuntimeError::Store`] when the store cannot be read.
pub(super) fn history_for(
    store: &Store,
    config: &Config,
    cwd: &Path,
    session: &Session,
) -> Result<(bool, Vec<RecentSession>), super::RuntimeError> {
    let root = workspace::workspace_root(cwd).to_string_lossy().into_owned();
    let earlier = recent_digest(store, &root, usize::MAX, Some(session))?;
    let first_session = store.count_sessions_before(&root, session.created_at, session.id)? == 0;
    let recent = earlier.into_iter().take(config.prompt.recent_sessions).collect();
    Ok((first_session, recent))
}

/// The digest of the last `n` sessions of a workspace (empty when `n` is
/// 0); with `before`, only sessions that started before that one.
fn recent_digest(
    store: &Store,
    workspace: &str,
    n: usize,
    before: Option<&Session>,
) -> Result<Vec<RecentSession>, super::RuntimeError> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let sessions = store.list_sessions(&SessionQuery {
        search: None,
        workspace: Some(workspace.to_owned()),
        limit: if before.is_some() { None } else { Some(n) },
    })?;
    let mut digest = Vec::new();
    let earlier = sessions
        .into_iter()
        .filter(|s| before.is_none_or(|b| s.id != b.id && s.created_at < b.created_at))
        .take(n);
    for s in earlier {
        let messages = store.messages(s.id, false)?;
        let started = jiff::Timestamp::from_millisecond(s.created_at)
            .map(|t| t.strftime("%Y-%m-%d").to_string())
            .unwrap_or_default();
        if let Some(entry) = recent_entry(&s.title, started, &messages) {
            digest.push(entry);
        }
    }
    Ok(digest)
}

/// One session's digest: its first user request, its last substantive
/// assistant reply (one with text), and how many messages lie between.
/// `None` for a session without a user request.
#[must_use]
pub fn recent_entry(title: &str, started: String, messages: &[Message]) -> Option<RecentSession> {
    let first = messages
        .iter()
        .position(|m| m.role == Role::User && m.kind == MessageKind::Normal)?;
    let last = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.content.trim().is_empty())
        .filter(|&i| i > first);
    Some(RecentSession {
        title: title.to_owned(),
        started,
        first_request: messages[first].content.clone(),
        last_reply: last.map(|i| messages[i].content.clone()).unwrap_or_default(),
        omitted: last.map_or(0, |i| i - first - 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_entry_takes_first_request_and_last_substantive_reply() {
        let s = SessionId::new();
        let msgs = vec![
            Message::new(s, Role::User, "fix the parser", 0),
            Message::new(s, Role::Assistant, "looking", 0),
            Message::new(s, Role::User, "thanks", 0),
            Message::new(s, Role::Assistant, "done: parser fixed", 0),
            Message::new(s, Role::Assistant, "  ", 0),
        ];
        let e = recent_entry("t", "2026-11-29".into(), &msgs).unwrap();
        assert_eq!(e.first_request, "fix the parser");
        assert_eq!(e.last_reply, "done: parser fixed");
        assert_eq!(e.omitted, 2);
        assert!(recent_entry("t", String::new(), &msgs[1..2]).is_none());
    }
}
