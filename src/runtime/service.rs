//! The session service: one object that owns an open session — its row,
//! frozen prompt, conversation, token counter, provider connection and an
//! up-to-date context snapshot — and answers its clients with small
//! [`ServiceEvent`]s (a message appended or updated, usage, the context,
//! a notice, the turn's phase). The full-screen app is such a client: it
//! renders what arrives and never touches the store, a provider, the
//! workspace readers or the config itself.
//!
//! Besides the [`SessionService`] itself: the picker's query thread and the
//! draft-counting thread ([`queries`]), the watch of the open session's
//! prompt sources ([`watch`]), and the files a command writes ([`files`]).

pub mod files;
pub mod queries;
mod session;
mod snapshot;
pub mod view;
pub mod watch;

pub use session::{Command, CompressAsk, EnvLookup, Launch, McpAction, SessionService};
pub use view::{
    Choice, ChoiceKind, ContextSnapshot, ExportFormat, Opening, RequestView, SessionView, short_id,
};

use crate::conversation::Phase;
use crate::domain::{LayerName, Message, MessageStatus, SessionSummary, Usage};
use std::sync::Arc;

/// A list the service answers a command with (`/tools`, `/mcp`): what it
/// is about, then one row a line, each laid out as it is shown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// What the rows are (`tools (schema tokens)`, `MCP servers`), or why
    /// there are none (`tools are off: …`).
    pub head: String,
    /// The rows, in order.
    pub rows: Vec<String>,
}

/// What the service tells its client. Sent in order, never blocking.
#[derive(Clone, Debug)]
pub enum ServiceEvent {
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
    /// A session (or the pending new one) was loaded whole: on opening,
    /// switching sessions, or after a change that rewrote its history.
    Loaded(Box<SessionView>),
    /// A message of the open session was stored or changed (the user's
    /// message, a finished reply); clients replace the one with its id or
    /// append it.
    Message(Box<Message>),
    /// Messages of the open session were counted: their ids and counts
    /// (clients show them in the messages' headers).
    Tokens(Vec<(crate::domain::MessageId, crate::domain::TokenCount)>),
    /// The context of the open session's next request, recomputed from
    /// what the service holds.
    Context(Box<ContextSnapshot>),
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
    /// The turn moved to another phase.
    Phase(Phase),
    /// The provider's usage of the request just finished.
    Usage(Usage),
    /// A message could not be sent and nothing was stored; its text goes
    /// back to the composer.
    Unsent(String),
    /// Edit and resend archived a user message and everything after it;
    /// its new text is sent next (undone again when nothing was sent).
    Edited(Box<crate::runtime::EditOutcome>),
    /// A command ([`Command`]) ended, done, failed or cancelled: a client
    /// showing it as work in progress stops.
    CommandDone,
    /// The turn ended.
    TurnDone {
        /// Complete, interrupted or error.
        status: MessageStatus,
    },
    /// The draft's token count (the ticket of its request).
    DraftTokens {
        /// Which request this answers.
        ticket: u64,
        /// Tokens of the draft.
        tokens: u64,
    },
    /// Rows for the session picker.
    Sessions {
        /// Which request this answers.
        ticket: u64,
        /// Matching sessions, newest first.
        rows: Vec<SessionSummary>,
    },
    /// The prepared request for the request inspector.
    Request(Box<RequestView>),
    /// Layers whose sources changed on disk since the prompt was frozen
    /// (all of them so far; empty after `/reload` or `/new`).
    Stale(Vec<LayerName>),
    /// An automatic compression ran inside a turn, or found nothing to do
    /// (its feedback line is for people; the rest for scripts).
    Compressed(Box<crate::runtime::CompressOutcome>),
    /// A previewed compression: what would be stored (`preview` set,
    /// `summary` the body alone), waiting for `Command::ApplyPreview` or
    /// `Command::CancelPreview`.
    CompressPreview(Box<crate::runtime::CompressOutcome>),
    /// The context list's rows (every message, its state in the next
    /// request and its tokens).
    ContextList(Vec<crate::pipeline::ContextRow>),
    /// The items of a picker (`Command::ListChoices`).
    Choices {
        /// What they are.
        kind: ChoiceKind,
        /// The items, in the order to show.
        items: Vec<Choice>,
    },
    /// A tool call started, printed, finished or waits for approval.
    Tool(ToolEvent),
    /// A message was not sent because it names files that would not be
    /// attached (outside the workspace, or credentials): the client asks
    /// the user and sends it again with its answer
    /// ([`SessionService::send_attaching`]).
    AttachAsk(Box<AttachQuestion>),
    /// The answer to `/tools`: the session's tools, a row each.
    ToolList(Listing),
    /// The answer to `/mcp`: the servers and their tools, a row each.
    McpList(Listing),
    /// A one-line notice (feedback of a command).
    Notice(String),
    /// A one-line problem.
    Error(String),
}

/// What happens to a tool call while its round runs (its result arrives
/// with the round as a `tool` [`ServiceEvent::Message`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolEvent {
    /// The call started running.
    Started {
        /// The call.
        call: crate::domain::ToolCall,
        /// Its one-line argument summary.
        summary: String,
        /// When, unix ms.
        now_ms: i64,
    },
    /// The latest output of a running call (the shell's last lines).
    Progress {
        /// The call.
        tool_call_id: String,
        /// Its latest output.
        tail: String,
    },
    /// The call finished running.
    Finished {
        /// The call.
        tool_call_id: String,
        /// How it ended.
        status: crate::domain::ToolStatus,
        /// The diff of the file it changed, if any.
        diff: Option<String>,
        /// When, unix ms.
        now_ms: i64,
    },
    /// The call waits for the user's approval; answer it through
    /// [`SessionService::approvals`].
    ApprovalNeeded(Box<ApprovalRequest>),
    /// The call was answered without running: refused, denied, or found
    /// to fail before it was offered for approval.
    Answered {
        /// The call.
        tool_call_id: String,
        /// `denied` or `error`.
        status: crate::domain::ToolStatus,
    },
}

/// A tool call waiting for the user's approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// The call.
    pub call: crate::domain::ToolCall,
    /// Its one-line argument summary.
    pub summary: String,
    /// What it would do, in full: the command, or the diff of the change.
    pub detail: String,
    /// What it does.
    pub access: crate::tooling::Access,
    /// What "allow until strata exits" allows (`shell:git status`,
    /// `edit_file`); empty when no lasting rule is offered (a command no
    /// prefix rule could match, [`crate::tooling::approval::GrantOffer`]).
    pub grant: String,
    /// The grant would allow commands that delete or rewrite files: the
    /// overlay asks for its key twice, with a warning.
    pub grant_risky: bool,
    /// Why this call asks beyond what it does, one sentence: the rule that
    /// gave an MCP tool its access, where a `memory` note goes, what a
    /// file `read_file` would read looks like; empty when the tool's kind
    /// says it all.
    pub why: String,
    /// `shell`: how the command would run (`sandboxed (workspace, no
    /// network)`, `runs outside the sandbox: REASON`, `not sandboxed: this
    /// kernel has no Landlock`); `None` for other tools or no sandbox.
    pub sandbox: Option<String>,
    /// The call asks to leave the sandbox: it can be allowed once only.
    pub leaves_sandbox: bool,
}

/// A message held back until the user says whether to attach the files
/// it names that the confinement withholds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachQuestion {
    /// The message as the user wrote it.
    pub text: String,
    /// Each mention withheld, with its resolved path and why.
    pub withheld: Vec<crate::runtime::Withheld>,
}

/// Where the service's events go (e.g. a channel's `send`); called on the
/// service's threads, so it must not block.
pub type Sink = Arc<dyn Fn(ServiceEvent) + Send + Sync>;
