//! The app's vocabulary: [`AppEvent`] is everything that reaches the app
//! (terminal input, the clock, and what its session says), [`Effect`] is
//! everything the app asks the driver to do. Background results carry the
//! data the app shows; the app never reads the store or a provider itself.

use crate::domain::{MessageId, Role};
use crate::runtime::service::ServiceEvent;
use crossterm::event::KeyEvent;

/// Input to [`App::handle`](super::App::handle).
// The service's events are the most common and the largest; boxing them
// would cost an allocation per streamed delta for no gain.
#[allow(clippy::large_enum_variant)]
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
    /// The time of the input event that follows (unix ms): a key typed
    /// just as a question appeared is told from an answer to it.
    Clock {
        /// Now, unix milliseconds.
        now_ms: i64,
    },
    /// Code highlighting finished for some blocks (posted by the chat
    /// pane's highlighter thread): cached blocks that drew them plain are
    /// laid out again.
    Highlighted,
    /// The workspace's inputs from earlier runs, oldest first (for Up and
    /// Down).
    History(Vec<String>),
    /// The text the user wrote in `$EDITOR` (the answer to
    /// [`Effect::EditInEditor`]); `None` when the editor failed or exited
    /// with an error (the notice that says why comes as an
    /// [`AppEvent::Failed`]).
    Edited(Option<String>),
    /// A problem of the terminal's own work (the editor, the input
    /// history), one sentence.
    Failed(String),
    /// What the session said ([`crate::runtime::service::ServiceEvent`]).
    Service(ServiceEvent),
}

/// What the app asks the driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Send a user message (starting a session when there is none).
    Send(String),
    /// Send a user message after the user answered
    /// [`AppEvent::AttachAsk`]: the files at `allowed` (resolved paths the
    /// question named) are attached this once, the other mentions
    /// withheld are not.
    SendAttaching {
        /// The message.
        text: String,
        /// The resolved paths the user allowed.
        allowed: Vec<std::path::PathBuf>,
    },
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
    /// Compress the history (`/compress`, "compress up to here"); with
    /// `preview` the driver answers with [`AppEvent::CompressPreview`] and
    /// stores nothing until [`Effect::ApplyPreview`].
    Compress(CompressAsk),
    /// Store the previewed summary (`summary`: its body as shown, or as
    /// the user edited it; `edited` says which). `force` applies it even
    /// though it makes the request bigger (the user confirmed twice). The
    /// summary is never generated a second time.
    ApplyPreview {
        /// The summary's body, without the framing notice.
        summary: String,
        /// Whether the user changed it.
        edited: bool,
        /// Apply even when it grows the request.
        force: bool,
    },
    /// Drop the previewed summary; nothing is stored.
    CancelPreview,
    /// Load the context list's rows (answered by [`AppEvent::ContextList`]).
    LoadContextList,
    /// List the provider's models or the workspace's skills for a picker.
    ListChoices(crate::runtime::service::ChoiceKind),
    /// Pin (`on`) or unpin a message of the active history.
    SetPinned {
        /// The message.
        message: MessageId,
        /// Pin or unpin.
        on: bool,
    },
    /// Exclude (`on`) or include a message (with its tool call unit).
    SetExcluded {
        /// The message.
        message: MessageId,
        /// Exclude or include.
        on: bool,
    },
    /// Archive user message `message` and everything after it, then send
    /// `text` as the new last message: a turn, like [`Effect::Send`]
    /// ([`AppEvent::TurnDone`] follows; [`AppEvent::Unsent`] gives the text
    /// back when nothing was stored).
    EditResend {
        /// The user message edited.
        message: MessageId,
        /// The text to send instead.
        text: String,
    },
    /// Undo the last edit and resend (the archived messages come back).
    UndoEditMessage,
    /// Pause (`false`) or resume (`true`) automatic compression for the
    /// session.
    AutoCompress(bool),
    /// Suspend the screen and let the user edit `text` in `$EDITOR`
    /// (answered by [`AppEvent::Edited`]); run by the terminal loop, not
    /// the session driver.
    EditInEditor(String),
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
    /// Export the session (`md` or `json`) to a file in the data directory.
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

/// What a compression would store, for the preview overlay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressPreviewView {
    /// The summary's body as the user may edit it (without the framing
    /// notice the store adds).
    pub summary: String,
    /// Active messages before.
    pub messages_before: usize,
    /// Active messages after (the summary and what stays verbatim).
    pub messages_after: usize,
    /// Tokens of the history before (stored counts).
    pub tokens_before: u64,
    /// Tokens of the history after.
    pub tokens_after: u64,
    /// The messages that stay verbatim after the summary, oldest first.
    pub kept_verbatim: Vec<KeptRow>,
    /// The focus topic, if one was given.
    pub topic: Option<String>,
    /// Who wrote the summary (a model name or `extractive`).
    pub summarizer: String,
    /// One sentence each: what the user should know before accepting.
    pub warnings: Vec<String>,
    /// Whether the summary makes the request bigger: accepting then needs
    /// a second confirmation (and [`Effect::ApplyPreview`] with `force`).
    pub grows: bool,
    /// Tokens of the next request the provider will not read from its
    /// cache after the compression.
    pub uncached_tokens: Option<u64>,
}

/// A message that stays verbatim after a compression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptRow {
    /// Its position among the active messages now, counting from 1.
    pub pos: usize,
    /// Its role.
    pub role: Role,
    /// Its stored count, tokens.
    pub tokens: u32,
    /// Its first line, short.
    pub preview: String,
}

pub use crate::runtime::service::{
    CompressAsk, ContextSnapshot, ExportFormat, Opening, RequestView, SessionView,
};

impl From<ServiceEvent> for AppEvent {
    fn from(e: ServiceEvent) -> Self {
        Self::Service(e)
    }
}
