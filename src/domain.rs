//! Layer 0: the data strata talks about — sessions, messages, system prompts,
//! compactions and usage — with serde, and nothing that performs I/O.
//!
//! Names follow the OpenAI / Anthropic vocabulary (`role`, `tool_calls`,
//! `tool_call_id`, `prompt_tokens`). Every module may use this one; it uses
//! only `serde` and `uuid`.

mod cache;
mod compaction;
mod ids;
mod message;
mod provider;
mod request;
mod session;
mod system_prompt;
mod tool;
mod usage;

pub use cache::{
    BlockHash, BlockKind, BreakAt, BreakReason, CacheBreak, CacheCheck, CacheRule, PrefixBlock,
    PrefixSnapshot,
};
pub use compaction::{Compaction, CompactionKind, CompactionTrigger, Summarizer};
pub use ids::{CompactionId, MessageId, PromptId, SHORT_ID_LEN, SessionId};
pub use message::{Interruption, Message, MessageKind, MessageStatus, Role, TokenCount, ToolCall};
pub use provider::{ProviderKind, UnknownProvider};
pub use request::{ChatRequest, FinishReason, ProviderUsage, RequestMessage, RequestSystem, StreamEvent};
pub use session::{Session, SessionSummary};
pub use system_prompt::{
    Fingerprint, LayerInfo, LayerName, PromptMode, SourceInfo, SourceStatus, SystemPrompt, Tier,
};
pub use tool::{ToolResultMeta, ToolStatus};
pub use usage::Usage;
