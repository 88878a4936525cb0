//! Layer 2 (adapter): Model Context Protocol servers over stdio, through
//! `rmcp`, the official Rust SDK (DESIGN §16).
//!
//! Owns the server processes and their connections: [`Hub::start`] starts
//! every server of a session at once, each runs `initialize` and a paginated
//! `tools/list`, honours `notifications/tools/list_changed`, and reports a
//! [`Status`]; [`Hub::call`] runs `tools/call` with a timeout and renders the
//! result's content blocks to text ([`CallResult`]). A server that crashed,
//! exited or hung is restarted on its next use, at most
//! [`MAX_RESTARTS`] times a session. It takes [`ServerSpec`]s (the runtime
//! makes them from the config); nothing here reads the config, decides
//! approval or limits, or names tools for the model (that is `tooling`).
//!
//! Processes: each server runs in its own process group with a minimal
//! environment ([`environment`]); with [`ServerSpec::supervisor`] set it is
//! held by `strata __supervise`, which kills the group when strata dies, even
//! by SIGKILL. Its stderr goes to the log a line at a time, capped, never to
//! the screen; the last lines are kept for [`Status::Unavailable`].
//!
//! Every `async fn` here must run inside a Tokio runtime with timers and
//! I/O enabled.

mod connection;
mod environment;
mod hub;
mod large;
mod process;
mod render;
mod server;
mod transport;

pub use environment::{BASE_VARIABLES, SECRET_WORDS, command_line, minimal_env, resolve_program};
pub use hub::{Hub, ServerStatus};
pub use large::Large;
pub use process::{STDERR_LINE_CHARS, STDERR_LOG_LINES};
pub use render::{CallResult, ImageDir};
pub use transport::MEMORY_CAP;

use std::path::PathBuf;
use std::time::Duration;

/// Restarts of one server a session allows after its first start.
pub const MAX_RESTARTS: u32 = 3;

/// Lines of a server's stderr kept for [`Status::Unavailable`].
pub const STDERR_TAIL_LINES: usize = 20;

/// How to start one MCP server: the runtime builds it from the config
/// (`[mcp.servers.NAME]`, or a workspace's `.mcp.json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    /// The server's name in the config (`time`); calls and statuses use it.
    pub name: String,
    /// The program: a path, or a name looked up on the `PATH` the server
    /// gets ([`resolve_program`]).
    pub command: String,
    /// Its arguments, `${VAR}` already expanded.
    pub args: Vec<String>,
    /// Variables set for it (already expanded), on top of the minimal
    /// environment; they win over inherited ones.
    pub env: Vec<(String, String)>,
    /// Names of strata's variables passed through besides the minimal set
    /// (`env_passthrough`); the only way a variable whose name holds a
    /// [`SECRET_WORDS`] word is inherited.
    pub inherit: Vec<String>,
    /// Working directory (the workspace); `None` keeps strata's.
    pub cwd: Option<PathBuf>,
    /// How long `initialize` and the first `tools/list` may take together.
    pub startup_timeout: Duration,
    /// How long one `tools/call` may take unless the call gives its own.
    pub call_timeout: Duration,
    /// The strata binary: when set, the server runs as `strata __supervise
    /// --parent PID -- 'exec COMMAND ARGS…'`, which kills it when strata
    /// dies; `None` runs it directly (tests of the library).
    pub supervisor: Option<PathBuf>,
    /// More flags for the supervisor, before `--` (its sandbox).
    pub supervisor_args: Vec<std::ffi::OsString>,
    /// Where a message longer than [`MEMORY_CAP`] is written while it is
    /// read, and a long result's text is left for the caller (private
    /// files, removed once used).
    pub large_dir: PathBuf,
}

impl ServerSpec {
    /// A spec for `command args…` named `name`, with the default timeouts
    /// (30 s start-up, 120 s per call), no extra variables, strata's working
    /// directory, no supervisor, and long messages under the temporary
    /// directory.
    #[must_use]
    pub fn new(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            name: name.into(),
            command: command.into(),
            args,
            env: Vec::new(),
            inherit: Vec::new(),
            cwd: None,
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(120),
            supervisor: None,
            supervisor_args: Vec::new(),
            large_dir: std::env::temp_dir(),
        }
    }
}

/// A configured server that cannot be started at all (a `${VAR}` that is
/// not set, no command): it is listed as unavailable with `why` and never
/// started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The server's name.
    pub name: String,
    /// One sentence saying what is wrong and what to do.
    pub why: String,
}

/// Where a server is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Its process is starting, or `initialize` / `tools/list` are running.
    Starting,
    /// Connected; `tools` tools listed.
    Ready {
        /// How many tools it lists.
        tools: usize,
    },
    /// Not usable now: it failed to start, exited, or stopped answering.
    /// Calls get an error; the next call starts it again while restarts
    /// remain ([`MAX_RESTARTS`]).
    Unavailable {
        /// One sentence: what happened and what to do.
        why: String,
        /// Its last stderr lines (at most [`STDERR_TAIL_LINES`]), oldest
        /// first.
        stderr_tail: Vec<String>,
    },
}

impl Status {
    /// `starting`, `ready` or `unavailable`.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready { .. } => "ready",
            Self::Unavailable { .. } => "unavailable",
        }
    }
}

/// One tool a ready server lists, as the server describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct McpTool {
    /// The server's name.
    pub server: String,
    /// The tool's name on the server (`get_current_time`), before any
    /// `server__tool` naming.
    pub name: String,
    /// Its description; empty when the server gives none.
    pub description: String,
    /// The JSON schema of its arguments (`inputSchema`, an object schema).
    pub input_schema: serde_json::Value,
    /// `annotations.readOnlyHint` is `true` (the tool does not change its
    /// environment). Only a hint from the server; absent means `false`.
    pub read_only_hint: bool,
    /// `annotations.destructiveHint`, when the server gives it. Only a hint.
    pub destructive_hint: Option<bool>,
}

impl McpTool {
    /// What the server says of the tool, for [`crate::tooling::access`].
    #[must_use]
    pub fn annotations(&self) -> crate::tooling::access::Annotations {
        crate::tooling::access::Annotations {
            read_only_hint: Some(self.read_only_hint),
            destructive_hint: self.destructive_hint,
        }
    }
}
