//! A session's prompt built again from the files as they are now, in two
//! steps: what the store knows is read on the session's thread
//! ([`Runtime::prompt_rebuild`]), and the files are read and the prompt
//! assembled by [`PromptRebuild::build`], which owns everything it needs so
//! it can run elsewhere and be abandoned (a `/reload` the user stops).

use super::prompt_build::{OwnedPreview, built_interactive, history_for};
use super::{Runtime, RuntimeError};
use crate::config::ModelChoice;
use crate::domain::{Session, SystemPrompt};
use crate::prompt::EnvFacts;
use std::path::Path;

/// Everything a rebuild of one session's prompt needs, owned.
pub struct PromptRebuild {
    /// The session's current version, which the rebuild replaces.
    pub current: SystemPrompt,
    preview: OwnedPreview,
    version: u32,
}

impl PromptRebuild {
    /// The same rebuild without running `prompt.context_cmd` (its layer is
    /// left out): for comparing the layers that come from files.
    #[must_use]
    pub fn without_commands(mut self) -> Self {
        self.preview.config.prompt.context_cmd = None;
        self
    }

    /// The next version, read from the files (no store access).
    #[must_use]
    pub fn build(self) -> SystemPrompt {
        let built = self.preview.assemble();
        super::to_system_prompt(
            &built,
            self.current.session_id,
            self.version,
            self.current.fingerprint.clone(),
            self.preview.now.timestamp().as_millisecond(),
        )
    }
}

impl Runtime {
    /// What rebuilding `session`'s prompt from `cwd` needs from the store:
    /// its `current` version, its place among the workspace's sessions and
    /// the next version number.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub fn prompt_rebuild(
        &self,
        session: &Session,
        current: SystemPrompt,
        choice: &ModelChoice,
        cwd: &Path,
    ) -> Result<PromptRebuild, RuntimeError> {
        let (first_session, recent) = history_for(&self.store, &self.config, cwd, session)?;
        let version = self
            .store
            .prompt_versions(session.id)?
            .iter()
            .map(|p| p.version)
            .max()
            .unwrap_or(current.version)
            + 1;
        let preview = OwnedPreview {
            paths: self.paths.clone(),
            config: self.config.clone(),
            choice: choice.clone(),
            mode: current.fingerprint.mode,
            cwd: cwd.to_path_buf(),
            now: jiff::Zoned::now(),
            interactive: built_interactive(&current),
            env: EnvFacts::from_process(),
            first_session,
            recent,
        };
        Ok(PromptRebuild {
            current,
            preview,
            version,
        })
    }
}
