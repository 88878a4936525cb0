//! The app's vocabulary: [`AppEvent`] is everything that reaches the app
//! (terminal input, the clock, and what its session says), [`Effect`] is
//! everything the app asks of its session or terminal. Background results carry the
//! data the app shows; the app never reads the store or a provider itself.

use crate::domain::Role;
use crate::runtime::service::{Command, ServiceEvent};
use crate::runtime::{AttachConsent, Op};
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

/// What the app asks for: an [`Op`] for its session, or what the
/// terminal itself does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Hand an op to the session (see [`Op`]).
    Op(Op),
    /// Suspend the screen and let the user edit `text` in `$EDITOR`
    /// (answered by [`AppEvent::Edited`]).
    EditInEditor(String),
    /// Leave the app (the turn in progress is cancelled).
    Quit,
}

impl Effect {
    /// Sends `text` as a message (a turn).
    #[must_use]
    pub fn send(text: String) -> Self {
        Self::Op(Op::Send {
            text,
            consent: AttachConsent::default(),
        })
    }

    /// Runs one of the session's commands.
    #[must_use]
    pub fn run(command: Command) -> Self {
        Self::Op(Op::Run(command))
    }
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
    /// a second confirmation (and `Command::ApplyPreview` with `force`).
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
