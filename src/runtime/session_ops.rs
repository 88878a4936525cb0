//! Session operations of the app's slash commands that need more than one
//! store call: `/fork` (a copy to branch from), `/reload` (a new prompt
//! version from the files as they are now, and which layers it would
//! change) and `/skill` (a skill's body for the next message).

use super::{Runtime, RuntimeError};
use crate::config::ModelChoice;
use crate::domain::{LayerName, Message, MessageId, Session, SessionId, SystemPrompt};
use crate::prompt::SkillEntry;
use std::collections::BTreeSet;
use std::path::Path;

/// Characters of a skill body sent at most.
pub const SKILL_MAX_CHARS: usize = 100_000;

/// What `/reload` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reloaded {
    /// The files gave the same prompt bytes; nothing was stored.
    Unchanged(SystemPrompt),
    /// A new prompt version was stored and made current.
    NewVersion(SystemPrompt),
}

impl Runtime {
    /// A new session that starts as a copy of `session`: the same frozen
    /// prompt bytes (as its version 1), the active messages copied with new
    /// ids (archived ones stay with the original), `parent_id` pointing
    /// back, the title marked as a fork.
    ///
    /// # Errors
    /// [`RuntimeError::NoPrompt`]; [`RuntimeError::Store`].
    pub fn fork_session(&mut self, session: &Session) -> Result<Session, RuntimeError> {
        let current = self
            .store
            .current_prompt(session.id)?
            .ok_or(RuntimeError::NoPrompt(session.id))?;
        let now = jiff::Timestamp::now().as_millisecond();
        let id = SessionId::new();
        let prompt = SystemPrompt {
            id: crate::domain::PromptId::new(),
            session_id: id,
            version: 1,
            created_at: now,
            ..current
        };
        let fork = Session {
            id,
            title: format!("{} (fork)", session.title),
            current_prompt_id: Some(prompt.id),
            parent_id: Some(session.id),
            created_at: now,
            updated_at: now,
            ..session.clone()
        };
        let mut messages: Vec<Message> = self
            .store
            .messages(session.id, false)?
            .into_iter()
            .map(|m| Message {
                id: MessageId::new(),
                session_id: id,
                ..m
            })
            .collect();
        self.store.create_session(&fork, &prompt)?;
        self.store.append_messages(id, &mut messages)?;
        Ok(fork)
    }

    /// `/reload`, first step: what rebuilding `session`'s prompt from
    /// `cwd` needs (the instruction files, memory and skills as they are
    /// now, seen from the workspace root or a directory in it; same
    /// provider, model and mode). [`super::PromptRebuild::build`] then reads
    /// the files, and [`Runtime::store_reload`] keeps the result.
    ///
    /// # Errors
    /// [`RuntimeError::NoPrompt`]; [`RuntimeError::Store`].
    pub fn reload_plan(
        &self,
        session: &Session,
        choice: &ModelChoice,
        cwd: &Path,
    ) -> Result<super::PromptRebuild, RuntimeError> {
        let current = self
            .store
            .current_prompt(session.id)?
            .ok_or(RuntimeError::NoPrompt(session.id))?;
        self.prompt_rebuild(session, current, choice, cwd)
    }

    /// `/reload`, last step: `rebuilt` stored as the new current version of
    /// the prompt it replaces (`current`) only when its bytes differ; the
    /// provider's cached prefix is lost when they do.
    ///
    /// # Errors
    /// [`RuntimeError::Store`].
    pub fn store_reload(
        &mut self,
        current: SystemPrompt,
        mut rebuilt: SystemPrompt,
    ) -> Result<Reloaded, RuntimeError> {
        if rebuilt.text == current.text {
            return Ok(Reloaded::Unchanged(current));
        }
        self.store.add_prompt_version(&mut rebuilt)?;
        Ok(Reloaded::NewVersion(rebuilt))
    }

    /// The layers among `candidates` whose text `/reload` from `cwd` would
    /// change: what the files they come from say now against the session's
    /// current prompt (for instruction files, memory or skills edited
    /// while nothing watched them). Nothing is stored.
    ///
    /// # Errors
    /// [`RuntimeError::NoPrompt`]; [`RuntimeError::Store`].
    pub fn drifted_layers(
        &mut self,
        session: &Session,
        choice: &ModelChoice,
        cwd: &Path,
        candidates: &BTreeSet<LayerName>,
    ) -> Result<Vec<LayerName>, RuntimeError> {
        let current = self
            .store
            .current_prompt(session.id)?
            .ok_or(RuntimeError::NoPrompt(session.id))?;
        // Only file layers are compared: the command is not run for it.
        let rebuilt = self
            .prompt_rebuild(session, current.clone(), choice, cwd)?
            .without_commands()
            .build();
        let text_of = |p: &SystemPrompt, name: LayerName| {
            p.layers
                .iter()
                .find(|l| l.name == name)
                .and_then(|l| p.text.get(l.start..l.end))
                .map(str::to_owned)
        };
        Ok(candidates
            .iter()
            .copied()
            .filter(|&name| text_of(&current, name) != text_of(&rebuilt, name))
            .collect())
    }

    /// The skills available in the session's workspace (config and
    /// workspace skill directories), sorted by name.
    #[must_use]
    pub fn skills(&self, workspace: &Path) -> Vec<SkillEntry> {
        crate::workspace::list_skills(&self.paths.config_dir, workspace, &self.paths.data_dir).0
    }

    /// `/skill <name>`: the skill's body wrapped as
    /// `<skill name="…">…</skill>`, to attach to the next message.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownSkill`] naming the skills there are;
    /// [`RuntimeError::Skill`] when its file cannot be read.
    pub fn skill_part(&self, workspace: &Path, name: &str) -> Result<String, RuntimeError> {
        let skills = self.skills(workspace);
        let Some(skill) = skills.iter().find(|s| s.name == name) else {
            let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
            return Err(RuntimeError::UnknownSkill {
                name: name.to_owned(),
                known: if known.is_empty() {
                    "none yet".to_owned()
                } else {
                    known.join(", ")
                },
            });
        };
        let body = crate::workspace::read_skill_body(Path::new(&skill.path), SKILL_MAX_CHARS)
            .map_err(|why| RuntimeError::Skill(format!("the skill {name} could not be read ({why})")))?;
        Ok(format!("<skill name=\"{}\">\n{body}\n</skill>", skill.name))
    }
}
