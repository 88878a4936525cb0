//! What the session service shows of a session, as plain data its clients
//! render: the session with its messages, the context snapshot (budget,
//! pipeline report, the three figures of the next request), the request
//! inspector's wire text, and the small enums clients pass in.

use crate::domain::{Compaction, Message, Session, SessionId, SystemPrompt, Usage};
use crate::pipeline::ReportEntry;
use crate::tokens::Budget;

/// `/export` formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// Markdown transcript.
    Markdown,
    /// JSON (`strata export --format json`).
    Json,
}

/// A session as the app shows it.
#[derive(Clone, Debug, Default)]
pub struct SessionView {
    /// The session; `None` until the first message of a new one is sent.
    pub session: Option<Session>,
    /// Its messages, oldest first, archived ones included (they are shown
    /// only on request).
    pub messages: Vec<Message>,
    /// The context pane's data.
    pub context: Option<ContextSnapshot>,
}

/// Everything the context pane and the prompt inspector show, computed off
/// the UI task.
#[derive(Clone, Debug)]
pub struct ContextSnapshot {
    /// The frozen prompt (or, before the first message, the one a new
    /// session would get).
    pub prompt: SystemPrompt,
    /// Where the window goes.
    pub budget: Budget,
    /// What the pipeline will do to each message of the next request.
    pub report: Vec<ReportEntry>,
    /// Input tokens of the prepared request, when it can be prepared.
    pub prepared_tokens: Option<u64>,
    /// The pre-limit estimate the compression trigger uses, when the
    /// request can be prepared.
    pub prelimit_tokens: Option<u64>,
    /// Whether compressing now would save at least 10 % of the next
    /// request: only then is compressing advised.
    pub compression_helps: bool,
    /// The stored history's tokens as a request.
    pub stored_tokens: u64,
    /// Why the next request cannot be prepared, if it cannot.
    pub prepare_error: Option<String>,
    /// The last request's usage.
    pub last_usage: Option<Usage>,
    /// The last compaction of the session.
    pub last_compaction: Option<Compaction>,
    /// Every request of the session, oldest first (the pane's chart).
    pub requests: Vec<crate::runtime::cache_report::RequestPoint>,
    /// Why automatic compression is blocked, if it is.
    pub blocked_reason: Option<String>,
    /// Why the model gets no tools, when it gets none (the pane says so
    /// instead of showing 0).
    pub tools_off: Option<String>,
    /// `shell` was meant to run in a sandbox this kernel cannot apply (the
    /// pane says so under the tools row).
    pub sandbox_note: Option<String>,
    /// Each server's tools and their tokens (the built-in tools as
    /// `builtin`), when tools are on.
    pub tool_servers: Option<crate::runtime::tool_costs::ToolServers>,
    /// What the prompt leaves out or refused (an instruction file refused
    /// as a prompt injection, what the minimal mode drops), one sentence
    /// each; the pane shows them, the notices log has them whole.
    pub prompt_warnings: Vec<String>,
}

/// The request inspector's content.
#[derive(Clone, Debug)]
pub struct RequestView {
    /// The prepared request as it goes over the wire: the provider's JSON
    /// body, pretty-printed, or the ChatML text fed to the embedded model.
    pub json: String,
    /// What the pipeline did to each message.
    pub report: Vec<ReportEntry>,
    /// Estimated input tokens.
    pub prepared_tokens: u64,
}

/// Which session a launch opens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Opening {
    /// A new session.
    #[default]
    New,
    /// The session with this id or unique prefix.
    Resume(String),
    /// The picker, over every session.
    Picker,
    /// The latest session of the workspace (a new one when there is none).
    Continue,
}

/// Id of a session as shown in lists and file names: its short id
/// ([`SessionId::short`], the random end of the id).
#[must_use]
pub fn short_id(id: SessionId) -> String {
    id.short()
}

/// What a picker of the app lists: the models of `/model`, the skills of
/// `/skill`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChoiceKind {
    /// The models the provider serves (`/model` without a name).
    Model,
    /// The skills of the workspace (`/skill` without a name).
    Skill,
}

/// One item of a picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// What is picked: a model name, a skill name.
    pub name: String,
    /// One line about it (a skill's description, `current`), may be empty.
    pub detail: String,
}
