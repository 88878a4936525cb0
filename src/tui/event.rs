//! The app's vocabulary: [`AppEvent`] is everything that reaches the app
//! (terminal input, the clock, results of background work), [`Effect`] is
//! everything the app asks the driver to do. Background results carry the
//! data the app shows; the app never reads the store or a provider itself.

use crate::domain::{LayerName, Message, MessageStatus, SessionSummary, Usage};
use crossterm::event::KeyEvent;

/// Input to [`App::handle`](super::App::handle).
#[derive(Clone, Debug)]
pub enum AppEvent {
    /// A key press.
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
    /// Mouse wheel: positive scrolls towards older messages, in rows.
    Wheel(i32),
    /// The terminal's new size, in cells.
    Resize {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
    },
    /// Time passed (drives the spinner and tokens per second); unix ms.
    Tick {
        /// Now, unix milliseconds.
        now_ms: i64,
    },
    /// A step of a slow start (pulling the embedded model, loading it).
    Progress(String),
    /// The provider is ready.
    Connected {
        /// Provider name (`openai`, `anthropic`, `local`).
        provider: String,
        /// Model name.
        model: String,
        /// Whether it is the embedded model.
        embedded: bool,
    },
    /// A session (or the pending new one) was loaded or refreshed.
    Loaded(Box<SessionView>),
    /// A message of the open session was stored or changed: replaces the
    /// one with its id, or is appended.
    Message(Box<Message>),
    /// The context of the open session's next request.
    Context(Box<ContextSnapshot>),
    /// The turn moved to another phase (compressing, connecting,
    /// streaming, done).
    Phase(crate::conversation::Phase),
    /// A tool call started, printed, finished or waits for approval.
    Tool(crate::runtime::service::ToolEvent),
    /// A reply started streaming.
    StreamStarted {
        /// When, unix ms.
        now_ms: i64,
    },
    /// Reply text arrived.
    Delta {
        /// The text.
        text: String,
        /// When, unix ms.
        now_ms: i64,
    },
    /// The provider's usage of the request just finished.
    Usage(Usage),
    /// A message could not be sent and nothing was stored; its text goes
    /// back to the composer.
    Unsent(String),
    /// The reply ended.
    TurnDone {
        /// Complete, interrupted or error.
        status: MessageStatus,
    },
    /// The draft's token count (ticket from [`Effect::CountDraft`]).
    DraftTokens {
        /// Which request this answers; older tickets are dropped.
        ticket: u64,
        /// Tokens of the draft.
        tokens: u64,
    },
    /// Rows for the session picker (ticket from [`Effect::ListSessions`]).
    Sessions {
        /// Which request this answers; older tickets are dropped.
        ticket: u64,
        /// Matching sessions, newest first.
        rows: Vec<SessionSummary>,
    },
    /// The prepared request for the request inspector.
    Request(Box<RequestView>),
    /// Layers whose sources changed on disk since the prompt was frozen
    /// (all of them so far; empty after `/reload` or `/new`).
    Stale(Vec<LayerName>),
    /// Code highlighting finished for some blocks (posted by the chat
    /// pane's highlighter thread): cached blocks that drew them plain are
    /// laid out again.
    Highlighted,
    /// The workspace's inputs from earlier runs, oldest first (for Up and
    /// Down).
    History(Vec<String>),
    /// A one-line notice (feedback of a command).
    Notice(String),
    /// A one-line problem.
    Error(String),
}

/// What the app asks the driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Send a user message (starting a session when there is none).
    Send(String),
    /// Cancel the reply in progress, keeping the partial text.
    Cancel,
    /// Send the request waiting for MCP servers without those still
    /// starting.
    SkipServers,
    /// Start a new session (created when its first message is sent).
    NewSession,
    /// Resume a session by id or unique id prefix.
    Resume(String),
    /// Rename the current session.
    Rename(String),
    /// Fork the current session.
    Fork,
    /// Compress the history, with an optional focus topic.
    Compress(Option<String>),
    /// Undo the last compression.
    UndoCompress,
    /// Apply changed instruction files, memory and skills.
    Reload,
    /// Switch the session's model.
    Model(String),
    /// Append a line to `MEMORY.md`.
    Memory(String),
    /// Load a skill into the conversation.
    Skill(String),
    /// Export the session (`md` or `json`) to a file in the workspace.
    Export(ExportFormat),
    /// Search sessions for the picker.
    ListSessions {
        /// Ticket echoed in [`AppEvent::Sessions`].
        ticket: u64,
        /// What the user typed (FTS); empty lists every session.
        search: String,
    },
    /// Count the draft's tokens.
    CountDraft {
        /// Ticket echoed in [`AppEvent::DraftTokens`].
        ticket: u64,
        /// The draft.
        text: String,
    },
    /// Prepare the next request for the request inspector.
    InspectRequest,
    /// Answer the approval a tool call waits for (sent at once, even while
    /// the turn runs).
    Approve(crate::runtime::ApprovalAnswer),
    /// List the session's tools with their schema tokens (`/tools`; the
    /// answer is a notice).
    Tools,
    /// Switch one tool on or off for the session (`/tools on|off NAME`).
    ToggleTool {
        /// The tool's name.
        name: String,
        /// On or off.
        on: bool,
    },
    /// Restore the file the latest `write_file` or `edit_file` changed.
    UndoEdit,
    /// `/mcp`.
    Mcp(crate::runtime::service::McpAction),
    /// Keep an input the user entered (a message or a command, its folds
    /// expanded) in the workspace's history across runs.
    RememberInput(String),
    /// Leave the app.
    Quit,
}

pub use crate::runtime::service::{ContextSnapshot, ExportFormat, Opening, RequestView, SessionView};
