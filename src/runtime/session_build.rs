//! A new session's first prompt built in two steps, like a `/reload`: what
//! the store knows (is it the workspace's first session, the recent ones)
//! is read on the session's thread ([`Runtime::new_session_build`]); the
//! files are read, `prompt.context_cmd` run and the prompt assembled by
//! [`NewSessionBuild::assemble`], which owns what it needs so it can run
//! elsewhere and be abandoned (a first message the user cancels while a
//! slow command runs); [`Runtime::store_new_session`] keeps the result.

use super::prompt_build::{OwnedPreview, history_for_new};
use super::{NewSession, Runtime, RuntimeError};
use crate::domain::{Session, SessionId, SystemPrompt};
use crate::prompt::AssembledPrompt;

/// Everything a new session's first prompt needs, owned.
pub struct NewSessionBuild {
    title: String,
    preview: OwnedPreview,
}

impl NewSessionBuild {
    /// The prompt, from the files (no store access).
    #[must_use]
    pub fn assemble(&self) -> AssembledPrompt {
        self.preview.assemble()
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
            title: new.title,
            preview: OwnedPreview {
                paths: self.paths.clone(),
                config: self.config.clone(),
                choice: new.choice.clone(),
                mode: new.mode,
                cwd: new.cwd.to_path_buf(),
                now: new.now.clone(),
                interactive: new.interactive,
                env: new.env,
                first_session,
                recent,
            },
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
        let preview = &build.preview;
        let now_ms = preview.now.timestamp().as_millisecond();
        let id = SessionId::new();
        let prompt = super::to_system_prompt(
            built,
            id,
            1,
            super::fingerprint(&preview.choice, preview.mode),
            now_ms,
        );
        let session = Session {
            id,
            title: build.title,
            workspace: crate::workspace::workspace_root(&preview.cwd)
                .to_string_lossy()
                .into_owned(),
            model: preview.choice.model.clone(),
            provider: preview.choice.provider,
            current_prompt_id: Some(prompt.id),
            parent_id: None,
            created_at: now_ms,
            updated_at: now_ms,
        };
        self.store.create_session(&session, &prompt)?;
        Ok((session, prompt, built.warnings.clone()))
    }
}
