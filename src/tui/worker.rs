//! The driver: runs the app's [`Effect`]s off the UI task and reports back
//! as [`AppEvent`]s on an unbounded channel (sending never waits).
//!
//! Three threads, each owning its resource:
//! - the session worker owns the [`Runtime`] (store connection, provider,
//!   conversation) and runs jobs in order on a current-thread tokio
//!   runtime; a streaming turn is cancelled through a one-shot made when its
//!   send is queued;
//! - the query thread and the counting thread (see `background`).

use super::background::{CountJob, spawn_counter, spawn_queries};
use super::event::{AppEvent, Effect, Opening};
use super::snapshot;
use super::watch::PromptWatch;
use crate::config::{Config, ModelChoice, Paths, ProviderKind, SelectionRequest, select_model};
use crate::conversation::Conversation;
use crate::domain::{Message, PromptMode, Role, Session, SessionId};
use crate::provider::ProviderError;
use crate::runtime::{ChatOutput, Connected, NewSession, Runtime, connect, resolve_mode, title_from};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use tokio::sync::{mpsc, oneshot};

/// Reads an environment variable (injected so tests need not touch the
/// process environment).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What the app starts with.
pub struct Launch {
    /// strata's directories.
    pub paths: Paths,
    /// The loaded config.
    pub config: Config,
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--prompt-mode`.
    pub prompt_mode: Option<PromptMode>,
    /// Which session to open.
    pub opening: Opening,
    /// The working directory (its workspace root names the workspace).
    pub cwd: PathBuf,
    /// Environment lookup for API keys and base URLs.
    pub env: EnvLookup,
}

enum Job {
    Start(Opening),
    /// A turn with its cancel signal (made when the effect is queued, so a
    /// cancel that arrives before the turn starts is not lost).
    Send(String, oneshot::Receiver<()>),
    Run(Effect),
}

type CancelSlot = Arc<Mutex<Option<oneshot::Sender<()>>>>;

/// Runs effects in the background; dropping it stops the threads once
/// their current job ends.
pub struct Driver {
    jobs: mpsc::UnboundedSender<Job>,
    cancel: CancelSlot,
    queries: std_mpsc::Sender<(u64, String)>,
    counts: std_mpsc::Sender<CountJob>,
}

impl Driver {
    /// Starts the threads and the opening job (connect the provider,
    /// pulling the embedded model when needed, then load the session).
    /// Results arrive on `events`.
    #[must_use]
    pub fn start(launch: Launch, events: mpsc::UnboundedSender<AppEvent>) -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        let cancel: CancelSlot = Arc::default();
        let queries = spawn_queries(launch.paths.database(), events.clone());
        let counts = spawn_counter(events.clone());
        let opening = launch.opening.clone();
        let worker_counts = counts.clone();
        let worker_events = events;
        std::thread::Builder::new()
            .name("strata-session".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                    let _ = worker_events.send(AppEvent::Error(
                        "cannot start the background runtime; restart strata".into(),
                    ));
                    return;
                };
                rt.block_on(run_worker(launch, rx, worker_events, worker_counts));
            })
            .ok();
        let _ = jobs.send(Job::Start(opening));
        Self {
            jobs,
            cancel,
            queries,
            counts,
        }
    }

    /// Runs one effect; returns false for [`Effect::Quit`].
    pub fn run(&self, effect: Effect) -> bool {
        match effect {
            Effect::Quit => {
                self.cancel_turn();
                return false;
            }
            Effect::Cancel => self.cancel_turn(),
            Effect::ListSessions { ticket, search } => {
                let _ = self.queries.send((ticket, search));
            }
            Effect::CountDraft { ticket, text } => {
                let _ = self.counts.send(CountJob::Count(ticket, text));
            }
            Effect::Send(text) => {
                let (tx, rx) = oneshot::channel();
                if let Ok(mut slot) = self.cancel.lock() {
                    *slot = Some(tx);
                }
                let _ = self.jobs.send(Job::Send(text, rx));
            }
            other => {
                let _ = self.jobs.send(Job::Run(other));
            }
        }
        true
    }

    fn cancel_turn(&self) {
        if let Some(tx) = self.cancel.lock().ok().and_then(|mut s| s.take()) {
            let _ = tx.send(());
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.cancel_turn();
    }
}

struct Worker {
    runtime: Runtime,
    cwd: PathBuf,
    env: EnvLookup,
    explicit: (Option<String>, Option<String>),
    prompt_mode: Option<PromptMode>,
    choice: Option<ModelChoice>,
    connected: Option<Connected>,
    session: Option<Session>,
    conversation: Option<Conversation>,
    /// Parts for the next message (`/skill`), as for `Conversation::attach`.
    parts: Vec<(String, Option<u32>)>,
    events: mpsc::UnboundedSender<AppEvent>,
    counts: std_mpsc::Sender<CountJob>,
    /// Marks layers stale when their files change on disk.
    watch: PromptWatch,
}

async fn run_worker(
    launch: Launch,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    events: mpsc::UnboundedSender<AppEvent>,
    counts: std_mpsc::Sender<CountJob>,
) {
    let runtime = match Runtime::open(launch.paths, launch.config) {
        Ok(r) => r,
        Err(e) => {
            let _ = events.send(AppEvent::Error(e.to_string()));
            return;
        }
    };
    let watch = PromptWatch::new(events.clone(), runtime.paths.config_dir.clone());
    let mut w = Worker {
        watch,
        runtime,
        cwd: launch.cwd,
        env: launch.env,
        explicit: (launch.provider, launch.model),
        prompt_mode: launch.prompt_mode,
        choice: None,
        connected: None,
        session: None,
        conversation: None,
        parts: Vec::new(),
        events,
        counts,
    };
    while let Some(job) = jobs.recv().await {
        let result = match job {
            Job::Start(opening) => w.start(opening),
            Job::Send(text, cancel) => w.send(text, cancel).await,
            Job::Run(Effect::Compress(topic)) => w.compress(topic).await,
            Job::Run(effect) => w.effect(effect),
        };
        if let Err(e) = result {
            w.emit(AppEvent::Error(e.to_string()));
        }
    }
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
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
    crate::tokens::context_window_for(ProviderKind::OpenAi.as_str(), model)?;
    Some(if model.to_ascii_lowercase().starts_with("claude") {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenAi
    })
}

impl Worker {
    fn emit(&self, e: AppEvent) {
        let _ = self.events.send(e);
    }

    fn select(&self, provider: Option<&str>, model: Option<&str>) -> anyhow::Result<ModelChoice> {
        let env = |name: &str| (self.env)(name);
        Ok(select_model(&SelectionRequest {
            provider,
            model,
            config: &self.runtime.config,
            env: &env,
        })?)
    }

    fn mode(&self, choice: &ModelChoice) -> PromptMode {
        resolve_mode(self.prompt_mode, &self.runtime.config, choice.context_window)
    }

    /// Connects `choice` unless it is already the connected one. The
    /// current choice, connection and conversation change only once the
    /// new connection stands; on failure they stay as they were and the app
    /// is told so again (see [`Worker::announce`]).
    fn ensure_connected(&mut self, choice: ModelChoice) -> Result<(), ProviderError> {
        let same = self
            .choice
            .as_ref()
            .is_some_and(|c| c.provider == choice.provider && c.model == choice.model);
        if same && self.connected.is_some() {
            return Ok(());
        }
        let env = |name: &str| (self.env)(name);
        let events = self.events.clone();
        let mut progress = |line: &str| {
            let _ = events.send(AppEvent::Progress(line.to_owned()));
        };
        if choice.provider == ProviderKind::Local {
            progress("loading the embedded model…");
        }
        let connected = match connect(
            &choice,
            &self.runtime.paths,
            &self.runtime.config,
            &env,
            &mut progress,
        ) {
            Ok(c) => c,
            Err(e) => {
                self.announce();
                return Err(e);
            }
        };
        let _ = self
            .counts
            .send(CountJob::Counter(Arc::clone(&connected.counter)));
        self.conversation = None;
        self.connected = Some(connected);
        self.choice = Some(choice);
        self.announce();
        Ok(())
    }

    /// Tells the app what is connected: the provider and model, or (after
    /// a failed first connection) a status line saying how to go on; either
    /// replaces the progress line of an attempt.
    fn announce(&self) {
        match (&self.choice, &self.connected) {
            (Some(choice), Some(_)) => self.emit(AppEvent::Connected {
                provider: choice.provider.as_str().to_owned(),
                model: choice.model.clone(),
                embedded: choice.provider == ProviderKind::Local,
            }),
            _ => self.emit(AppEvent::Progress(
                "not connected; send a message to try again, or choose a model with /model".into(),
            )),
        }
    }

    /// The choice for a session: its own provider and model unless the
    /// command line named others.
    fn choice_for(&self, session: Option<&Session>) -> anyhow::Result<ModelChoice> {
        match (session, &self.explicit) {
            (Some(s), (None, None)) => self.select(Some(&s.provider), Some(&s.model)),
            _ => self.select(self.explicit.0.as_deref(), self.explicit.1.as_deref()),
        }
    }

    /// Opens what `opening` names. A session that cannot be found opens a
    /// new one instead (the command line checks `--resume` before the app
    /// starts), so the app is usable whatever happened; a model that cannot
    /// connect leaves the session shown, to retry on the next message or
    /// switch with `/model`.
    fn start(&mut self, opening: Opening) -> anyhow::Result<()> {
        let session = match self.opening_session(opening) {
            Ok(session) => session,
            Err(e) => {
                self.emit(AppEvent::Error(e.to_string()));
                None
            }
        };
        let choice = self.choice_for(session.as_ref())?;
        self.choice = Some(choice.clone());
        self.session = session;
        // Show what is stored before the (possibly slow) connection.
        self.refresh()?;
        self.ensure_connected(choice)?;
        self.refresh()
    }

    fn opening_session(&self, opening: Opening) -> anyhow::Result<Option<Session>> {
        let root = crate::workspace::workspace_root(&self.cwd)
            .to_string_lossy()
            .into_owned();
        Ok(match opening {
            Opening::Resume(id) => Some(self.runtime.store.find_session(&id)?),
            Opening::Continue => self.runtime.store.latest_session(&root)?,
            Opening::New | Opening::Picker => None,
        })
    }

    fn choice(&self) -> anyhow::Result<ModelChoice> {
        self.choice
            .clone()
            .ok_or_else(|| anyhow::anyhow!("no model is selected; check the config or pass --model"))
    }

    /// Sends the current session (or the pending new one) to the app.
    fn refresh(&mut self) -> anyhow::Result<()> {
        let choice = self.choice()?;
        let mode = self.mode(&choice);
        let view = match &self.session {
            Some(s) => {
                let session = self.runtime.store.session(s.id)?.unwrap_or_else(|| s.clone());
                self.session = Some(session.clone());
                snapshot::session_view(&mut self.runtime, &session, &choice)?
            }
            None => snapshot::pending_view(&self.runtime, &choice, mode, &self.cwd)?,
        };
        // A new session, another session or a rebuilt prompt restarts the
        // watch; a session not stored yet is built from the files as they
        // are when it is sent, so nothing is watched.
        let prompt = view.context.as_ref().map(|c| &c.prompt);
        self.watch.follow(view.session.as_ref(), prompt, &self.cwd);
        self.emit(AppEvent::Loaded(Box::new(view)));
        Ok(())
    }

    fn open_conversation(&mut self) -> anyhow::Result<()> {
        if self.conversation.is_some() {
            return Ok(());
        }
        let choice = self.choice()?;
        let mode = self.mode(&choice);
        let Some(session) = self.session.clone() else {
            return Ok(());
        };
        let Some(connected) = &self.connected else {
            anyhow::bail!("no provider is connected; check the key or the model, then try again");
        };
        let counter = Arc::clone(&connected.counter);
        self.conversation = Some(self.runtime.open_conversation(&session, &choice, mode, counter)?);
        Ok(())
    }

    async fn send(&mut self, text: String, cancel: oneshot::Receiver<()>) -> anyhow::Result<()> {
        if let Err(e) = self.ready_for_turn(&text) {
            // Nothing was stored: the text goes back to the composer.
            self.emit(AppEvent::Unsent(text));
            self.emit(AppEvent::TurnDone {
                status: crate::domain::MessageStatus::Error,
            });
            return Err(e);
        }
        let result = self.turn(text, cancel).await;
        let status = match &result {
            Ok(s) => *s,
            Err(_) => crate::domain::MessageStatus::Error,
        };
        if let Err(e) = self.refresh() {
            self.emit(AppEvent::Error(e.to_string()));
        }
        self.emit(AppEvent::TurnDone { status });
        result.map(|_| ())
    }

    /// Connects, creates the session (titled after `text`) when there is
    /// none, and opens its conversation.
    fn ready_for_turn(&mut self, text: &str) -> anyhow::Result<()> {
        let choice = self.choice()?;
        if self.connected.is_none() {
            self.ensure_connected(choice.clone())?;
        }
        if self.session.is_none() {
            let mode = self.mode(&choice);
            let title = title_from(&[Message::new(SessionId::new(), Role::User, text, 0)]);
            let (session, _, _) = self.runtime.create_session(NewSession {
                cwd: &self.cwd,
                choice: &choice,
                mode,
                title,
                now: &jiff::Zoned::now(),
                interactive: true,
                env: crate::prompt::EnvFacts::from_process(),
            })?;
            self.session = Some(session);
            self.conversation = None;
        }
        self.open_conversation()
    }

    async fn turn(
        &mut self,
        text: String,
        rx: oneshot::Receiver<()>,
    ) -> anyhow::Result<crate::domain::MessageStatus> {
        let cancel = async move {
            if rx.await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        let (Some(conversation), Some(connected)) = (self.conversation.as_mut(), self.connected.as_ref())
        else {
            anyhow::bail!("no provider is connected; check the key or the model, then try again");
        };
        for (part, ttl) in std::mem::take(&mut self.parts) {
            conversation.attach(part, ttl);
        }
        let events = self.events.clone();
        let _ = events.send(AppEvent::StreamStarted { now_ms: now_ms() });
        let mut out = |o: ChatOutput<'_>| {
            let e = match o {
                ChatOutput::Delta(t) => AppEvent::Delta {
                    text: t.to_owned(),
                    now_ms: now_ms(),
                },
                ChatOutput::Usage(u) => AppEvent::Usage(u.clone()),
                ChatOutput::Error(m) => AppEvent::Error(m.to_owned()),
                ChatOutput::Notice(m) => AppEvent::Notice(m.to_owned()),
                ChatOutput::Compressed(c) => AppEvent::Notice(c.feedback.clone()),
            };
            let _ = events.send(e);
        };
        let outcome = self
            .runtime
            .chat_turn(conversation, connected.provider.as_ref(), text, cancel, &mut out)
            .await;
        Ok(outcome?.status)
    }

    /// `/compress [topic]`: a manual compression with the session's
    /// summariser (the connected provider when it is a model); the feedback
    /// line goes to the status bar and the summary appears in the chat.
    async fn compress(&mut self, topic: Option<String>) -> anyhow::Result<()> {
        let Some(session) = self.session.clone() else {
            anyhow::bail!("this session is empty; there is nothing to compress yet");
        };
        let choice = self.choice()?;
        let request = crate::runtime::CompressRequest {
            trigger: crate::compress::Trigger::Manual,
            topic,
            summarizer: crate::runtime::SummarizerArg::Config,
            dry_run: false,
            choice: &choice,
            provider: self.connected.as_ref().map(|c| c.provider.as_ref()),
        };
        let outcome = self.runtime.compress(&session, &request).await?;
        self.conversation = None;
        self.refresh()?;
        let line = if outcome.noop {
            outcome.reason.unwrap_or(outcome.feedback)
        } else {
            outcome.feedback
        };
        self.emit(AppEvent::Notice(line));
        Ok(())
    }

    fn effect(&mut self, effect: Effect) -> anyhow::Result<()> {
        match effect {
            Effect::NewSession => {
                if self.choice.is_none() {
                    // The opening failed before a model was chosen.
                    self.choice = Some(self.choice_for(None)?);
                }
                self.session = None;
                self.conversation = None;
                self.refresh()?;
                self.emit(AppEvent::Notice(
                    "new session; it is stored when you send the first message".into(),
                ));
            }
            Effect::Resume(id) => {
                let session = self.runtime.store.find_session(&id)?;
                let choice = self.choice_for(Some(&session))?;
                // The current session stays open until the other's model is connected.
                let model = choice.model.clone();
                self.ensure_connected(choice)
                    .map_err(|e| anyhow::anyhow!("cannot resume the session on {model}: {e}"))?;
                self.session = Some(session);
                self.conversation = None;
                self.refresh()?;
            }
            Effect::Rename(title) => {
                let Some(s) = &self.session else {
                    anyhow::bail!("this session is not stored yet; send a message first, then rename it");
                };
                self.runtime.store.rename_session(s.id, &title)?;
                self.refresh()?;
                self.emit(AppEvent::Notice(format!("renamed to {title}")));
            }
            Effect::Memory(text) => {
                let path = super::commands::append_memory(&self.runtime.paths, &text)?;
                self.emit(AppEvent::Notice(format!(
                    "saved to {}; /reload applies it to this session, new sessions include it",
                    path.display()
                )));
            }
            Effect::Export(format) => {
                let Some(s) = self.session.clone() else {
                    anyhow::bail!("this session is empty; send a message before exporting it");
                };
                let path = super::commands::export(&self.runtime, &s, format, &self.cwd)?;
                self.emit(AppEvent::Notice(format!("exported to {}", path.display())));
            }
            Effect::Model(name) => {
                let provider = self.choice.as_ref().map(|c| c.provider.as_str());
                let choice = self.select(provider, Some(&name))?;
                // For this session (and new ones from it); a resumed session
                // keeps its own model. A model that cannot connect changes nothing.
                let wanted = choice.clone();
                self.ensure_connected(choice)
                    .map_err(|e| anyhow::anyhow!(switch_failed(&wanted, &e)))?;
                // The prompt version for the new model is built now, so the
                // pane's numbers and the stored session are right at once.
                self.open_conversation()?;
                self.refresh()?;
            }
            Effect::InspectRequest => {
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
                self.emit(AppEvent::Request(Box::new(super::event::RequestView {
                    json: wire,
                    report: prepared.report,
                    prepared_tokens: prepared.prepared_tokens,
                })));
            }
            Effect::UndoCompress => {
                let Some(s) = self.session.clone() else {
                    anyhow::bail!("this session is empty; there is no compression to undo");
                };
                let undone = self.runtime.undo_compress(&s)?;
                self.conversation = None;
                self.refresh()?;
                self.emit(AppEvent::Notice(format!(
                    "compression undone: {} messages active, prompt version {}",
                    undone.messages, undone.prompt_version
                )));
            }
            Effect::Fork => {
                let Some(s) = self.session.clone() else {
                    anyhow::bail!("this session is empty; send a message before forking it");
                };
                let fork = self.runtime.fork_session(&s)?;
                let title = fork.title.clone();
                self.session = Some(fork);
                self.conversation = None;
                self.refresh()?;
                self.emit(AppEvent::Notice(format!(
                    "now in the fork \"{title}\"; the original session is unchanged (/sessions)"
                )));
            }
            Effect::Skill(name) => {
                let root = match &self.session {
                    Some(s) => PathBuf::from(&s.workspace),
                    None => crate::workspace::workspace_root(&self.cwd),
                };
                let part = self.runtime.skill_part(&root, &name)?;
                self.parts.push((part, None));
                self.emit(AppEvent::Notice(format!(
                    "the skill {name} goes with your next message"
                )));
            }
            Effect::Reload => {
                let Some(s) = self.session.clone() else {
                    anyhow::bail!(
                        "this session is empty; its prompt is built from the current files when you send"
                    );
                };
                let choice = self.choice()?;
                let reloaded = self.runtime.reload_prompt(&s, &choice)?;
                // The prompt now matches the files: nothing is stale.
                self.watch.reset();
                match reloaded {
                    crate::runtime::Reloaded::Unchanged(_) => self.emit(AppEvent::Notice(
                        "the instruction files, memory and skills give the same prompt; nothing changed"
                            .into(),
                    )),
                    crate::runtime::Reloaded::NewVersion(p) => {
                        self.conversation = None;
                        self.refresh()?;
                        self.emit(AppEvent::Notice(format!(
                            "system prompt rebuilt as version {}; the provider's prompt cache starts over",
                            p.version
                        )));
                    }
                }
            }
            Effect::Send(_)
            | Effect::Compress(_)
            | Effect::Cancel
            | Effect::Quit
            | Effect::ListSessions { .. }
            | Effect::CountDraft { .. } => {}
        }
        Ok(())
    }
}
