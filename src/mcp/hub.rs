//! The servers of a session: started together, watched, restarted on use,
//! called, and stopped.
//!
//! Each server ([`super::server`]) has one task per connection that owns
//! the connection and its process. Calls take the connection's `Peer` and
//! run without holding any lock.

use super::large::{LARGE_KEY, PARSE_ERROR, UNREAD};
use super::render::{self, CallResult, ImageDir};
use super::server::Server;
use super::{McpTool, Refused, ServerSpec, Status};
use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

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
                Arc::new(Server::new(name, spec, status, Arc::clone(&changes)))
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
        let ready = srv.ready().await?;
        let (peer, epoch) = (&ready.peer, ready.epoch);
        let limit = timeout
            .or(srv.spec.as_ref().map(|s| s.call_timeout))
            .unwrap_or(Duration::from_secs(120));
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        match tokio::time::timeout(limit, peer.call_tool(params)).await {
            Ok(Ok(result)) => {
                let large = result
                    .meta
                    .as_ref()
                    .and_then(|m| m.get(LARGE_KEY))
                    .and_then(Value::as_str)
                    .and_then(|token| ready.shared.take_large(token));
                let mut out = render::render(&result, images);
                if let Some(large) = large {
                    out.text.clear();
                    out.files.clone_from(&large.files);
                    out.large = Some(large);
                }
                Ok(out)
            }
            Ok(Err(ServiceError::McpError(e)))
                if e.code.0 == PARSE_ERROR && e.message.starts_with(UNREAD) =>
            {
                Err(format!(
                    "The MCP server `{server}` answered the call to `{tool}`, but {}; the call has no result, so try it again or do without it.",
                    e.message.trim_end_matches('.')
                ))
            }
            Ok(Err(ServiceError::McpError(e))) => Err(format!(
                "The MCP server `{server}` refused the call to `{tool}`: {} (JSON-RPC error {}); check the tool name and the arguments against its schema.",
                e.message.trim_end_matches('.'),
                e.code.0
            )),
            Ok(Err(ServiceError::TransportClosed)) => Err(srv.lost(epoch, tool, &ready.shared).await),
            Ok(Err(e)) => Err(format!(
                "The call to `{tool}` on MCP server `{server}` failed ({e}); try again, or use another tool."
            )),
            Err(_) => {
                srv.check_alive(epoch, peer).await;
                Err(format!(
                    "`{tool}` on MCP server `{server}` did not answer within {} s, so the call was cancelled; try again with a smaller request, or do without it.",
                    limit.as_secs_f64()
                ))
            }
        }
    }

    /// Stops the server `name` for now (`/mcp off`): closes its stdin,
    /// and its supervisor ends it and everything it started (what a
    /// graceful exit leaves is swept); it is unavailable, and is not
    /// started again on use, until [`Hub::start_again`]. `false` when no
    /// server of that name was started.
    pub fn stop(&self, name: &str) -> bool {
        let Some(server) = self.server(name) else {
            return false;
        };
        let Some(mut state) = server.lock() else {
            return false;
        };
        state.epoch += 1;
        if let Some(mut live) = state.live.take() {
            match live.stop.take() {
                Some(stop) => {
                    let _ = stop.send(());
                }
                None => live.group.kill(),
            }
        }
        state.status = Status::Unavailable {
            why: format!(
                "The MCP server `{name}` was switched off for this session; `/mcp on {name}` starts it again."
            ),
            stderr_tail: server.tail.lines(),
        };
        state.tools.clear();
        state.switched_off = true;
        drop(state);
        self.inner.changes.send_modify(|n| *n += 1);
        true
    }

    /// Starts the server `name` again after [`Hub::stop`]; `false` when no
    /// server of that name was started or it was not stopped.
    pub fn start_again(&self, name: &str) -> bool {
        if self.inner.closed.load(std::sync::atomic::Ordering::Acquire) {
            return false;
        }
        let Some(server) = self.server(name) else {
            return false;
        };
        let was_off = server
            .lock()
            .is_some_and(|mut s| std::mem::take(&mut s.switched_off));
        if was_off {
            server.launch();
        }
        was_off
    }

    fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.inner
            .servers
            .iter()
            .find(|s| s.name == name && s.spec.is_some())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>(_: &T) {}

    #[test]
    fn a_hub_and_its_futures_move_between_threads() {
        fn shared<T: Send + Sync>(_: &T) {}
        let hub = Hub::start(Vec::<Result<ServerSpec, Refused>>::new());
        shared(&hub);
        send(&hub.call("s", "t", Value::Null, None, None));
        send(&hub.wait_ready(Instant::now()));
        send(&hub.shutdown());
    }

    #[test]
    fn outside_a_runtime_a_server_is_unavailable_not_a_panic() {
        let hub = Hub::start([
            Ok(ServerSpec::new("s", "sh", vec![])),
            Err(Refused {
                name: "r".into(),
                why: "No.".into(),
            }),
        ]);
        let statuses = hub.statuses();
        assert!(
            matches!(&statuses[0].status, Status::Unavailable { why, .. } if why.contains("no async runtime")),
            "{statuses:?}"
        );
        assert_eq!(
            statuses[1].status,
            Status::Unavailable {
                why: "No.".into(),
                stderr_tail: Vec::new()
            }
        );
        assert!(hub.tools().is_empty());
    }
}
