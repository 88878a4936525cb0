//! One connection to one server: start its process, run `initialize` and
//! the paginated `tools/list` within the start-up timeout, and close it
//! again. The hub runs what happens in between.

use super::process::{self, Group, Tail};
use super::transport::{Shared, Stdio};
use super::{McpTool, ServerSpec, environment};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt as _};
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long a closing server may take to exit after its stdin closed
/// before its group is killed.
const EXIT_GRACE: Duration = Duration::from_millis(800);

/// How long the stderr of an exited server is still read for its tail.
const STDERR_DRAIN: Duration = Duration::from_millis(300);

/// The client side of a connection: strata's name and version, the last
/// protocol revision with an `initialize` handshake, no optional
/// capabilities; `notifications/tools/list_changed` is passed on.
pub struct Handler {
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("strata", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A server that answered `initialize` and `tools/list`.
pub struct Connection {
    /// Sends its requests.
    pub peer: Peer<RoleClient>,
    /// The tools it listed, in its order.
    pub tools: Vec<McpTool>,
    /// Its process (the supervisor or the server).
    pub child: Child,
    /// Its process group.
    pub group: Arc<Group>,
    /// A message each time it says its tool list changed.
    pub list_changed: mpsc::UnboundedReceiver<()>,
    /// Its long results, and why it broke.
    pub shared: Arc<Shared>,
    service: RunningService<RoleClient, Handler>,
    stderr: JoinHandle<()>,
}

/// Starts `spec`'s server and connects to it: `initialize`, then every page
/// of `tools/list`, within `spec.startup_timeout`. Its stderr goes to the
/// log and `tail`.
///
/// # Errors
/// One sentence naming the server: no such program, it could not be
/// started, it exited or timed out during start-up, or it failed the
/// handshake. Its process group is killed.
pub async fn connect(spec: &ServerSpec, tail: Arc<Tail>) -> Result<Connection, String> {
    let name = &spec.name;
    let cwd = match &spec.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    let path = spec
        .env
        .iter()
        .find(|(n, _)| n == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok());
    let program = environment::resolve_program(name, &spec.command, path.as_deref(), &cwd)?;
    let env = environment::minimal_env(spec, std::env::vars_os());
    let started = process::spawn(spec, &program, env).await.map_err(|e| {
        format!(
            "The MCP server `{name}` could not be started ({e}); check its command and working directory."
        )
    })?;
    let process::Started { mut child, group } = started;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!(
            "The MCP server `{name}` was started without its pipes; this is a bug in strata, please report it."
        ));
    };
    let stderr = tokio::spawn(process::pump_stderr(name.clone(), stderr, tail));
    let (tx, list_changed) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared::default());
    let transport = Stdio::new(stdout, stdin, spec.large_dir.clone(), Arc::clone(&shared));
    let handshake = handshake(Handler { list_changed: tx }, transport);
    let outcome = tokio::select! {
        outcome = tokio::time::timeout(spec.startup_timeout, handshake) => outcome,
        status = child.wait() => {
            group.reaped();
            drain(stderr).await;
            return Err(format!(
                "The MCP server `{name}` {} during start-up; check its command and arguments (its last stderr lines say why).",
                exit_clause(status.ok())
            ));
        }
    };
    match outcome {
        Ok(Ok((service, tools))) => Ok(Connection {
            peer: service.peer().clone(),
            tools: tools.into_iter().map(|t| tool(name, t)).collect(),
            child,
            group,
            list_changed,
            shared,
            service,
            stderr,
        }),
        Ok(Err(e)) => {
            // It may have exited: then say how.
            let exited = tokio::time::timeout(Duration::from_millis(200), child.wait()).await;
            group.kill();
            drain(stderr).await;
            Err(match exited {
                // An exit with 0 is its answer to the closed pipe, not news.
                Ok(status) if status.as_ref().is_ok_and(|s| !s.success()) => format!(
                    "The MCP server `{name}` {} during start-up; check its command and arguments (its last stderr lines say why).",
                    exit_clause(status.ok())
                ),
                _ => format!(
                    "The MCP server `{name}` failed the MCP handshake ({e}); check that it is an MCP server that speaks stdio and that every tool its tools/list gives is valid (a name and an inputSchema object)."
                ),
            })
        }
        Err(_) => {
            group.kill();
            drain(stderr).await;
            Err(format!(
                "The MCP server `{name}` did not answer `initialize` and `tools/list` within {} s; check that it speaks MCP over stdio, or raise its startup_timeout_s.",
                spec.startup_timeout.as_secs_f64()
            ))
        }
    }
}

async fn handshake(
    handler: Handler,
    transport: Stdio,
) -> Result<(RunningService<RoleClient, Handler>, Vec<rmcp::model::Tool>), String> {
    let service = handler.serve(transport).await.map_err(|e| e.to_string())?;
    let tools = service.peer().list_all_tools().await.map_err(|e| e.to_string())?;
    Ok((service, tools))
}

/// An `rmcp` tool as the hub keeps it.
pub fn tool(server: &str, t: rmcp::model::Tool) -> McpTool {
    McpTool {
        server: server.to_owned(),
        name: t.name.into_owned(),
        description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
        input_schema: serde_json::Value::Object((*t.input_schema).clone()),
        read_only_hint: t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true),
        destructive_hint: t.annotations.and_then(|a| a.destructive_hint),
    }
}

impl Connection {
    /// Closes stdin and waits up to [`EXIT_GRACE`] for the server to exit,
    /// then kills its group.
    pub async fn close(mut self) {
        let _ = self.service.close_with_timeout(EXIT_GRACE).await;
        if tokio::time::timeout(EXIT_GRACE, self.child.wait()).await.is_ok() {
            self.group.reaped();
        }
        self.group.kill();
        self.stderr.abort();
    }

    /// Kills its group at once.
    pub fn kill(self) {
        self.group.kill();
        self.stderr.abort();
    }

    /// After the process ended (`status`): its group killed, the rest of
    /// its stderr read (briefly), and how it ended as a clause.
    pub async fn ended(self, status: Option<ExitStatus>) -> String {
        self.group.reaped();
        self.group.kill();
        drain(self.stderr).await;
        exit_clause(status)
    }
}

/// Waits a little for the stderr reader to reach the end, so the tail holds
/// the last lines.
async fn drain(stderr: JoinHandle<()>) {
    let abort = stderr.abort_handle();
    if tokio::time::timeout(STDERR_DRAIN, stderr).await.is_err() {
        abort.abort();
    }
}

/// `exited with code 3`, `was killed by signal 9 (SIGKILL)`, or `ended`.
#[must_use]
pub fn exit_clause(status: Option<ExitStatus>) -> String {
    match status.map(|s| (s.code(), s.signal())) {
        Some((Some(code), _)) => format!("exited with code {code}"),
        Some((None, Some(signal))) => match nix::sys::signal::Signal::try_from(signal) {
            Ok(s) => format!("was killed by signal {signal} ({})", s.as_str()),
            Err(_) => format!("was killed by signal {signal}"),
        },
        _ => "ended".to_owned(),
    }
}
