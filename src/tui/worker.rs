//! The driver: hands the app's [`Effect`]s to the session service off the
//! UI task and turns the service's events into [`AppEvent`]s on an
//! unbounded channel (sending never waits).
//!
//! Four threads, each owning its resource:
//! - the service thread owns the [`SessionService`] (store connection,
//!   provider, conversation) and runs jobs in order on a current-thread
//!   tokio runtime; a streaming turn is cancelled through a one-shot made
//!   when its send is queued, and its approvals are answered on the
//!   service's approvals channel, whose sender the service thread hands
//!   back once the service is open (the job loop is busy with the turn
//!   while the turn waits for the answer);
//! - the runtime's query thread and counting thread
//!   ([`crate::runtime::service::queries`]);
//! - the input history's thread
//!   ([`crate::runtime::input_history`]), loading the workspace's earlier
//!   inputs at start and keeping each new one.

use super::event::{AppEvent, Effect};
use crate::runtime::ApprovalAnswer;
use crate::runtime::input_history::{HistoryEvent, InputHistory, spawn_input_history};
use crate::runtime::service::queries::{CountJob, spawn_counter, spawn_queries};
use crate::runtime::service::{Command, Launch, ServiceEvent, SessionService, Sink};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use tokio::sync::{mpsc, oneshot};

enum Job {
    /// A turn with what the user allowed to attach and its cancel signal
    /// (made when the effect is queued, so a cancel that arrives before
    /// the turn starts is not lost).
    Send(String, crate::runtime::AttachConsent, oneshot::Receiver<()>),
    /// Edit and resend: a turn too.
    EditSend(crate::domain::MessageId, String, oneshot::Receiver<()>),
    Run(Command),
}

type CancelSlot = Arc<Mutex<Option<oneshot::Sender<()>>>>;

/// The service's approvals sender, set by the service thread once the
/// service is open.
type ApprovalSlot = Arc<Mutex<Option<mpsc::UnboundedSender<ApprovalAnswer>>>>;

/// Runs effects in the background; dropping it stops the threads once
/// their current job ends.
pub struct Driver {
    jobs: mpsc::UnboundedSender<Job>,
    cancel: CancelSlot,
    approvals: ApprovalSlot,
    /// Notified to send without the MCP servers still starting; the
    /// service waits on the same signal.
    skip: Arc<tokio::sync::Notify>,
    queries: std_mpsc::Sender<(u64, String)>,
    counts: std_mpsc::Sender<CountJob>,
    history: InputHistory,
}

impl From<ServiceEvent> for AppEvent {
    fn from(e: ServiceEvent) -> Self {
        match e {
            ServiceEvent::Progress(line) => Self::Progress(line),
            ServiceEvent::Connected {
                provider,
                model,
                embedded,
            } => Self::Connected {
                provider,
                model,
                embedded,
            },
            ServiceEvent::Loaded(view) => Self::Loaded(view),
            ServiceEvent::Message(m) => Self::Message(m),
            ServiceEvent::Tokens(counts) => Self::Tokens(counts),
            ServiceEvent::Context(c) => Self::Context(c),
            ServiceEvent::StreamStarted { now_ms } => Self::StreamStarted { now_ms },
            ServiceEvent::Delta { text, now_ms } => Self::Delta { text, now_ms },
            ServiceEvent::Phase(phase) => Self::Phase(phase),
            ServiceEvent::Usage(u) => Self::Usage(u),
            ServiceEvent::Unsent(text) => Self::Unsent(text),
            ServiceEvent::TurnDone { status } => Self::TurnDone { status },
            ServiceEvent::DraftTokens { ticket, tokens } => Self::DraftTokens { ticket, tokens },
            ServiceEvent::Sessions { ticket, rows } => Self::Sessions { ticket, rows },
            ServiceEvent::Request(r) => Self::Request(r),
            ServiceEvent::Stale(layers) => Self::Stale(layers),
            ServiceEvent::Compressed(outcome) => Self::Notice(outcome.feedback),
            ServiceEvent::CompressPreview(outcome) => Self::CompressPreview(Box::new(preview_view(&outcome))),
            ServiceEvent::ContextList(rows) => Self::ContextList(rows),
            ServiceEvent::Choices { kind, items } => Self::Choices { kind, items },
            ServiceEvent::Tool(t) => Self::Tool(t),
            ServiceEvent::AttachAsk(q) => Self::AttachAsk(q),
            ServiceEvent::Notice(n) => Self::Notice(n),
            ServiceEvent::Error(e) => Self::Error(e),
        }
    }
}

/// What the preview overlay shows of a previewed compression.
fn preview_view(o: &crate::runtime::CompressOutcome) -> super::event::CompressPreviewView {
    super::event::CompressPreviewView {
        summary: o.summary.clone().unwrap_or_default(),
        messages_before: o.messages_before,
        messages_after: o.messages_after,
        tokens_before: o.tokens_before,
        tokens_after: o.tokens_after,
        kept_verbatim: o
            .kept_verbatim
            .iter()
            .map(|k| super::event::KeptRow {
                pos: k.pos,
                role: k.role,
                tokens: k.tokens,
                preview: k.preview.clone(),
            })
            .collect(),
        topic: o.topic.clone(),
        summarizer: o
            .summarizer
            .as_ref()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        warnings: o.warnings.clone(),
        grows: o.tokens_after > o.tokens_before,
        uncached_tokens: o.uncached_tokens_next_request,
    }
}

impl Driver {
    /// Starts the threads and the opening job (connect the provider,
    /// pulling the embedded model when needed, then load the session).
    /// Results arrive on `events`.
    #[must_use]
    pub fn start(launch: Launch, events: mpsc::UnboundedSender<AppEvent>) -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        let cancel: CancelSlot = Arc::default();
        let approvals: ApprovalSlot = Arc::default();
        let service_approvals = Arc::clone(&approvals);
        let skip = Arc::new(tokio::sync::Notify::new());
        let service_skip = Arc::clone(&skip);
        let service_events = events.clone();
        let sink: Sink = Arc::new(move |e: ServiceEvent| {
            let _ = service_events.send(e.into());
        });
        let queries = spawn_queries(launch.paths.database(), Arc::clone(&sink));
        let history_events = events.clone();
        let history = spawn_input_history(launch.paths.database(), &launch.cwd, move |e| {
            let _ = history_events.send(match e {
                HistoryEvent::Loaded(rows) => AppEvent::History(rows),
                HistoryEvent::Failed(text) => AppEvent::Error(text),
            });
        });
        let counts = spawn_counter(Arc::clone(&sink));
        let worker_counts = counts.clone();
        std::thread::Builder::new()
            .name("strata-session".into())
            .spawn(move || {
                // One worker thread runs spawned tasks (MCP servers starting)
                // while the service does its synchronous opening work here.
                let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("strata-tasks")
                    .enable_all()
                    .build()
                else {
                    sink(ServiceEvent::Error(
                        "cannot start the background runtime; restart strata".into(),
                    ));
                    return;
                };
                rt.block_on(run_service(
                    launch,
                    rx,
                    sink,
                    worker_counts,
                    (service_approvals, service_skip),
                ));
            })
            .ok();
        Self {
            jobs,
            cancel,
            approvals,
            skip,
            queries,
            counts,
            history,
        }
    }

    /// Runs one effect; returns false for [`Effect::Quit`].
    pub fn run(&self, effect: Effect) -> bool {
        let command = match effect {
            Effect::Quit => {
                self.cancel_turn();
                return false;
            }
            Effect::Cancel => {
                self.cancel_turn();
                return true;
            }
            Effect::SkipServers => {
                self.skip.notify_waiters();
                return true;
            }
            Effect::ListSessions { ticket, search } => {
                let _ = self.queries.send((ticket, search));
                return true;
            }
            Effect::CountDraft { ticket, text } => {
                let _ = self.counts.send(CountJob::Count(ticket, text));
                return true;
            }
            Effect::RememberInput(text) => {
                self.history.remember(text);
                return true;
            }
            Effect::Send(text) => {
                self.send(text, crate::runtime::AttachConsent::default());
                return true;
            }
            Effect::SendAttaching { text, allowed } => {
                let consent = crate::runtime::AttachConsent {
                    allowed,
                    answered: true,
                };
                self.send(text, consent);
                return true;
            }
            Effect::NewSession => Command::NewSession,
            Effect::Resume(id) => Command::Resume(id),
            Effect::Rename(title) => Command::Rename(title),
            Effect::Fork => Command::Fork,
            Effect::Compress(ask) => Command::Compress(ask),
            Effect::LoadContextList => Command::ContextList,
            Effect::ListChoices(kind) => Command::ListChoices(kind),
            Effect::SetPinned { message, on } => Command::Pin { message, on },
            Effect::SetExcluded { message, on } => Command::Exclude { message, on },
            Effect::ApplyPreview {
                summary,
                edited,
                force,
            } => Command::ApplyPreview {
                summary,
                edited,
                force,
            },
            Effect::CancelPreview => Command::CancelPreview,
            Effect::UndoEditMessage => Command::UndoEditMessage,
            Effect::AutoCompress(on) => Command::AutoCompress(on),
            Effect::EditResend { message, text } => {
                let (tx, rx) = oneshot::channel();
                if let Ok(mut slot) = self.cancel.lock() {
                    *slot = Some(tx);
                }
                let _ = self.jobs.send(Job::EditSend(message, text, rx));
                return true;
            }
            // Run by the terminal loop itself (it owns the screen).
            Effect::EditInEditor(_) => return true,
            Effect::UndoCompress => Command::UndoCompress,
            Effect::Reload => Command::Reload,
            Effect::Model(name) => Command::Model(name),
            Effect::Memory(text) => Command::Memory(text),
            Effect::Skill(name) => Command::Skill(name),
            Effect::Export(format) => Command::Export(format),
            Effect::Approve(answer) => {
                let sender = self.approvals.lock().ok().and_then(|s| s.clone());
                if let Some(tx) = sender {
                    let _ = tx.send(answer);
                }
                return true;
            }
            Effect::InspectRequest => Command::InspectRequest,
            Effect::Tools => Command::Tools,
            Effect::ToggleTool { name, on } => Command::ToggleTool { name, on },
            Effect::UndoEdit => Command::UndoEdit,
            Effect::Mcp(action) => Command::Mcp(action),
        };
        let _ = self.jobs.send(Job::Run(command));
        true
    }

    /// Queues a turn with its cancel signal.
    fn send(&self, text: String, consent: crate::runtime::AttachConsent) {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut slot) = self.cancel.lock() {
            *slot = Some(tx);
        }
        let _ = self.jobs.send(Job::Send(text, consent, rx));
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

async fn run_service(
    launch: Launch,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    sink: Sink,
    counts: std_mpsc::Sender<CountJob>,
    (approvals, skip): (ApprovalSlot, Arc<tokio::sync::Notify>),
) {
    let opening = launch.opening.clone();
    let mut service = match SessionService::open(launch, Arc::clone(&sink), Some(counts)) {
        Ok(s) => s,
        Err(e) => {
            sink(ServiceEvent::Error(e.to_string()));
            return;
        }
    };
    if let Ok(mut slot) = approvals.lock() {
        *slot = Some(service.approvals());
    }
    service.set_skip_signal(skip);
    if let Err(e) = service.start(opening) {
        sink(ServiceEvent::Error(e.to_string()));
    }
    service.discover_window().await;
    while let Some(job) = jobs.recv().await {
        let result = match job {
            Job::Send(text, consent, rx) => {
                let cancel = async move {
                    if rx.await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                service.send_attaching(text, consent, cancel).await
            }
            Job::EditSend(message, text, rx) => {
                let cancel = async move {
                    if rx.await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                service.edit_and_send(message, text, cancel).await
            }
            Job::Run(command) => service.run(command).await,
        };
        if let Err(e) = result {
            sink(ServiceEvent::Error(e.to_string()));
        }
    }
}
