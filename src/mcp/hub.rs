//! The servers of a session: started together, watched, restarted on use,
//! called, and stopped.
//!
//! Each server has one task per connection that owns the connection and
//! its process: it records the server [`Status::Ready`] with its tools,
//! lists the tools again on `notifications/tools/list_changed`, and records
//! [`Status::Unavailable`] when the process ends. Its state carries an epoch
//! so a superseded connection's task changes nothing. Calls take the
//! connection's `Peer` and run without holding any lock.

use super::connection::{self, Connection};
use super::process::{Group, Tail};
use super::render::{self, CallResult, ImageDir};
use super::{MAX_RESTARTS, McpTool, Refused, ServerSpec, Status};
use rmcp::model::{CallToolRequestParams, ClientRequest, PingRequest};
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

/// How long a server that timed out a call has to answer a ping before it
/// is taken as hung (killed, and restarted on its next use).
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// How long `shutdown` waits for all servers to exit.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(1_800);

/// A server's name and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// Where it is.
    pub status: Status,
    /// How many times it was started again after its first start.
    pub restarts: u32,
    /// The pid of its process while connected (the supervisor's when it
    /// runs under one; also its process group's id).
    pub pid: Option<u32>,
}

/// The MCP servers of a session (see the module doc). Cloning gives another
/// handle to the same servers; when the last handle drops, every server's
/// process group is killed.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Vec<Arc<Server>>,
    changes: Arc<watch::Sender<u64>>,
    /// [`Hub::shutdown`] ran: no server starts again.
    closed: std::sync::atomic::AtomicBool,
}

struct Server {
    name: String,
    /// `None` for a refused server: never started.
    spec: Option<ServerSpec>,
    state: Mutex<State>,
    /// Held while the server is (re)started by a call.
    start: tokio::sync::Mutex<()>,
    tail: Arc<Tail>,
    changes: Arc<watch::Sender<u64>>,
}

struct State {
    status: Status,
    tools: Vec<McpTool>,
    live: Option<Live>,
    task: Option<tokio::task::JoinHandle<()>>,
    epoch: u64,
    restarts: u32,
}

/// A connection's handles kept with the state: dropping `stop` makes its
/// task kill the process group.
struct Live {
    peer: Peer<RoleClient>,
    group: Arc<Group>,
    stop: Option<oneshot::Sender<()>>,
}

impl Hub {
    /// Starts every server at once (each `Err` is listed as unavailable and
    /// never started); returns at once, with every started server
    /// [`Status::Starting`]. Must be called inside a Tokio runtime: outside
    /// one every server is unavailable.
    #[must_use]
    pub fn start(servers: impl IntoIterator<Item = Result<ServerSpec, Refused>>) -> Self {
        let changes = Arc::new(watch::Sender::new(0));
        let runtime = tokio::runtime::Handle::try_current().is_ok();
        let servers: Vec<Arc<Server>> = servers
            .into_iter()
            .map(|entry| {
                let (name, spec, status) = match entry {
                    Ok(spec) if runtime => (spec.name.clone(), Some(spec), Status::Starting),
                    Ok(spec) => (
                        spec.name.clone(),
                        None,
                        Status::Unavailable {
                            why: format!(
                                "The MCP server `{}` was not started because strata had no async runtime; this is a bug in strata, please report it.",
                                spec.name
                            ),
                            stderr_tail: Vec::new(),
                        },
                    ),
                    Err(refused) => (
                        refused.name,
                        None,
                        Status::Unavailable {
                            why: refused.why,
                            stderr_tail: Vec::new(),
                        },
                    ),
                };
                Arc::new(Server {
                    name,
                    spec,
                    state: Mutex::new(State {
                        status,
                        tools: Vec::new(),
                        live: None,
                        task: None,
                        epoch: 0,
                        restarts: 0,
                    }),
                    start: tokio::sync::Mutex::new(()),
                    tail: Arc::default(),
                    changes: Arc::clone(&changes),
                })
            })
            .collect();
        for server in &servers {
            if server.spec.is_some() {
                server.launch();
            }
        }
        Self {
            inner: Arc::new(Inner {
                servers,
                changes,
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// Every server in the order given to [`Hub::start`], with its status.
    #[must_use]
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.inner.servers.iter().map(|s| s.snapshot()).collect()
    }

    /// The tools of every ready server: servers in their order, each
    /// server's tools in the order it lists them.
    #[must_use]
    pub fn tools(&self) -> Vec<McpTool> {
        self.inner
            .servers
            .iter()
            .flat_map(|s| s.lock().map(|st| st.tools.clone()).unwrap_or_default())
            .collect()
    }

    /// A counter that goes up on every change of a status or a tool list;
    /// `changed().await` on it to follow them.
    #[must_use]
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Waits until no server is [`Status::Starting`] or `deadline` passes
    /// (each start is bounded by its own start-up timeout too); returns the
    /// statuses then.
    pub async fn wait_ready(&self, deadline: Instant) -> Vec<ServerStatus> {
        let mut changes = self.changes();
        loop {
            let statuses = self.statuses();
            if !statuses.iter().any(|s| s.status == Status::Starting) {
                return statuses;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return self.statuses() },
                () = tokio::time::sleep_until(deadline) => return self.statuses(),
            }
        }
    }

    /// Calls `tool` of `server` with `arguments` (a JSON object, or null for
    /// none) and renders the result ([`CallResult`]; binary parts saved in
    /// `images`). Waits for a server still starting; starts an unavailable
    /// one again while restarts remain. `timeout` bounds the call
    /// (`None`: the server's `call_timeout`). Dropping the future sends
    /// `notifications/cancelled` for the call.
    ///
    /// # Errors
    /// One sentence for the model when there is no such server, it is
    /// unavailable, it answered with a JSON-RPC error, it stopped during the
    /// call, or the call timed out (then it was cancelled; a server that
    /// does not answer a ping afterwards is killed and started again on its
    /// next use). A tool that ran and failed is `Ok` with `is_error`.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        timeout: Option<Duration>,
        images: Option<&ImageDir>,
    ) -> Result<CallResult, String> {
        let Some(srv) = self.inner.servers.iter().find(|s| s.name == server) else {
            let names: Vec<&str> = self.inner.servers.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "There is no MCP server named `{server}`; the servers are: {}.",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ));
        };
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(format!(
                    "The arguments of `{tool}` must be a JSON object (they were {other}); call it again with an object that matches its schema."
                ));
            }
        };
        if self.inner.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(format!(
                "The MCP server `{server}` was stopped because the session is closing; the call did not run."
            ));
        }
        let (peer, epoch) = srv.ready().await?;
        let limit = timeout
            .or(srv.spec.as_ref().map(|s| s.call_timeout))
            .unwrap_or(Duration::from_secs(120));
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        match tokio::time::timeout(limit, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(render::render(&result, images)),
            Ok(Err(ServiceError::McpError(e))) => Err(format!(
                "The MCP server `{server}` refused the call to `{tool}`: {} (JSON-RPC error {}); check the tool name and the arguments against its schema.",
                e.message.trim_end_matches('.'),
                e.code.0
            )),
            Ok(Err(ServiceError::TransportClosed)) => Err(srv.lost(epoch, tool).await),
            Ok(Err(e)) => Err(format!(
                "The call to `{tool}` on MCP server `{server}` failed ({e}); try again, or use another tool."
            )),
            Err(_) => {
                srv.check_alive(epoch, &peer).await;
                Err(format!(
                    "`{tool}` on MCP server `{server}` did not answer within {} s, so the call was cancelled; try again with a smaller request, or do without it.",
                    limit.as_secs_f64()
                ))
            }
        }
    }

    /// Stops every server: closes its stdin, waits for it to exit (all of
    /// them together, at most about 2 s), then kills what is left.
    pub async fn shutdown(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::Release);
        let mut tasks = Vec::new();
        let mut groups = Vec::new();
        for server in &self.inner.servers {
            let Ok(mut state) = server.state.lock() else {
                continue;
            };
            state.epoch += 1;
            if let Some(mut live) = state.live.take() {
                if let Some(stop) = live.stop.take() {
                    let _ = stop.send(());
                }
                groups.push(Arc::clone(&live.group));
            }
            tasks.extend(state.task.take());
            if server.spec.is_some() {
                state.status = Status::Unavailable {
                    why: format!("The MCP server `{}` was stopped with its session.", server.name),
                    stderr_tail: server.tail.lines(),
                };
                state.tools.clear();
            }
        }
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, futures::future::join_all(tasks)).await;
        for group in groups {
            group.kill();
        }
        self.inner.changes.send_modify(|n| *n += 1);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for server in &self.servers {
            if let Ok(mut state) = server.state.lock() {
                state.epoch += 1;
                if let Some(live) = state.live.take() {
                    live.group.kill();
                }
                if let Some(task) = state.task.take() {
                    task.abort();
                }
            }
        }
    }
}

impl Server {
    fn lock(&self) -> Option<std::sync::MutexGuard<'_, State>> {
        self.state.lock().ok()
    }

    fn snapshot(&self) -> ServerStatus {
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
    fn launch(self: &Arc<Self>) {
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
                            tracing::info!(server = %self.name, tools = tools.len(), "MCP tool list changed");
                            self.update(epoch, |s| {
                                s.status = Status::Ready { tools: tools.len() };
                                s.tools = tools;
                            });
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
    async fn ready(self: &Arc<Self>) -> Result<(Peer<RoleClient>, u64), String> {
        let Some(spec) = &self.spec else {
            return Err(self
                .why()
                .unwrap_or_else(|| format!("The MCP server `{}` is unavailable.", self.name)));
        };
        let _start = self.start.lock().await;
        for attempt in 0..2 {
            let (status, peer, epoch, restarts) = {
                let Some(state) = self.lock() else {
                    return Err(format!("The MCP server `{}` is unavailable.", self.name));
                };
                let peer = state.live.as_ref().map(|l| l.peer.clone());
                (state.status.clone(), peer, state.epoch, state.restarts)
            };
            match (status, peer) {
                (Status::Ready { .. }, Some(peer)) if !peer.is_transport_closed() => {
                    return Ok((peer, epoch));
                }
                (Status::Starting, _) => {
                    self.settled(epoch, spec.startup_timeout + Duration::from_secs(2))
                        .await;
                }
                (Status::Unavailable { why, .. }, _) if restarts >= MAX_RESTARTS || attempt > 0 => {
                    return Err(if attempt > 0 {
                        why
                    } else {
                        format!(
                            "The MCP server `{}` cannot be used in this session: it was restarted {MAX_RESTARTS} times and is still unavailable ({}).",
                            self.name,
                            why.trim_end_matches('.')
                        )
                    });
                }
                (Status::Unavailable { .. }, _) => {
                    if let Some(mut state) = self.lock() {
                        state.restarts += 1;
                        tracing::info!(server = %self.name, restart = state.restarts, "MCP server started again");
                    }
                    self.launch();
                    let epoch = self.lock().map_or(0, |s| s.epoch);
                    self.settled(epoch, spec.startup_timeout + Duration::from_secs(2))
                        .await;
                }
                (Status::Ready { .. }, _) => {
                    // Its connection closed before the task saw the exit.
                    let status =
                        self.unavailable(format!("The MCP server `{}` closed its connection.", self.name));
                    self.update(epoch, |s| {
                        s.status = status;
                        s.live = None;
                    });
                }
            }
        }
        match self
            .lock()
            .map(|s| (s.status.clone(), s.live.as_ref().map(|l| l.peer.clone()), s.epoch))
        {
            Some((Status::Ready { .. }, Some(peer), epoch)) => Ok((peer, epoch)),
            _ => Err(self
                .why()
                .unwrap_or_else(|| format!("The MCP server `{}` is still starting.", self.name))),
        }
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

    /// The connection of `epoch` closed during a call to `tool`: waits
    /// briefly for its task to record how the process ended; the sentence
    /// for the model.
    async fn lost(&self, epoch: u64, tool: &str) -> String {
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
    async fn check_alive(&self, epoch: u64, peer: &Peer<RoleClient>) {
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
