//! A new session's first prompt built in two steps, like a `/reload`: what
//! the store knows (is it the workspace's first session, the recent ones)
//! is read on the session's thread ([`Runtime::new_session_build`]); the
//! files are read, `prompt.context_cmd` run and the prompt assembled by
//! [`NewSessionBuild::assemble`], which owns what it needs so it can run
//! elsewhere and be abandoned (a first message the user cancels while a
//! slow command runs); [`Runtime::store_new_session`] keeps the result.

use super::prompt_build::{PromptPreview, history_for_new};
use super::{NewSession, Runtime, RuntimeError};
use crate::config::{Config, ModelChoice, Paths};
use crate::domain::{PromptMode, Session, SessionId, SystemPrompt};
use crate::prompt::{AssembledPrompt, EnvFacts, RecentSession};
use std::path::PathBuf;

/// Everything a new session's first prompt needs, owned.
pub struct NewSessionBuild {
    paths: Paths,
    config: Config,
    choice: ModelChoice,
    mode: PromptMode,
    title: String,
    cwd: PathBuf,
    now: jiff::Zoned,
    interactive: bool,
    env: EnvFacts,
    first_session: bool,
    recent: Vec<RecentSession>,
}

impl NewSessionBuild {
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

impl Runtime {
    /// What `new`'s first prompt needs from the store.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the store cannot be read.
    pub fn new_session_build(&self, new: NewSession<'_>) -> Result<NewSessionBuild, RuntimeError> {
        let (first_session, recent) = history_for_new(&self.store, &self.config, new.cwd)?;
        Ok(NewSessionBuild {
            paths: self.paths.clone(),
            config: self.config.clone(),
            choice: new.choice.clone(),
            mode: new.mode,
            title: new.title,
            cwd: new.cwd.to_path_buf(),
            now: new.now.clone(),
            interactive: new.interactive,
            env: new.env,
            first_session,
            recent,
        })
    }

    /// Stores the session of `build` with `built` as its prompt's version
    /// 1; returns the session, its prompt and the assembly warnings.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the session cannot be written.
    pub fn store_new_session(
        &mut self,
        build: NewSessionBuild,
        built: &AssembledPrompt,
    ) -> Result<(Session, SystemPrompt, Vec<String>), RuntimeError> {
        let now_ms = build.now.timestamp().as_millisecond();
        let id = SessionId::new();
        let prompt = super::to_system_prompt(
            built,
            id,
            1,
            super::fingerprint(&build.choice, build.mode),
            now_ms,
        );
        let session = Session {
            id,
            title: build.title,
            workspace: crate::workspace::workspace_root(&build.cwd)
                .to_string_lossy()
                .into_owned(),
            model: build.choice.model.clone(),
            provider: build.choice.provider,
            current_prompt_id: Some(prompt.id),
            parent_id: None,
            created_at: now_ms,
            updated_at: now_ms,
        };
        self.store.create_session(&session, &prompt)?;
        Ok((session, prompt, built.warnings.clone()))
    }
}
