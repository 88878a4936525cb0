//! The one door into an open session: [`SessionHandle`] runs the session
//! service on a thread of its own and takes [`Op`]s; the service's
//! [`ServiceEvent`]s go to the client's sink (sending never waits).
//!
//! Four threads, each owning its resource:
//! - the service thread owns the [`SessionService`] (store connection,
//!   provider, conversation) and runs ops in order on a tokio runtime with
//!   one worker for spawned tasks (MCP servers starting); a turn is
//!   cancelled through a one-shot made when its op is queued, so a cancel
//!   that arrives before the turn starts is not lost, and its approvals are
//!   answered on the service's approvals channel, whose sender the service
//!   thread hands back once the service is open (the op loop is busy with
//!   the turn while the turn waits for the answer);
//! - the query thread and the counting thread ([`super::service::queries`]);
//! - the input history's thread ([`super::input_history`]), loading the
//!   workspace's earlier inputs at start and keeping each new one.

use super::ApprovalAnswer;
use super::AttachConsent;
use super::input_history::{HistoryEvent, InputHistory, spawn_input_history};
use super::service::queries::{CountJob, spawn_counter, spawn_queries};
use super::service::{Command, Launch, ServiceEvent, SessionService, Sink};
use crate::domain::MessageId;
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use tokio::sync::{mpsc, oneshot};

/// What a client asks of its open session: the one protocol in, every
/// client's (the app's effects, `strata chat`'s turn).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Send a message, with what the user allowed to attach (a turn).
    Send {
        /// The message as typed.
        text: String,
        /// The `@path` attachments the user answered for.
        consent: AttachConsent,
    },
    /// Edit a user message and send again from it (a turn).
    EditSend {
        /// The message edited.
        message: MessageId,
        /// Its new text.
        text: String,
    },
    /// One of the service's commands, run in order after the ops before.
    Run(Command),
    /// Cancel the turn queued last, running or not yet started (the
    /// partial reply is kept).
    Cancel,
    /// Answer the approval the running turn waits for (at once, even
    /// while the turn runs).
    Approve(ApprovalAnswer),
    /// Send without the MCP servers still starting.
    SkipServers,
    /// The sessions matching `search` (answered as `ServiceEvent::Sessions`
    /// with `ticket`, off the op queue).
    ListSessions {
        /// Echoed in the answer.
        ticket: u64,
        /// What to look for; empty for every session.
        search: String,
        /// Every workspace's sessions, not only the current workspace's.
        all: bool,
    },
    /// The tokens of a draft (answered as `ServiceEvent::DraftTokens`).
    CountDraft {
        /// Echoed in the answer.
        ticket: u64,
        /// The draft.
        text: String,
    },
    /// Keep a sent input in the workspace's input history.
    RememberInput(String),
}

/// A turn or a command, queued for the service thread.
enum Job {
    Send(String, AttachConsent, oneshot::Receiver<()>),
    EditSend(MessageId, String, oneshot::Receiver<()>),
    Run(Command, Option<oneshot::Receiver<()>>),
}

type CancelSlot = Arc<Mutex<Option<oneshot::Sender<()>>>>;

/// The service's approvals sender, set by the service thread once the
/// service is open.
type ApprovalSlot = Arc<Mutex<Option<mpsc::UnboundedSender<ApprovalAnswer>>>>;

/// An open session on its own threads; dropping it cancels the turn in
/// progress and stops the threads once their current job ends.
pub struct SessionHandle {
    /// `None` once [`SessionHandle::finish`] closed the queue.
    jobs: Option<mpsc::UnboundedSender<Job>>,
    cancel: CancelSlot,
    approvals: ApprovalSlot,
    /// Notified to send without the MCP servers still starting; the
    /// service waits on the same signal.
    skip: Arc<tokio::sync::Notify>,
    /// The threads an interactive client has besides the service's.
    side: Option<Side>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// A one-shot client's results: the opening's, then each job's.
    results: Option<std_mpsc::Receiver<anyhow::Result<()>>>,
}

/// The query, counting and input-history threads of an interactive client.
struct Side {
    queries: std_mpsc::Sender<super::service::queries::PickerQuery>,
    counts: std_mpsc::Sender<CountJob>,
    history: InputHistory,
}

/// Cancels a session's turn from another thread (Ctrl-C, a closed
/// output) while its owner waits.
#[derive(Clone)]
pub struct Canceller(CancelSlot);

impl Canceller {
    /// Cancels the turn queued last, running or not yet started.
    pub fn cancel(&self) {
        if let Some(tx) = self.0.lock().ok().and_then(|mut s| s.take()) {
            let _ = tx.send(());
        }
    }
}

/// How the service thread reports its opening and each job's failure: to
/// the client's events (interactive: the client goes on, a failure is an
/// `Error` event), or on a channel, a failure to open ending the thread
/// (one-shot clients, which exit with it).
enum Opened {
    AsEvents,
    Results(std_mpsc::Sender<anyhow::Result<()>>),
}

impl SessionHandle {
    /// Starts the threads and the opening job (connect the provider,
    /// pulling the embedded model when needed, then load the session),
    /// for an interactive client: the service's events, failures to open
    /// included, go to `sink`, the input history's to `history`.
    #[must_use]
    pub fn spawn(launch: Launch, sink: Sink, history: impl Fn(HistoryEvent) + Send + 'static) -> Self {
        let workspace = crate::workspace::workspace_root(&launch.cwd)
            .to_string_lossy()
            .into_owned();
        let queries = spawn_queries(launch.paths.database(), workspace, Arc::clone(&sink));
        let history = spawn_input_history(launch.paths.database(), &launch.cwd, history);
        let counts = spawn_counter(Arc::clone(&sink));
        let side = Side {
            queries,
            counts: counts.clone(),
            history,
        };
        let mut handle = Self::start(launch, sink, Some(counts), Opened::AsEvents);
        handle.side = Some(side);
        handle
    }

    /// Opens the session for a one-shot client (`strata chat`) and waits
    /// until it is open: the service's events go to `sink`; ops that ask
    /// for the interactive threads (sessions, draft counts, the input
    /// history) are ignored.
    ///
    /// # Errors
    /// What opening failed on (no key, an unknown model, a session that
    /// cannot be read), as the service said it; the thread has ended.
    pub fn open(launch: Launch, sink: Sink) -> anyhow::Result<Self> {
        let (tx, rx) = std_mpsc::channel();
        let mut handle = Self::start(launch, sink, None, Opened::Results(tx));
        let opened = rx.recv();
        handle.results = Some(rx);
        match opened {
            Ok(Ok(())) => Ok(handle),
            Ok(Err(e)) => {
                handle.join();
                Err(e)
            }
            Err(_) => {
                handle.join();
                anyhow::bail!("the session could not be opened (its thread ended); try again")
            }
        }
    }

    fn start(launch: Launch, sink: Sink, counts: Option<std_mpsc::Sender<CountJob>>, opened: Opened) -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        let cancel: CancelSlot = Arc::default();
        let approvals: ApprovalSlot = Arc::default();
        let service_approvals = Arc::clone(&approvals);
        let skip = Arc::new(tokio::sync::Notify::new());
        let service_skip = Arc::clone(&skip);
        let thread = std::thread::Builder::new()
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
                    let why = "cannot start the background runtime; restart strata";
                    match opened {
                        Opened::AsEvents => sink(ServiceEvent::Error(why.into())),
                        Opened::Results(tx) => {
                            let _ = tx.send(Err(anyhow::anyhow!(why)));
                        }
                    }
                    return;
                };
                rt.block_on(run_service(
                    launch,
                    rx,
                    sink,
                    counts,
                    (service_approvals, service_skip),
                    opened,
                ));
            })
            .ok();
        Self {
            jobs: Some(jobs),
            cancel,
            approvals,
            skip,
            side: None,
            thread,
            results: None,
        }
    }

    /// A [`Canceller`] for the turn queued last.
    #[must_use]
    pub fn canceller(&self) -> Canceller {
        Canceller(Arc::clone(&self.cancel))
    }

    /// Closes the queue and waits until the service has run what was
    /// queued and ended (its MCP servers stopped).
    ///
    /// # Errors
    /// For a one-shot client ([`SessionHandle::open`]), the first op that
    /// failed, as the service returned it (it also said so in its events).
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.join();
        match self.results.take() {
            Some(results) => results.try_iter().find(Result::is_err).unwrap_or(Ok(())),
            None => Ok(()),
        }
    }

    fn join(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Hands `op` to the session (see [`Op`]); never waits.
    pub fn send(&self, op: Op) {
        let queue = |job: Job| {
            if let Some(jobs) = &self.jobs {
                let _ = jobs.send(job);
            }
        };
        match op {
            Op::Send { text, consent } => queue(Job::Send(text, consent, self.arm_cancel())),
            Op::EditSend { message, text } => queue(Job::EditSend(message, text, self.arm_cancel())),
            Op::Run(command) => {
                let cancel = command.cancellable().then(|| self.arm_cancel());
                queue(Job::Run(command, cancel));
            }
            Op::Cancel => self.cancel(),
            Op::Approve(answer) => self.approve(answer),
            Op::SkipServers => self.skip.notify_waiters(),
            Op::ListSessions { ticket, search, all } => {
                if let Some(side) = &self.side {
                    let _ = side.queries.send((ticket, search, all));
                }
            }
            Op::CountDraft { ticket, text } => {
                if let Some(side) = &self.side {
                    let _ = side.counts.send(CountJob::Count(ticket, text));
                }
            }
            Op::RememberInput(text) => {
                if let Some(side) = &self.side {
                    side.history.remember(text);
                }
            }
        }
    }

    /// Cancels the turn queued last, running or not yet started.
    pub fn cancel(&self) {
        self.canceller().cancel();
    }

    /// Answers the approval the running turn waits for.
    pub fn approve(&self, answer: ApprovalAnswer) {
        let sender = self.approvals.lock().ok().and_then(|s| s.clone());
        if let Some(tx) = sender {
            let _ = tx.send(answer);
        }
    }

    /// The cancel signal of the turn about to be queued.
    fn arm_cancel(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut slot) = self.cancel.lock() {
            *slot = Some(tx);
        }
        rx
    }
}

impl Drop for SessionHandle {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// How often an open session's lease is renewed.
const LEASE_RENEWAL: std::time::Duration = std::time::Duration::from_secs(60);

/// Answers every job of a service that could not open, so a client never
/// waits for it: a message's text goes back (`Unsent`) and its turn ends
/// at once, with the reason said again.
async fn refuse_all(mut jobs: mpsc::UnboundedReceiver<Job>, sink: &Sink, why: &str) {
    while let Some(job) = jobs.recv().await {
        sink(ServiceEvent::Error(format!("nothing was sent: {why}")));
        match job {
            Job::Send(text, ..) | Job::EditSend(_, text, _) => {
                sink(ServiceEvent::Unsent(text));
                sink(ServiceEvent::TurnDone {
                    status: crate::domain::MessageStatus::Error,
                });
            }
            Job::Run(..) => sink(ServiceEvent::CommandDone),
        }
    }
}

async fn run_service(
    launch: Launch,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    sink: Sink,
    counts: Option<std_mpsc::Sender<CountJob>>,
    (approvals, skip): (ApprovalSlot, Arc<tokio::sync::Notify>),
    opened: Opened,
) {
    let opening = launch.opening.clone();
    let mut results = None;
    let started = SessionService::open(launch, Arc::clone(&sink), counts)
        .map_err(anyhow::Error::from)
        .map(|mut service| {
            if let Ok(mut slot) = approvals.lock() {
                *slot = Some(service.approvals());
            }
            service.set_skip_signal(skip);
            let start = service.start(opening);
            (service, start)
        });
    let mut service = match (started, opened) {
        (Ok((service, Ok(()))), Opened::AsEvents) => service,
        (Ok((service, Err(e))), Opened::AsEvents) => {
            // The client goes on: another session can still be opened.
            sink(ServiceEvent::Error(e.to_string()));
            service
        }
        (Err(e), Opened::AsEvents) => {
            let why = e.to_string();
            sink(ServiceEvent::Error(why.clone()));
            refuse_all(jobs, &sink, &why).await;
            return;
        }
        (Ok((service, Ok(()))), Opened::Results(tx)) => {
            let _ = tx.send(Ok(()));
            results = Some(tx);
            service
        }
        (Ok((_, Err(e))) | Err(e), Opened::Results(tx)) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    service.discover_window().await;
    // The session's lease is renewed while it is open (one writer per
    // session; another machine's strata takes a lease left unrenewed).
    let mut renew = tokio::time::interval(LEASE_RENEWAL);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let job = tokio::select! {
            job = jobs.recv() => job,
            _ = renew.tick() => {
                service.renew_lease();
                continue;
            }
        };
        let Some(job) = job else { break };
        let result = match job {
            Job::Send(text, consent, rx) => service.send_attaching(text, consent, cancelled(rx)).await,
            Job::EditSend(message, text, rx) => service.edit_and_send(message, text, cancelled(rx)).await,
            Job::Run(command, cancel) => {
                let stopped = command.stopped_notice();
                let result = match cancel {
                    Some(rx) => tokio::select! {
                        result = service.run(command) => result,
                        () = cancelled(rx) => {
                            // Dropped while the summary or the connection
                            // was being made: nothing changed.
                            sink(ServiceEvent::Notice(stopped));
                            Ok(())
                        }
                    },
                    None => service.run(command).await,
                };
                sink(ServiceEvent::CommandDone);
                result
            }
        };
        match &results {
            Some(tx) => {
                let _ = tx.send(result);
            }
            None => {
                if let Err(e) = result {
                    sink(ServiceEvent::Error(e.to_string()));
                }
            }
        }
    }
}

/// Resolves when `rx` gets the cancel; never when its sender is dropped
/// unused.
async fn cancelled(rx: oneshot::Receiver<()>) {
    if rx.await.is_err() {
        std::future::pending::<()>().await;
    }
}
