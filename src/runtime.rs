//! Layer 3: the runtime. It wires the pure core (prompt assembly, token
//! accounting) to the adapters (workspace reader, store, config) for the
//! operations the command line and, later, the full-screen app perform:
//! building a prompt, creating a session with its frozen prompt, importing a
//! transcript, and computing the next request's budget.
//!
//! Nothing here renders or parses arguments; callers pass resolved values.

mod approval_request;
mod attach;
mod auto_compress;
pub mod cache_report;
mod cache_rule;
mod chat;
mod compress;
mod context;
mod context_control;
mod control_wording;
pub mod doctor;
mod edit_message;
mod exact_counts;
pub mod handle;
mod import;
pub mod input_history;
pub mod lease_check;
mod lookup;
mod mcp_session;
pub mod mcp_setup;
mod mcp_trust;
pub mod message_ref;
pub mod offer_tools;
mod prompt_build;
mod prompt_rebuild;
mod providers;
pub mod served_window;
pub mod service;
mod session;
mod session_build;
mod session_ops;
pub mod tool_costs;
mod tool_run;
mod tools_setup;
mod transcript;
mod turn_parts;
mod wording;

pub use attach::{AttachConsent, Mention, UserMessage, Withheld, WithheldWhy, withheld_notice};
pub use chat::{TurnHost, TurnOutcome};
pub use compress::{
    CompressOutcome, CompressRequest, KeptMessage, MAX_TOPIC_CHARS, PREVIEW_CHARS, Snapshot, SummarizerArg,
    UndoOutcome, compress_topic,
};
pub use context::ContextReport;
pub use context_control::{ControlAction, ControlError, ControlMessage, ControlOutcome};
pub use edit_message::{EditOutcome, EditUndoOutcome};
pub use exact_counts::{layers_for, tokenizer_id};
pub use handle::{Op, SessionHandle};
pub use import::{ImportError, ImportOutcome, parse_openai_messages};
pub use mcp_session::{McpSession, ServerState};
pub use mcp_trust::{McpJsonServer, McpSource, PendingMcpJson, WorkspaceMcp};
pub use message_ref::MessageRefError;
pub use prompt_build::{PromptPreview, fingerprint, recent_entry, resolve_mode, to_system_prompt};
pub use prompt_rebuild::PromptRebuild;
pub use providers::{
    Connected, connect, counters_built, ensure_local_model, kv_state_cap_bytes, local_model_file,
    session_counter,
};
pub use session::{Imported, NewSession, Runtime, RuntimeError, title_from};
pub use session_build::NewSessionBuild;
pub use session_ops::{Reloaded, SKILL_MAX_CHARS};
pub use tool_run::{ApprovalAnswer, TurnTools};
pub use tools_setup::{ToolsState, approval_rules, tools_config_problems, tools_state};
pub use transcript::{export_json, export_markdown, show_markdown};
pub use turn_parts::{TURN_REMINDER_MAX_CHARS, TURN_REMINDER_TIMEOUT, TurnParts};
pub use wording::Client;

/// Now, unix milliseconds: the one clock of the runtime and its clients
/// (the core never reads one; times are passed in).
#[must_use]
pub fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}
