//! One server of a [`super::Hub`]: its state, the task that owns each of
//! its connections, and what a call needs of it (a ready connection,
//! started again while restarts remain; how it was lost).
//!
//! Each connection has one task that owns the connection and its process:
//! it records the server [`Status::Ready`] with its tools, lists the tools
//! again on `notifications/tools/list_changed`, and records
//! [`Status::Unavailable`] when the process ends. The state carries an
//! epoch so a superseded connection's task changes nothing.

use super::connection::{self, Connection};
use super::hub::ServerStatus;
use super::process::{Group, Tail};
use super::transport::Shared;
use super::{MAX_RESTARTS, McpTool, ServerSpec, Status};
use rmcp::model::{ClientRequest, PingRequest};
use rmcp::{Peer, RoleClient};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

/// How long a server that timed out a call has to answer a ping before it
/// is taken as hung (killed, and restarted on its next use).
const PING_TIMEOUT: Duration = Duration::from_secs(2);

pub(super) struct Server {
    pub(super) name: String,
    /// `None` for a refused server: never started.
    pub(super) spec: Option<ServerSpec>,
    pub(super) state: Mutex<State>,
    /// Held while the server is (re)started by a call.
    pub(super) start: tokio::sync::Mutex<()>,
    pub(super) tail: Arc<Tail>,
    pub(super) changes: Arc<watch::Sender<u64>>,
}

pub(super) struct State {
    pub(super) status: Status,
    pub(super) tools: Vec<McpTool>,
    pub(super) live: Option<Live>,
    pub(super) task: Option<tokio::task::JoinHandle<()>>,
    pub(super) epoch: u64,
    pub(super) restarts: u32,
    /// Stopped by [`super::Hub::stop`]: not started again on use.
    pub(super) switched_off: bool,
}

/// What a call needs of a ready connection.
pub(super) struct Ready {
    pub(super) peer: Peer<RoleClient>,
    pub(super) epoch: u64,
    pub(super) shared: Arc<Shared>,
}

impl State {
    fn ready(&self) -> Option<Ready> {
        self.live.as_ref().map(|l| Ready {
            peer: l.peer.clone(),
            epoch: self.epoch,
            shared: Arc::clone(&l.shared),
        })
    }
}

/// A connection's handles kept with the state: dropping `stop` makes its
/// task kill the process group.
pub(super) struct Live {
    pub(super) peer: Peer<RoleClient>,
    pub(super) shared: Arc<Shared>,
    pub(super) group: Arc<Group>,
    pub(super) stop: Option<oneshot::Sender<()>>,
}

impl Server {
    /// A server named `name` in `status`, not started yet; `spec` is
    /// `None` for one that is never started.
    pub(super) fn new(
        name: String,
        spec: Option<ServerSpec>,
        status: Status,
        changes: Arc<watch::Sender<u64>>,
    ) -> Self {
        Self {
            name,
            spec,
            state: Mutex::new(State {
                status,
                tools: Vec::new(),
                live: None,
                task: None,
                epoch: 0,
                restarts: 0,
                switched_off: false,
            }),
            start: tokio::sync::Mutex::new(()),
            tail: Arc::default(),
            changes,
        }
    }

    pub(super) fn lock(&self) -> Option<std::sync::MutexGuard<'_, State>> {
        self.state.lock().ok()
    }

    pub(super) fn snapshot(&self) -> ServerStatus {
        let (status, restarts, pid) = self.lock().map_or_else(
            || (Status::Starting, 0, None),
            |s| {
                (
                    s.status.clone(),
                    s.restarts,
                    s.live.as_ref().map(|l| l.group.pid()),
                )
            },
        );
        ServerStatus {
            name: self.name.clone(),
            status,
            restarts,
            pid,
        }
    }

    /// Changes the state with `f` when `epoch` is still current; tells
    /// watchers. `false` when the epoch was superseded.
    fn update(&self, epoch: u64, f: impl FnOnce(&mut State)) -> bool {
        let applied = match self.lock() {
            Some(mut state) if state.epoch == epoch => {
                f(&mut state);
                true
            }
            _ => false,
        };
        if applied {
            self.changes.send_modify(|n| *n += 1);
        }
        applied
    }

    fn unavailable(&self, why: String) -> Status {
        Status::Unavailable {
            why,
            stderr_tail: self.tail.lines(),
        }
    }

    /// Starts a new connection (a new epoch): the old one, if any, is
    /// dropped and its group killed.
    pub(super) fn launch(self: &Arc<Self>) {
        let Some(mut state) = self.lock() else {
            return;
        };
        state.epoch += 1;
        let epoch = state.epoch;
        state.status = Status::Starting;
        state.tools.clear();
        if let Some(live) = state.live.take() {
            live.group.kill();
        }
        let server = Arc::clone(self);
        state.task = Some(tokio::spawn(async move { server.run(epoch).await }));
        drop(state);
        self.changes.send_modify(|n| *n += 1);
    }

    /// One connection's task (see the module doc).
    async fn run(self: Arc<Self>, epoch: u64) {
        let Some(spec) = self.spec.clone() else {
            return;
        };
        let conn = match connection::connect(&spec, Arc::clone(&self.tail)).await {
            Ok(conn) => conn,
            Err(why) => {
                tracing::warn!(server = %self.name, %why, "MCP server unavailable");
                let status = self.unavailable(why);
                self.update(epoch, |s| s.status = status);
                return;
            }
        };
        let (stop_tx, mut stop) = oneshot::channel();
        let tools = conn.tools.clone();
        let live = Live {
            peer: conn.peer.clone(),
            shared: Arc::clone(&conn.shared),
            group: Arc::clone(&conn.group),
            stop: Some(stop_tx),
        };
        tracing::info!(server = %self.name, tools = tools.len(), "MCP server ready");
        if !self.update(epoch, |s| {
            s.status = Status::Ready { tools: tools.len() };
            s.tools = tools;
            s.live = Some(live);
        }) {
            conn.kill();
            return;
        }
        self.watch(epoch, conn, &mut stop).await;
    }

    /// Follows a ready connection until its process ends or it is stopped.
    async fn watch(&self, epoch: u64, mut conn: Connection, stop: &mut oneshot::Receiver<()>) {
        let relist_limit = self
            .spec
            .as_ref()
            .map_or(Duration::from_secs(30), |s| s.startup_timeout);
        loop {
            tokio::select! {
                status = conn.child.wait() => {
                    let how = conn.ended(status.ok()).await;
                    let why = format!(
                        "The MCP server `{}` {how}; it is started again on its next use, at most {MAX_RESTARTS} times a session (its last stderr lines say why).",
                        self.name
                    );
                    tracing::warn!(server = %self.name, %why, "MCP server ended");
                    let status = self.unavailable(why);
                    self.update(epoch, |s| {
                        // A call that found it hung has said why already.
                        if matches!(s.status, Status::Ready { .. }) {
                            s.status = status;
                        }
                        s.tools.clear();
                        s.live = None;
                    });
                    return;
                }
                Some(()) = conn.list_changed.recv() => {
                    while conn.list_changed.try_recv().is_ok() {}
                    match tokio::time::timeout(relist_limit, conn.peer.list_all_tools()).await {
                        Ok(Ok(listed)) => {
                            let tools: Vec<McpTool> =
                                listed.into_iter().map(|t| connection::tool(&self.name, t)).collect();
                            let same = self.lock().is_some_and(|s| s.tools == tools);
                            if !same {
                                tracing::info!(server = %self.name, tools = tools.len(), "MCP tool list changed");
                                self.update(epoch, |s| {
                                    s.status = Status::Ready { tools: tools.len() };
                                    s.tools = tools;
                                });
                            }
                        }
                        Ok(Err(e)) => tracing::warn!(server = %self.name, error = %e, "MCP tools/list failed after list_changed"),
                        Err(_) => tracing::warn!(server = %self.name, "MCP tools/list timed out after list_changed"),
                    }
                }
                stopped = &mut *stop => {
                    if stopped.is_ok() {
                        conn.close().await;
                    } else {
                        conn.kill();
                    }
                    return;
                }
            }
        }
    }

    /// The peer of a ready connection, after waiting for a start in
    /// progress or starting the server again (while restarts remain).
    pub(super) async fn ready(self: &Arc<Self>) -> Result<Ready, String> {
        let Some(spec) = &self.spec else {
            return Err(self
                .why()
                .unwrap_or_else(|| format!("The MCP server `{}` is unavailable.", self.name)));
        };
        let _start = self.start.lock().await;
        if self.lock().is_some_and(|s| s.switched_off) {
            return Err(self
                .why()
                .unwrap_or_else(|| format!("The MCP server `{}` is switched off.", self.name)));
        }
        for attempt in 0..2 {
            let (status, ready, epoch, restarts) = {
                let Some(state) = self.lock() else {
                    return Err(format!("The MCP server `{}` is unavailable.", self.name));
                };
                (state.status.clone(), state.ready(), state.epoch, state.restarts)
            };
            match (status, ready) {
                (Status::Ready { .. }, Some(ready)) if !ready.peer.is_transport_closed() => {
                    return Ok(ready);
                }
                (Status::Starting, _) => {
                    self.settled(epoch, spec.startup_timeout + Duration::from_secs(2))
                        .await;
                }
                (Status::Unavailable { why, .. }, _) if restarts >= MAX_RESTARTS || attempt > 0 => {
                    return Err(if attempt > 0 {
                        why
                    } else {
                        // What happened, without the promise of another start.
                        let what = why.split("; it is started again").next().unwrap_or(&why);
                        format!(
                            "The MCP server `{}` cannot be used in this session: it was restarted {MAX_RESTARTS} times and is still unavailable ({}); do without its tools, or fix it and restart strata.",
                            self.name,
                            what.trim_end_matches('.')
                        )
                    });
                }
                (Status::Unavailable { .. }, _) => self.restart(spec).await,
                (Status::Ready { .. }, _) => {
                    // Its connection closed before the task saw the exit, or
                    // its process lives on with its output closed.
                    let status =
                        self.unavailable(format!("The MCP server `{}` closed its connection.", self.name));
                    self.update(epoch, |s| {
                        s.status = status;
                        s.live = None;
                    });
                    if restarts < MAX_RESTARTS {
                        self.restart(spec).await;
                    }
                }
            }
        }
        match self.lock().map(|s| (s.status.clone(), s.ready())) {
            Some((Status::Ready { .. }, Some(ready))) => Ok(ready),
            _ => Err(self
                .why()
                .unwrap_or_else(|| format!("The MCP server `{}` is still starting.", self.name))),
        }
    }

    /// Starts it again (one more restart) and waits until it is ready or
    /// failed.
    async fn restart(self: &Arc<Self>, spec: &ServerSpec) {
        if let Some(mut state) = self.lock() {
            state.restarts += 1;
            tracing::info!(server = %self.name, restart = state.restarts, "MCP server started again");
        }
        self.launch();
        let epoch = self.lock().map_or(0, |s| s.epoch);
        self.settled(epoch, spec.startup_timeout + Duration::from_secs(2))
            .await;
    }

    fn why(&self) -> Option<String> {
        match self.lock()?.status.clone() {
            Status::Unavailable { why, .. } => Some(why),
            _ => None,
        }
    }

    /// Waits until the state leaves `Starting` at `epoch`, at most `limit`.
    async fn settled(&self, epoch: u64, limit: Duration) {
        let mut changes = self.changes.subscribe();
        let deadline = Instant::now() + limit;
        loop {
            let done = self
                .lock()
                .is_none_or(|s| s.epoch != epoch || s.status != Status::Starting);
            if done {
                return;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// The connection of `epoch` closed during a call to `tool`: the
    /// sentence for the model. A transport that broke (`shared`) says how;
    /// otherwise this waits briefly for the task to record how the process
    /// ended.
    pub(super) async fn lost(&self, epoch: u64, tool: &str, shared: &Shared) -> String {
        if let Some(why) = shared.broken() {
            return format!(
                "The connection to the MCP server `{}` broke during the call to `{tool}`: {why}; the call has no result, and the server is started again on its next use.",
                self.name
            );
        }
        let mut changes = self.changes.subscribe();
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let ended = self.lock().and_then(|s| match &s.status {
                Status::Unavailable { why, .. } if s.epoch == epoch => Some(why.clone()),
                _ if s.epoch != epoch => Some(String::new()),
                _ => None,
            });
            if let Some(why) = ended {
                let how = if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", why.trim_end_matches('.'))
                };
                return format!(
                    "The MCP server `{}` stopped during the call to `{tool}`{how}; the call has no result.",
                    self.name
                );
            }
            tokio::select! {
                _ = changes.changed() => {}
                () = tokio::time::sleep_until(deadline) => {
                    let status = self.unavailable(format!("The MCP server `{}` closed its connection.", self.name));
                    self.update(epoch, |s| {
                        s.status = status;
                        s.live = None;
                    });
                }
            }
        }
    }

    /// After a call timed out: a server that does not answer a ping within
    /// [`PING_TIMEOUT`] is marked unavailable and its group killed, so its
    /// next use starts it again.
    pub(super) async fn check_alive(&self, epoch: u64, peer: &Peer<RoleClient>) {
        let ping = peer.send_request(ClientRequest::PingRequest(PingRequest::default()));
        if matches!(tokio::time::timeout(PING_TIMEOUT, ping).await, Ok(Ok(_))) {
            return;
        }
        let why = format!(
            "The MCP server `{}` stopped answering (a call timed out and a ping got no answer); it is started again on its next use, at most {MAX_RESTARTS} times a session.",
            self.name
        );
        tracing::warn!(server = %self.name, %why, "MCP server hung");
        let status = self.unavailable(why);
        self.update(epoch, |s| {
            s.status = status;
            s.tools.clear();
            // Dropping it makes the task kill the group.
            if let Some(live) = s.live.take() {
                live.group.kill();
            }
        });
    }
}
