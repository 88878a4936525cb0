//! The commands a client runs on the open session (`/new`, `/resume`,
//! `/model`, `/compress`, `/reload`, ...) and the sentence a failed model
//! switch gets.

use super::SessionService;
use crate::config::ModelChoice;
use crate::domain::ProviderKind;
use crate::provider::ProviderError;
use crate::runtime::service::{ExportFormat, ServiceEvent, files};
use std::path::{Path, PathBuf};

/// A command of a client, run by [`SessionService::run`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Start a new session (created when its first message is sent).
    NewSession,
    /// Resume a session by id or unique id prefix.
    Resume(String),
    /// Rename the current session.
    Rename(String),
    /// Fork the current session.
    Fork,
    /// Compress the history (`/compress [topic]`, `/compress here N`,
    /// "compress up to here"), with or without a preview first.
    Compress(super::CompressAsk),
    /// Store the previewed compression with this summary.
    ApplyPreview {
        /// The summary, as shown or as the user edited it.
        summary: String,
        /// Whether the user changed it.
        edited: bool,
        /// Apply it even though it makes the request bigger.
        force: bool,
    },
    /// Drop the waiting preview.
    CancelPreview,
    /// Send the context list's rows.
    ContextList,
    /// Pin or unpin a message.
    Pin {
        /// The message.
        message: crate::domain::MessageId,
        /// Pin or unpin.
        on: bool,
    },
    /// Exclude or include a message (with its tool call unit).
    Exclude {
        /// The message.
        message: crate::domain::MessageId,
        /// Exclude or include.
        on: bool,
    },
    /// Undo the latest edit and resend.
    UndoEditMessage,
    /// List the items of a picker (the provider's models, the skills).
    ListChoices(crate::runtime::service::ChoiceKind),
    /// Undo the last compression.
    UndoCompress,
    /// Apply changed instruction files, memory and skills.
    Reload,
    /// Pause (`false`) or resume (`true`) automatic compression for the
    /// session; manual compression still runs.
    AutoCompress(bool),
    /// Switch the session's model.
    Model(String),
    /// Append a line to `MEMORY.md`.
    Memory(String),
    /// Load a skill into the next message.
    Skill(String),
    /// Export the session to a file in the workspace.
    Export(ExportFormat),
    /// Prepare the next request for the request inspector.
    InspectRequest,
    /// List the tools with their schema tokens (`/tools`).
    Tools,
    /// Switch one tool on or off for the session (`/tools on|off NAME`).
    ToggleTool {
        /// The tool.
        name: String,
        /// On or off.
        on: bool,
    },
    /// Undo the latest file change of a tool (`/undo-edit`).
    UndoEdit,
    /// `/mcp`: list the MCP servers, switch one, accept or decline the
    /// workspace's `.mcp.json`.
    Mcp(super::McpAction),
    /// Take the open session's lease from the strata that has it open
    /// (`/take-over`, `strata chat --take-over`): that one can then only
    /// read it.
    TakeOver,
}

impl Command {
    /// Whether it writes to the open session (one writer per session: it
    /// needs the session's lease).
    #[must_use]
    pub fn writes_session(&self) -> bool {
        matches!(
            self,
            Self::Rename(_)
                | Self::Compress(_)
                | Self::ApplyPreview { .. }
                | Self::Pin { .. }
                | Self::Exclude { .. }
                | Self::UndoEditMessage
                | Self::UndoCompress
                | Self::Reload
                | Self::AutoCompress(_)
                | Self::Model(_)
                | Self::ToggleTool { .. }
                | Self::UndoEdit
        )
    }

    /// Whether the client may stop it while it runs ([`crate::runtime::Op::Cancel`]):
    /// a compression, a model switch or a reload, which store nothing until
    /// their work is done, and asking the provider for its models.
    #[must_use]
    pub fn cancellable(&self) -> bool {
        matches!(
            self,
            Self::Compress(_)
                | Self::Model(_)
                | Self::Reload
                | Self::ListChoices(crate::runtime::service::ChoiceKind::Model)
        )
    }

    /// What is said when the client stopped it while it ran.
    #[must_use]
    pub fn stopped_notice(&self) -> String {
        match self {
            Self::Model(name) => format!("the switch to {name} was stopped; the session stays on its model"),
            Self::Reload => "the reload was stopped; the session keeps its prompt".to_owned(),
            Self::ListChoices(_) => {
                "listing the models was stopped; /model NAME switches without the list".to_owned()
            }
            _ => "compression cancelled; nothing was stored".to_owned(),
        }
    }

    /// What a client shows while it runs, when it can take long: a
    /// compression (the summariser call), a model switch (connecting), a
    /// reload (the prompt rebuilt).
    #[must_use]
    pub fn working_label(&self) -> Option<String> {
        match self {
            Self::Compress(_) | Self::ApplyPreview { .. } => Some("compressing".to_owned()),
            Self::Model(name) => Some(format!("switching to {name}")),
            Self::Reload => Some("reloading the prompt".to_owned()),
            Self::ListChoices(crate::runtime::service::ChoiceKind::Model) => {
                Some("listing the models".to_owned())
            }
            _ => None,
        }
    }
}

/// Why `/model` could not switch to `choice`, as one sentence short enough
/// for the status bar that says what would work (the session stays on its
/// model).
fn switch_failed(choice: &ModelChoice, e: &ProviderError) -> String {
    let model = &choice.model;
    let gguf = Path::new(model)
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("gguf"));
    match e {
        ProviderError::Local { .. } if gguf && !Path::new(model).is_file() => {
            format!("the model file {model} does not exist; use /model with an existing .gguf file")
        }
        ProviderError::Local { .. } if !gguf && model != crate::config::LOCAL_MODEL_NAME => {
            match hosted_provider(model).and_then(|p| Some((p.as_str(), p.default_key_env()?))) {
                Some((provider, key)) => format!(
                    "the embedded model cannot run {model}; use /model FILE.gguf, or set {key} and use --provider {provider}"
                ),
                None => format!(
                    "the embedded model cannot run {model}; use /model FILE.gguf, or start strata with another --provider"
                ),
            }
        }
        ProviderError::NoKey { provider, key_env } => {
            format!("{key_env} is not set, so {provider} cannot run {model}; export it and restart strata")
        }
        other => format!("cannot switch to {model}: {other}"),
    }
}

/// The hosted provider that serves a well-known model (`claude-*` on
/// Anthropic, the GPT and o-series on OpenAI), if any.
fn hosted_provider(model: &str) -> Option<ProviderKind> {
    crate::tokens::context_window_for(ProviderKind::OpenAi, model)?;
    Some(if model.to_ascii_lowercase().starts_with("claude") {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenAi
    })
}

impl SessionService {
    /// `/model NAME`: the session goes on `name` once it is connected (off
    /// the session's thread, so the client can stop the switch and keep
    /// the model it had).
    pub(super) async fn switch_model(&mut self, name: &str) -> anyhow::Result<()> {
        let provider = self.choice.as_ref().map(|c| c.provider.as_str());
        let choice = self.select(provider, Some(name))?;
        // For this session (and new ones from it); a resumed session
        // keeps its own model. A model that cannot connect changes nothing.
        let wanted = choice.clone();
        self.connect_apart(choice)
            .await
            .map_err(|e| anyhow::anyhow!(switch_failed(&wanted, &e)))?;
        // The prompt version for the new model is built now, so the
        // pane's numbers and the stored session are right at once.
        self.open_conversation()?;
        self.refresh()?;
        self.emit(ServiceEvent::Notice(format!(
            "now on {} ({})",
            wanted.model,
            wanted.provider.as_str()
        )));
        Ok(())
    }

    /// `/reload`: the files are read and the prompt assembled off the
    /// session's thread, so the client can stop it; only a finished
    /// rebuild is stored.
    pub(super) async fn reload(&mut self) -> anyhow::Result<()> {
        let Some(s) = self.session.clone() else {
            anyhow::bail!("this session is empty; its prompt is built from the current files when you send");
        };
        let choice = self.choice()?;
        let cwd = self.reload_cwd(&s);
        let plan = self.runtime.reload_plan(&s, &choice, &cwd)?;
        let current = plan.current.clone();
        let rebuilt = tokio::task::spawn_blocking(move || plan.build())
            .await
            .map_err(|e| anyhow::anyhow!("rebuilding the prompt failed ({e}); try /reload again"))?;
        let reloaded = self.runtime.store_reload(current, rebuilt)?;
        // The prompt now matches the files: nothing is stale.
        self.watch.reset();
        match reloaded {
            crate::runtime::Reloaded::Unchanged(_) => self.emit(ServiceEvent::Notice(
                "the instruction files, memory and skills give the same prompt; nothing changed".into(),
            )),
            crate::runtime::Reloaded::NewVersion(p) => {
                self.forget_history();
                self.refresh()?;
                self.emit(ServiceEvent::Notice(format!(
                    "system prompt rebuilt as version {}; the provider's prompt cache starts over",
                    p.version
                )));
            }
        }
        Ok(())
    }

    pub(super) fn command(&mut self, command: Command) -> anyhow::Result<()> {
        match command {
            Command::NewSession => {
                if self.choice.is_none() {
                    // The opening failed before a model was chosen.
                    self.choice = Some(self.choice_for(None)?);
                }
                self.release();
                self.session = None;
                self.forget_history();
                self.refresh()?;
                self.emit(ServiceEvent::Notice(
                    "new session; it is stored when you send the first message".into(),
                ));
            }
            Command::Resume(id) => {
                let session = self.runtime.store.find_session(&id)?;
                let choice = self.choice_for(Some(&session))?;
                // The current session stays open until the other's model is connected.
                let model = choice.model.clone();
                self.ensure_connected(choice)
                    .map_err(|e| anyhow::anyhow!("cannot resume the session on {model}: {e}"))?;
                self.release();
                self.session = Some(session);
                self.say_if_held();
                self.forget_history();
                self.refresh()?;
            }
            Command::Rename(title) => {
                let Some(s) = &self.session else {
                    anyhow::bail!("this session is not stored yet; send a message first, then rename it");
                };
                self.runtime.store.rename_session(s.id, &title)?;
                self.refresh()?;
                self.emit(ServiceEvent::Notice(format!("renamed to {title}")));
            }
            Command::Memory(text) => {
                let path = files::append_memory(&self.runtime.paths, &text)?;
                // Only the full prompt mode carries memory.
                let mode = match (&self.conversation, self.choice.as_ref()) {
                    (Some(c), _) => c.prompt().fingerprint.mode,
                    (None, Some(choice)) => self.mode(choice),
                    (None, None) => crate::domain::PromptMode::Full,
                };
                let line = if mode == crate::domain::PromptMode::Full {
                    format!(
                        "saved to {}; /reload applies it to this session, new sessions include it",
                        path.display()
                    )
                } else {
                    format!(
                        "saved to {}; this session's {} prompt mode leaves memory out, so the model does not see it (sessions in full mode do)",
                        path.display(),
                        mode.as_str()
                    )
                };
                self.emit(ServiceEvent::Notice(line));
            }
            Command::Export(format) => {
                let Some(s) = self.session.clone() else {
                    anyhow::bail!("this session is empty; send a message before exporting it");
                };
                let dir = self.runtime.paths.exports_dir();
                let path = files::export(&self.runtime, &s, format, &dir)?;
                self.emit(ServiceEvent::Notice(format!("exported to {}", path.display())));
            }
            Command::Tools => {
                if self.session.is_some() && self.connected.is_some() {
                    self.open_conversation()?;
                }
                self.list_tools()?;
            }
            Command::ToggleTool { name, on } => {
                if self.session.is_some() && self.connected.is_some() {
                    self.open_conversation()?;
                }
                self.toggle_tool(&name, on)?;
            }
            Command::UndoEdit => self.undo_edit()?,
            Command::Mcp(action) => {
                if self.session.is_some() && self.connected.is_some() {
                    self.open_conversation()?;
                }
                self.mcp_command(action)?;
            }
            Command::InspectRequest => {
                self.open_conversation()?;
                let Some(c) = self.conversation.as_mut() else {
                    anyhow::bail!(
                        "this session is empty; the first request is prepared when you send a message"
                    );
                };
                let prepared = c.prepare()?;
                let wire = match self.choice()?.provider {
                    crate::config::ProviderKind::OpenAi => serde_json::to_string_pretty(
                        &crate::provider::openai::request_body(&prepared.request),
                    )?,
                    crate::config::ProviderKind::Anthropic => serde_json::to_string_pretty(
                        &crate::provider::anthropic::request_body(&prepared.request),
                    )?,
                    crate::config::ProviderKind::Local => {
                        crate::provider::local::chatml::render(&prepared.request).to_text()
                    }
                };
                self.emit(ServiceEvent::Request(Box::new(
                    crate::runtime::service::RequestView {
                        json: wire,
                        report: prepared.report,
                        prepared_tokens: prepared.prepared_tokens,
                    },
                )));
            }
            Command::UndoCompress => {
                let Some(s) = self.session.clone() else {
                    anyhow::bail!("this session is empty; there is no compression to undo");
                };
                let undone = self.runtime.undo_compress(&s)?;
                self.forget_history();
                self.refresh()?;
                self.emit(ServiceEvent::Notice(format!(
                    "compression undone: {} messages active, prompt version {}",
                    undone.messages, undone.prompt_version
                )));
            }
            Command::Fork => {
                let Some(s) = self.session.clone() else {
                    anyhow::bail!("this session is empty; send a message before forking it");
                };
                let fork = self.runtime.fork_session(&s)?;
                let title = fork.title.clone();
                self.release();
                self.session = Some(fork);
                self.forget_history();
                self.refresh()?;
                self.emit(ServiceEvent::Notice(format!(
                    "now in the fork \"{title}\"; the original session is unchanged (/sessions)"
                )));
            }
            Command::Skill(name) => {
                let root = match &self.session {
                    Some(s) => PathBuf::from(&s.workspace),
                    None => crate::workspace::workspace_root(&self.cwd),
                };
                let part = self.runtime.skill_part(&root, &name)?;
                self.parts.push((part, None));
                self.emit(ServiceEvent::Notice(format!(
                    "the skill {name} goes with your next message"
                )));
            }
            Command::AutoCompress(on) => {
                self.runtime.compression_paused = !on;
                // The engine is rebuilt with the setting on the next refresh.
                self.conversation = None;
                self.refresh()?;
                self.emit(ServiceEvent::Notice(
                    if on {
                        "automatic compression runs again for this session"
                    } else {
                        "automatic compression is paused for this session; /compress still works, /auto-compress on resumes it"
                    }
                    .into(),
                ));
            }
            Command::ContextList => self.context_list()?,
            Command::Pin { message, on } => self.set_flag(message, true, on)?,
            Command::Exclude { message, on } => self.set_flag(message, false, on)?,
            Command::CancelPreview => self.cancel_preview(),

            Command::UndoEditMessage => self.undo_edit_message()?,
            Command::Compress(_)
            | Command::ApplyPreview { .. }
            | Command::ListChoices(_)
            | Command::Model(_)
            | Command::Reload
            | Command::TakeOver => {}
        }
        Ok(())
    }
}
