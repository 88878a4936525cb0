//! Sessions and their frozen system prompts.
//!
//! Invariant: a session's prompt is built once, at creation, and stored as
//! version 1; every later request reuses the stored bytes. A new version is
//! built only when the fingerprint (provider, model, mode, tool set, template
//! version) no longer matches — instruction files changing on disk never
//! rebuild it.

use super::prompt_build::{PromptPreview, fingerprint, to_system_prompt};
use crate::config::{Config, ModelChoice, Paths};
use crate::domain::{PromptMode, Session, SessionId, SystemPrompt};
use crate::prompt::EnvFacts;
use crate::store::{Store, StoreError};
use std::path::Path;

/// Errors of runtime operations; each is one sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The store failed; see its message.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A session has no stored system prompt (a damaged database).
    #[error("session {0} has no stored system prompt; the database may be damaged")]
    NoPrompt(SessionId),
    /// `/skill` named a skill that does not exist.
    #[error(
        "there is no skill named '{name}' (known: {known}); add one as skills/<name>/SKILL.md in the config directory or .strata/skills/ in the workspace"
    )]
    UnknownSkill {
        /// The name asked for.
        name: String,
        /// The names there are, comma-separated.
        known: String,
    },
    /// A skill file could not be read.
    #[error("{0}; check the file and try again")]
    Skill(String),
    /// A compression could not run; nothing changed.
    #[error("{0}")]
    Compress(String),
    /// An import file was refused; nothing was written.
    #[error(transparent)]
    Import(#[from] super::import::ImportError),
    /// A file change could not be undone; nothing changed.
    #[error("{0}")]
    Undo(String),
    /// An edit and resend was refused (one sentence saying why and what to
    /// do); nothing changed.
    #[error("{0}")]
    Edit(String),
    /// `MSG` names no single active message (a bad argument).
    #[error(transparent)]
    Message(#[from] super::message_ref::MessageRefError),
    /// Pin, unpin, exclude or include was refused; nothing changed.
    #[error(transparent)]
    Control(#[from] super::context_control::ControlError),
    /// A config value is invalid (one sentence naming it).
    #[error("{0}; fix it in config.toml")]
    Config(String),
    /// A directory strata needs cannot be made (one sentence saying what
    /// to do).
    #[error("{0}")]
    Directory(String),
    /// Another strata has the session open (one sentence naming it and how
    /// to go on).
    #[error("{0}")]
    Held(String),
}

/// The runtime for headless commands: paths, config and the open store.
pub struct Runtime {
    /// Where strata's files are.
    pub paths: Paths,
    /// The loaded config.
    pub config: Config,
    /// The session store; outside the runtime it is reached only through
    /// `Runtime`'s methods.
    pub(in crate::runtime) store: Store,
    /// Who reads the sentences it makes (lockout, warnings, turn errors).
    client: super::Client,
    /// The strata binary that supervises `shell` commands (`strata
    /// __supervise`), when the process is strata itself.
    pub supervisor: Option<std::path::PathBuf>,
    /// Windows stated by overflow errors in this process, per base URL and
    /// model: they win over the config and discovery until it exits.
    pub(in crate::runtime) overflow_windows: std::collections::HashMap<(String, String), u64>,
    /// The servers asked for their window in this process.
    pub(in crate::runtime) asked_windows: std::collections::HashSet<(String, String)>,
    /// Automatic compression paused by the user for this process's
    /// session (`/auto-compress off`); manual compression still runs.
    pub(in crate::runtime) compression_paused: bool,
}

/// What a new session starts from.
pub struct NewSession<'a> {
    /// Working directory.
    pub cwd: &'a Path,
    /// Provider and model.
    pub choice: &'a ModelChoice,
    /// Prompt mode.
    pub mode: PromptMode,
    /// Title; empty means "untitled" until the first user message names it.
    pub title: String,
    /// Start time (local zone, for the date line).
    pub now: &'a jiff::Zoned,
    /// Full-screen app or headless.
    pub interactive: bool,
    /// OS, shell and terminal facts.
    pub env: EnvFacts,
}

impl Runtime {
    /// Opens the store at `paths.database()`, creating it when missing; its
    /// sentences are for the command line ([`Runtime::for_client`]).
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the database cannot be opened or is from a newer strata.
    pub fn open(paths: Paths, config: Config) -> Result<Self, RuntimeError> {
        let mut store = Store::open(paths.database())?;
        store.recover_interrupted(process_is_alive)?;
        Ok(Self {
            paths,
            config,
            store,
            client: super::Client::Cli,
            // `shell` commands are supervised by `strata __supervise` when
            // this process is the strata binary (not a test harness).
            supervisor: std::env::current_exe()
                .ok()
                .filter(|p| p.file_stem().is_some_and(|s| s == "strata")),
            overflow_windows: std::collections::HashMap::new(),
            compression_paused: false,
            asked_windows: std::collections::HashSet::new(),
        })
    }

    /// This runtime wording its sentences for `client` (the command line's
    /// unless told otherwise).
    #[must_use]
    pub fn for_client(mut self, client: super::Client) -> Self {
        self.client = client;
        self
    }

    /// Who the runtime words its sentences for.
    #[must_use]
    pub fn client(&self) -> super::Client {
        self.client
    }

    /// Creates a session and stores its freshly built prompt as version 1.
    /// Returns the session, its prompt and the assembly warnings.
    ///
    /// # Errors
    /// [`RuntimeError::Store`] when the session cannot be written.
    pub fn create_session(
        &mut self,
        new: NewSession<'_>,
    ) -> Result<(Session, SystemPrompt, Vec<String>), RuntimeError> {
        let build = self.new_session_build(new)?;
        let built = build.assemble();
        self.store_new_session(build, &built)
    }

    /// The prompt to send for `session` with `choice` in `mode`: the stored
    /// one while its fingerprint matches, else a newly built next version
    /// (and the session's provider and model are updated).
    ///
    /// # Errors
    /// [`RuntimeError::NoPrompt`] for a session without a stored prompt,
    /// [`RuntimeError::Store`] when writing fails.
    pub fn frozen_prompt(
        &mut self,
        session: &Session,
        choice: &ModelChoice,
        mode: PromptMode,
        now: &jiff::Zoned,
        env: EnvFacts,
    ) -> Result<SystemPrompt, RuntimeError> {
        let current = self
            .store
            .current_prompt(session.id)?
            .ok_or(RuntimeError::NoPrompt(session.id))?;
        let wanted = fingerprint(choice, mode);
        if current.fingerprint == wanted {
            return Ok(current);
        }
        let built = PromptPreview {
            paths: &self.paths,
            config: &self.config,
            choice,
            mode,
            cwd: Path::new(&session.workspace),
            now,
            // A session started in the app keeps the app's guidelines.
            interactive: super::prompt_build::built_interactive(&current),
            env,
        }
        .build_for(&self.store, session)?;
        let mut prompt = to_system_prompt(
            &built,
            session.id,
            current.version + 1,
            wanted,
            now.timestamp().as_millisecond(),
        );
        self.store
            .update_session_model(session.id, choice.provider, &choice.model)?;
        self.store.add_prompt_version(&mut prompt)?;
        Ok(prompt)
    }
}

/// A conversation's history among `messages`: a reply still streaming
/// belongs to the process writing it (this turn's own reply, or another live
/// strata's; dead writers were marked interrupted at open), so it is neither
/// sent nor compressed until it is settled.
pub(super) fn settled(
    messages: impl IntoIterator<Item = crate::domain::Message>,
) -> Vec<crate::domain::Message> {
    messages
        .into_iter()
        .filter(|m| m.status != crate::domain::MessageStatus::Streaming)
        .collect()
}

/// Whether process `pid` is running (Linux: `/proc/<pid>` exists). Where
/// that cannot be told, every writer counts as gone, so a reply left
/// streaming is marked interrupted at the next start.
fn process_is_alive(pid: u32) -> bool {
    cfg!(target_os = "linux") && Path::new(&format!("/proc/{pid}")).exists()
}

/// A finished import.
pub struct Imported {
    /// The new session.
    pub session: Session,
    /// Messages stored.
    pub messages: usize,
    /// Import and prompt assembly warnings, one sentence each.
    pub warnings: Vec<String>,
}

/// Longest title taken from the first user message, in characters.
const TITLE_CHARS: usize = 60;

/// The first line of the first user message, cut to [`TITLE_CHARS`].
#[must_use]
pub fn title_from(messages: &[crate::domain::Message]) -> String {
    let first = messages
        .iter()
        .find(|m| m.role == crate::domain::Role::User)
        .and_then(|m| m.content.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("Imported session");
    if first.chars().count() <= TITLE_CHARS {
        first.to_owned()
    } else {
        let cut: String = first.chars().take(TITLE_CHARS - 1).collect();
        format!("{cut}…")
    }
}

impl Runtime {
    /// Imports an OpenAI-format `messages` JSON text as a new session with
    /// strata's own frozen prompt. Parsing happens before anything is
    /// written, so a refused file leaves the database unchanged.
    ///
    /// # Errors
    /// [`RuntimeError::Import`] for a malformed file, [`RuntimeError::Store`]
    /// when writing fails.
    pub fn import(
        &mut self,
        text: &str,
        title: Option<String>,
        cwd: &Path,
        choice: &ModelChoice,
        mode: Option<PromptMode>,
    ) -> Result<Imported, RuntimeError> {
        let now = jiff::Zoned::now();
        let placeholder = SessionId::new();
        // Editors on some systems start UTF-8 files with a byte order mark.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut outcome =
            super::import::parse_openai_messages(text, placeholder, now.timestamp().as_millisecond())?;
        let title = title.unwrap_or_else(|| title_from(&outcome.messages));
        let mode = super::resolve_mode(mode, &self.config, choice.context_window);
        let (session, _prompt, mut warnings) = self.create_session(NewSession {
            cwd,
            choice,
            mode,
            title,
            now: &now,
            interactive: false,
            env: EnvFacts::from_process(),
        })?;
        // Counted now, so listings show the session's size straight away.
        let counter = super::session_counter(&self.paths, &self.config, session.provider, &session.model);
        let counts = crate::tokens::TokenCache::new().count_history(counter.as_ref(), &outcome.messages);
        for (m, tokens) in outcome.messages.iter_mut().zip(counts.tokens) {
            m.session_id = session.id;
            m.tokens = Some(crate::domain::TokenCount {
                tokenizer: counter.id().to_owned(),
                tokens,
            });
        }
        self.store.append_messages(session.id, &mut outcome.messages)?;
        warnings.extend(outcome.warnings);
        Ok(Imported {
            session,
            messages: outcome.messages.len(),
            warnings,
        })
    }
}
