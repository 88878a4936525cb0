//! The [`SessionService`]: the open session and everything a client asks
//! of it — start (resume, continue or a pending new session), send a
//! message (one turn, cancellable), and the commands of [`Command`] — run
//! in order on the caller's task. Results and progress go to the client as
//! [`ServiceEvent`]s through its [`Sink`]; errors are returned as one
//! sentence each and change nothing.

use super::queries::CountJob;
use super::watch::PromptWatch;
use super::{Opening, ServiceEvent, Sink, snapshot};
use crate::config::{Config, ModelChoice, Paths, ProviderKind, SelectionRequest, select_model};
use crate::conversation::Conversation;
use crate::domain::{LayerName, Message, PromptMode, Session, SessionId};
use crate::provider::ProviderError;
use crate::runtime::{Connected, Runtime, connect, resolve_mode};
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc as std_mpsc};

mod commands;
mod control;
mod lease;
mod mcp;
mod tools;
mod turn;

pub use commands::Command;
pub use control::CompressAsk;
pub use mcp::McpAction;

/// Reads an environment variable (injected so tests need not touch the
/// process environment).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What a client starts the service with.
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
    /// A person at a terminal (the app): new sessions get the interactive
    /// guidelines and advice names slash commands; `false` for headless
    /// clients (`strata chat`), whose advice names subcommands.
    pub interactive: bool,
}

/// The open session (or the pending new one) of one client.
pub struct SessionService {
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
    sink: Sink,
    counts: Option<std_mpsc::Sender<CountJob>>,
    /// Marks layers stale when their files change on disk.
    watch: PromptWatch,
    interactive: bool,
    /// The open session's rows as last read, kept up to date by its turns.
    rows: Option<Rows>,
    /// The open conversation's tool environment, when tools are on.
    tool_env: Option<Arc<crate::tools::ToolEnv>>,
    /// What the user and the server decided about tools in this process,
    /// kept when the conversation is rebuilt.
    tool_prefs: tools::ToolPrefs,
    /// The warnings of the pending session's prompt said so far.
    prompt_warnings: Vec<String>,
    /// The MCP servers while they start (from the session's opening),
    /// before the first request settles their tools.
    mcp_launch: Option<crate::runtime::McpSession>,
    /// The session's MCP servers with their tools settled.
    mcp: Option<Arc<crate::runtime::McpSession>>,
    /// Notified by the client to send without the servers still starting
    /// (the app's Esc while the phase says so).
    skip: Arc<tokio::sync::Notify>,
    /// A previewed compression waiting for the user's answer.
    preview: Option<control::PendingPreview>,
    /// Whether the config-over-server window note was said.
    window_said: std::sync::atomic::AtomicBool,
    /// This service as a holder of session leases (one writer per session).
    holder: lease::Holder,
    /// The session whose lease it holds.
    leased: Option<SessionId>,
    /// Approval answers from the client, read by the turn.
    approvals: (
        tokio::sync::mpsc::UnboundedSender<crate::runtime::ApprovalAnswer>,
        tokio::sync::mpsc::UnboundedReceiver<crate::runtime::ApprovalAnswer>,
    ),
}

/// A stored session's rows the service holds, so a turn reads none again.
struct Rows {
    session: SessionId,
    /// Every message, archived ones included, in order.
    messages: Vec<Message>,
    /// Usage rows, oldest first.
    usage: Vec<crate::domain::Usage>,
    /// The latest compaction still in force.
    last_compaction: Option<crate::domain::Compaction>,
    /// Every compaction record, oldest first (the chart marks them).
    compactions: Vec<crate::domain::Compaction>,
}

impl Rows {
    /// The session's requests as the chart shows them.
    fn requests(&self) -> Vec<crate::runtime::cache_report::RequestPoint> {
        crate::runtime::cache_report::request_points(&self.usage, &self.compactions)
    }

    /// Applies a compaction as the store did: its originals archived by
    /// it, its summary and rewritten copies inserted at their `seq` (after
    /// the originals of the same `seq`, as rows inserted later sort).
    fn compact(&mut self, compaction: &crate::domain::Compaction, plan: &crate::compress::CompressionPlan) {
        let archived: std::collections::HashSet<_> = plan.archived.iter().copied().collect();
        for m in self.messages.iter_mut().filter(|m| archived.contains(&m.id)) {
            m.archived_by = Some(compaction.id);
        }
        self.messages.push(plan.summary.clone());
        self.messages
            .extend(plan.rewritten.iter().map(|(_, copy)| copy.clone()));
        self.messages.sort_by_key(|m| m.seq);
        self.last_compaction = Some(compaction.clone());
        self.compactions.push(compaction.clone());
    }

    /// Replaces the message with `m`'s id, or appends it.
    fn upsert(&mut self, m: &Message) {
        match self.messages.iter().rposition(|x| x.id == m.id) {
            Some(i) => self.messages[i] = m.clone(),
            None => self.messages.push(m.clone()),
        }
    }
}

impl SessionService {
    /// Opens the store and makes a service with nothing open yet; events go
    /// to `sink`, and a connected provider's counter to `counts` (the
    /// draft-counting thread), when given. Call [`SessionService::start`]
    /// with `launch.opening` next.
    ///
    /// # Errors
    /// [`RuntimeError`](crate::runtime::RuntimeError) when the database
    /// cannot be opened.
    pub fn open(
        launch: Launch,
        sink: Sink,
        counts: Option<std_mpsc::Sender<CountJob>>,
    ) -> Result<Self, crate::runtime::RuntimeError> {
        // The app's sentences name slash commands; a headless client's
        // (`strata chat`) name subcommands.
        let client = if launch.interactive {
            crate::runtime::Client::App
        } else {
            crate::runtime::Client::Cli
        };
        // Sessions on a hosted model count with o200k_base: its table is
        // built on a thread of its own while the store opens and the
        // session is read, instead of in the way of the first screen.
        let local_new = launch.opening == Opening::New
            && select_model(&SelectionRequest {
                provider: launch.provider.as_deref(),
                model: launch.model.as_deref(),
                config: &launch.config,
                env: &|name: &str| (launch.env)(name),
            })
            .is_ok_and(|c| c.provider == ProviderKind::Local);
        if !local_new {
            let _ = std::thread::Builder::new()
                .name("strata-warm".into())
                .spawn(|| crate::tokens::Encoding::O200kBase.warm());
        }
        let runtime = Runtime::open(launch.paths, launch.config)?.for_client(client);
        if let Some(notice) = runtime.tidy_tools() {
            sink(ServiceEvent::Notice(notice));
        }
        let watch = PromptWatch::new(Arc::clone(&sink), runtime.paths.config_dir.clone());
        Ok(Self {
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
            sink,
            counts,
            rows: None,
            interactive: launch.interactive,
            tool_env: None,
            tool_prefs: tools::ToolPrefs::default(),
            prompt_warnings: Vec::new(),
            mcp_launch: None,
            mcp: None,
            skip: Arc::new(tokio::sync::Notify::new()),
            preview: None,
            window_said: std::sync::atomic::AtomicBool::new(false),
            holder: lease::Holder::new(),
            leased: None,
            approvals: tokio::sync::mpsc::unbounded_channel(),
        })
    }

    /// The signal that sends the waiting request without the MCP servers
    /// still starting: `notify_waiters()` on it (a notification while
    /// nothing waits is dropped).
    #[must_use]
    pub fn skip_signal(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.skip)
    }

    /// Waits on `skip` instead (a client that made its signal first).
    pub fn set_skip_signal(&mut self, skip: Arc<tokio::sync::Notify>) {
        self.skip = skip;
    }

    /// The store file, for a client's own read-only connection (the
    /// picker's query thread).
    #[must_use]
    pub fn database_path(&self) -> PathBuf {
        self.runtime.paths.database()
    }

    /// Message rows the service has read from the store so far (each
    /// open session's rows once; a turn reads none).
    #[must_use]
    pub fn message_rows_read(&self) -> u64 {
        self.runtime.store.message_rows_read()
    }

    /// Runs one command.
    ///
    /// # Errors
    /// One sentence saying what went wrong and what to do; nothing changed.
    pub async fn run(&mut self, command: Command) -> anyhow::Result<()> {
        // One writer per session: a session another strata has open is
        // only read here.
        if command.writes_session() {
            self.claim(false)?;
        }
        match command {
            Command::Compress(ask) => self.compress_with(ask).await,
            Command::ApplyPreview {
                summary,
                edited,
                force,
            } => self.apply_preview(summary, edited, force).await,
            Command::ListChoices(kind) => self.list_choices(kind).await,
            Command::Model(name) => self.switch_model(&name).await,
            Command::Reload => self.reload().await,
            Command::TakeOver => self.take_over().await,
            other => self.command(other),
        }
    }

    fn emit(&self, e: ServiceEvent) {
        (self.sink)(e);
    }

    fn select(&self, provider: Option<&str>, model: Option<&str>) -> anyhow::Result<ModelChoice> {
        let env = |name: &str| (self.env)(name);
        let choice = select_model(&SelectionRequest {
            provider,
            model,
            config: &self.runtime.config,
            env: &env,
        })?;
        let (choice, note) = self.runtime.apply_served_window(choice);
        if let Some(note) = note
            && !self.window_said.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            self.emit(ServiceEvent::Notice(note.sentence()));
        }
        Ok(choice)
    }

    /// Asks a local server what window it serves (once per base URL and
    /// model; the answer is remembered), and when it answers, sizes the
    /// current choice and conversation to it and says so. Called before the
    /// first request and by the app once it has started, so the gauge,
    /// threshold and output reserve are right before anything is sent.
    pub async fn discover_window(&mut self) {
        let Ok(choice) = self.choice() else {
            return;
        };
        let found = self.runtime.discover_served_window(&choice).await;
        self.count_with_server(&choice).await;
        let Some(found) = found else {
            return;
        };
        let (sized, _) = self.runtime.apply_served_window(choice.clone());
        if sized.context_window == choice.context_window && sized.window_source == choice.window_source {
            return;
        }
        self.emit(ServiceEvent::Notice(format!(
            "the server serves a context window of {} tokens ({} {}); strata sizes requests to it",
            crate::text::group_digits(found.tokens),
            found.server.label(),
            found.detail
        )));
        self.resize(sized);
    }

    /// Counts with the server's own tokenizer when it is a llama.cpp server
    /// whose `/tokenize` answers: the connection's counter is replaced, and
    /// the open session's texts are counted there before it is shown again.
    async fn count_with_server(&mut self, choice: &ModelChoice) {
        let Some(counter) = self.runtime.exact_counter(choice).await else {
            return;
        };
        // Not connected yet: the connection takes it up itself.
        let Some(connected) = self.connected.as_mut() else {
            return;
        };
        if connected.counter.id() == counter.id() {
            return;
        }
        connected.counter = Arc::clone(&counter);
        if let Some(counts) = &self.counts {
            let _ = counts.send(CountJob::Counter(counter));
        }
        self.conversation = None;
        if let Some(session) = self.session.clone()
            && self.conversation_for(&session, choice, false).is_ok()
            && let Some(conversation) = self.conversation.as_mut()
        {
            self.runtime.precount(conversation, &[]).await;
        }
        if let Err(e) = self.refresh() {
            self.emit(ServiceEvent::Error(e.to_string()));
        }
    }

    /// Makes `choice` (the same model with another window) the current one:
    /// the conversation is opened again under it on the next request and
    /// the client gets the new context.
    fn resize(&mut self, choice: ModelChoice) {
        self.choice = Some(choice);
        self.conversation = None;
        if let Err(e) = self.refresh() {
            self.emit(ServiceEvent::Error(e.to_string()));
        }
    }

    fn mode(&self, choice: &ModelChoice) -> PromptMode {
        resolve_mode(self.prompt_mode, &self.runtime.config, choice.context_window)
    }

    /// Connects `choice` unless it is already the connected one. The
    /// current choice, connection and conversation change only once the
    /// new connection stands; on failure they stay as they were and the
    /// client is told so again (see [`SessionService::announce`]).
    fn ensure_connected(&mut self, choice: ModelChoice) -> Result<(), ProviderError> {
        let same = self.is_choice(&choice);
        if same && self.connected.is_some() {
            return Ok(());
        }
        let env = |name: &str| (self.env)(name);
        let sink = Arc::clone(&self.sink);
        let mut progress = |line: &str| sink(ServiceEvent::Progress(line.to_owned()));
        if choice.provider == ProviderKind::Local && self.interactive {
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
        self.use_connection(choice, connected, same);
        Ok(())
    }

    /// Whether `choice` is the provider and model chosen now.
    fn is_choice(&self, choice: &ModelChoice) -> bool {
        self.choice
            .as_ref()
            .is_some_and(|c| c.provider == choice.provider && c.model == choice.model)
    }

    /// [`SessionService::ensure_connected`] for another model, with the
    /// connection made off the session's thread: dropping the future (a
    /// client that stops the switch) leaves everything as it was.
    async fn connect_apart(&mut self, choice: ModelChoice) -> Result<(), ProviderError> {
        let same = self.is_choice(&choice);
        if same && self.connected.is_some() {
            return Ok(());
        }
        let (paths, config, env) = (
            self.runtime.paths.clone(),
            self.runtime.config.clone(),
            Arc::clone(&self.env),
        );
        let sink = Arc::clone(&self.sink);
        let wanted = choice.clone();
        let made = tokio::task::spawn_blocking(move || {
            let mut progress = |line: &str| sink(ServiceEvent::Progress(line.to_owned()));
            connect(&wanted, &paths, &config, &|name: &str| env(name), &mut progress)
        })
        .await
        .unwrap_or_else(|e| {
            Err(ProviderError::Protocol {
                message: format!("the connection was lost while it was made ({e}); try again"),
            })
        });
        match made {
            Ok(connected) => {
                self.use_connection(choice, connected, same);
                Ok(())
            }
            Err(e) => {
                self.announce();
                Err(e)
            }
        }
    }

    /// Makes `connected` (to `choice`; `same`: the model already chosen)
    /// the session's connection.
    fn use_connection(&mut self, choice: ModelChoice, connected: crate::runtime::Connected, same: bool) {
        if let Some(counts) = &self.counts {
            let _ = counts.send(CountJob::Counter(Arc::clone(&connected.counter)));
        }
        if !same {
            // Another model: its window, reserve and prompt differ.
            self.conversation = None;
        }
        self.connected = Some(connected);
        self.choice = Some(choice);
        self.announce();
    }

    /// Tells the client what is connected: the provider and model, or
    /// (after a failed first connection) a status line saying how to go on;
    /// either replaces the progress line of an attempt.
    fn announce(&self) {
        match (&self.choice, &self.connected) {
            (Some(choice), Some(_)) => self.emit(ServiceEvent::Connected {
                provider: choice.provider.as_str().to_owned(),
                model: choice.model.clone(),
                embedded: choice.provider == ProviderKind::Local,
            }),
            // A headless client ends with the connection's error instead.
            _ if !self.interactive => {}
            _ => self.emit(ServiceEvent::Progress(
                "not connected; send a message to try again, or choose a model with /model".into(),
            )),
        }
    }

    /// The choice for a session: its own provider and model unless the
    /// command line named others.
    fn choice_for(&self, session: Option<&Session>) -> anyhow::Result<ModelChoice> {
        match (session, &self.explicit) {
            (Some(s), (None, None)) => self.select(Some(s.provider.as_str()), Some(&s.model)),
            _ => self.select(self.explicit.0.as_deref(), self.explicit.1.as_deref()),
        }
    }

    /// Opens what `opening` names (the stored session is shown before the
    /// possibly slow connection), then connects its provider.
    ///
    /// # Errors
    /// One sentence: the session cannot be found, or the provider cannot
    /// be connected.
    pub fn start(&mut self, opening: Opening) -> anyhow::Result<()> {
        // A session that cannot be found opens a new one instead (the
        // command line checks `--resume` before the app starts), so the
        // client is usable whatever happened; a model that cannot connect
        // leaves the session shown, to retry on the next message or switch
        // with `/model`.
        let session = match self.opening_session(opening) {
            Ok(session) => session,
            Err(e) => {
                self.emit(ServiceEvent::Error(e.to_string()));
                None
            }
        };
        let choice = self.choice_for(session.as_ref())?;
        self.choice = Some(choice.clone());
        self.session = session;
        self.say_if_held();
        // The servers start while the session is shown and the user types.
        self.launch_mcp();
        if self.interactive {
            // `strata chat` says it on stderr itself.
            self.announce_mcp_json();
        }
        // Show what is stored before the (possibly slow) connection.
        self.refresh()?;
        self.ensure_connected(choice)?;
        // Shown again only when the connection changed what is counted
        // (the embedded model's own tokenizer, once it is pulled).
        let counted_alike = match (&self.conversation, &self.connected) {
            (Some(c), Some(connected)) => c.counter().id() == connected.counter.id(),
            _ => self.session.is_none(),
        };
        if counted_alike {
            return Ok(());
        }
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

    /// Sends the current session (or the pending new one) to the client,
    /// whole. The session's rows are read only when the service does not
    /// hold them (another session, or a change that rewrote the history).
    fn refresh(&mut self) -> anyhow::Result<()> {
        let choice = self.choice()?;
        let mode = self.mode(&choice);
        let Some(s) = self.session.clone() else {
            let (view, warnings) = snapshot::pending_view(&self.runtime, &choice, mode, &self.cwd)?;
            // A session not stored yet is built from the files as they are
            // when it is sent, so nothing is watched.
            self.watch.follow(None, None, &self.cwd);
            self.emit(ServiceEvent::Loaded(Box::new(view)));
            // What the prompt leaves out or refuses is said once, not on
            // every refresh.
            if warnings != self.prompt_warnings {
                for w in warnings.iter().filter(|w| !self.prompt_warnings.contains(w)) {
                    self.emit(ServiceEvent::Notice(format!("warning: {w}")));
                }
                self.prompt_warnings = warnings;
            }
            return Ok(());
        };
        let session = self.runtime.store.session(s.id)?.unwrap_or(s);
        self.session = Some(session.clone());
        self.conversation_for(&session, &choice, false)?;
        // A new session, another session or a rebuilt prompt restarts the
        // watch.
        let prompt = self.conversation.as_ref().map(|c| c.prompt().clone());
        if let Some(watched) = self.watch.follow(Some(&session), prompt.as_ref(), &self.cwd) {
            self.mark_drifted(&session, &choice, &watched);
        }
        // The messages go out first: the context needs the tokenizer,
        // whose table may still be being built on a fresh start.
        let messages = self.rows.as_ref().map(|r| r.messages.clone()).unwrap_or_default();
        self.emit(ServiceEvent::Loaded(Box::new(super::SessionView {
            session: Some(session),
            messages,
            context: None,
        })));
        if let Some(context) = self.context_now(&choice) {
            self.emit(ServiceEvent::Context(Box::new(context)));
        }
        Ok(())
    }

    /// Marks stale the layers a new watch follows whose files changed while
    /// nothing watched them (strata was closed, or another session was
    /// open): those `/reload` would rebuild differently. A failure only
    /// leaves them unmarked.
    fn mark_drifted(
        &mut self,
        session: &Session,
        choice: &ModelChoice,
        watched: &std::collections::BTreeSet<LayerName>,
    ) {
        // Only layers that come from files: the others (date, terminal,
        // recent sessions) are rebuilt from the moment, not edited.
        let candidates = watched
            .iter()
            .copied()
            .filter(|l| {
                matches!(
                    l,
                    LayerName::Identity
                        | LayerName::Guidelines
                        | LayerName::Skills
                        | LayerName::Project
                        | LayerName::Memory
                )
            })
            .collect();
        let cwd = self.reload_cwd(session);
        match self.runtime.drifted_layers(session, choice, &cwd, &candidates) {
            Ok(drifted) => self.watch.mark(&drifted),
            Err(e) => {
                tracing::warn!(session = %session.id, error = %e, "could not compare the prompt with its files")
            }
        }
    }

    /// Where `/reload` reads the instruction files from: the directory
    /// strata was started in when it is inside the session's workspace
    /// (as the watch follows it), else the workspace root.
    pub(super) fn reload_cwd(&self, session: &Session) -> PathBuf {
        let root = Path::new(&session.workspace);
        if self.cwd.starts_with(root) {
            self.cwd.clone()
        } else {
            root.to_path_buf()
        }
    }

    /// The counter for `session`'s tokens: the connected provider's, else
    /// the process's shared one for the session's model.
    fn counter_for(&self, session: &Session) -> Arc<dyn crate::tokens::TokenCounter> {
        match &self.connected {
            Some(c) => Arc::clone(&c.counter),
            None => crate::runtime::session_counter(
                &self.runtime.paths,
                &self.runtime.config,
                session.provider,
                &session.model,
            ),
        }
    }

    /// Makes sure the service holds `session`'s rows and a conversation
    /// over them with the current counter. With `freeze`, the prompt is
    /// the one `choice` needs (a new version is stored when the provider,
    /// model or mode changed its fingerprint); without, the stored one is
    /// shown as it is.
    fn conversation_for(
        &mut self,
        session: &Session,
        choice: &ModelChoice,
        freeze: bool,
    ) -> anyhow::Result<()> {
        if self.rows.as_ref().is_none_or(|r| r.session != session.id) {
            let store = &self.runtime.store;
            let compactions = store.compactions(session.id)?;
            let last_compaction = compactions
                .iter()
                .rev()
                .find(|c| c.undone_at.is_none() && c.kind == crate::domain::CompactionKind::Summary)
                .cloned();
            self.rows = Some(Rows {
                session: session.id,
                messages: store.messages(session.id, true)?,
                usage: store.usage(session.id)?,
                last_compaction,
                compactions,
            });
            self.conversation = None;
            self.answer_orphan_calls(session)?;
        }
        let counter = self.counter_for(session);
        let mode = self.mode(choice);
        let wanted = crate::runtime::fingerprint(choice, mode);
        let keep = self.conversation.as_ref().is_some_and(|c| {
            c.session().id == session.id
                && c.counter().id() == counter.id()
                && (!freeze || c.prompt().fingerprint == wanted)
        });
        if keep {
            return Ok(());
        }
        let (session, prompt) = if freeze {
            let prompt = self.runtime.frozen_prompt(
                session,
                choice,
                mode,
                &jiff::Zoned::now(),
                crate::prompt::EnvFacts::from_process(),
            )?;
            let session = self
                .runtime
                .store
                .session(session.id)?
                .unwrap_or_else(|| session.clone());
            (session, prompt)
        } else {
            let prompt = self.runtime.store.current_prompt(session.id)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "session {} has no stored system prompt; the database may be damaged",
                    session.id
                )
            })?;
            (session.clone(), prompt)
        };
        let Some(rows) = &self.rows else {
            return Ok(());
        };
        let conversation = self.runtime.conversation_from(
            session,
            prompt,
            rows.messages.clone(),
            &rows.usage,
            choice,
            counter,
        )?;
        self.conversation = Some(self.with_tools(conversation, choice)?);
        Ok(())
    }

    /// The context snapshot of the open conversation, from what the
    /// service holds.
    fn context_now(&mut self, choice: &ModelChoice) -> Option<super::ContextSnapshot> {
        let conversation = self.conversation.as_mut()?;
        let mut context = self.runtime.live_context(conversation, choice);
        let rows = self.rows.as_ref();
        context.last_usage = rows.and_then(|r| r.usage.last().cloned());
        context.last_compaction = rows.and_then(|r| r.last_compaction.clone());
        context.requests = rows.map(Rows::requests).unwrap_or_default();
        if let Some(mcp) = self.mcp.as_ref() {
            context.tool_servers = crate::runtime::tool_costs::tool_servers(conversation, &mcp.states());
        }
        context.prompt_warnings.clone_from(&self.prompt_warnings);
        Some(context)
    }

    /// Drops the rows and conversation held: the stored history changed
    /// (or another session is open), so the next refresh reads it again.
    fn forget_history(&mut self) {
        self.rows = None;
        self.conversation = None;
    }

    /// Opens the conversation of the current session for a request: its
    /// prompt frozen for the current choice.
    fn open_conversation(&mut self) -> anyhow::Result<()> {
        let choice = self.choice()?;
        let Some(session) = self.session.clone() else {
            return Ok(());
        };
        if self.connected.is_none() {
            anyhow::bail!("no provider is connected; check the key or the model, then try again");
        }
        self.conversation_for(&session, &choice, true)
    }
}
