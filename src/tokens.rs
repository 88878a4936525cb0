//! Layer 1 (pure): token accounting. One estimator for everything that shows
//! or decides on a token count: the context pane, the compression trigger,
//! the tail walk and `strata context`.
//!
//! - [`TokenCounter`]: the tokenizer behind a trait object, chosen
//!   per provider and model by [`counter_for`];
//! - [`message_tokens`] and friends: the chat-format overhead rule;
//! - [`TokenCache`]: per-message counts computed once;
//! - [`ServerCounter`]: a server's tokenizer, counted ahead by the runtime;
//! - [`Threshold`]: the compression threshold of DESIGN §7;
//! - [`Budget`]: where the window goes, by category (DESIGN §5);
//! - [`context_window_for`], [`default_reserved_output`]: model defaults.
//!
//! No I/O, no clock. The BPE tables ship inside the `bpe-openai` crate,
//! prebuilt; the first count under an encoding loads its table
//! (0.03–0.1 s), so the first call belongs off the UI task. Any module may call this one.

mod budget;
mod cache;
mod counter;
mod lines;
mod models;
mod overhead;
mod parallel;
mod server_counter;
mod threshold;
mod vocab;

pub use budget::{Budget, BudgetInput, BudgetItem, Categories, Category};
pub use cache::{HistoryCounts, TokenCache, text_bytes};
pub use counter::{Encoding, TiktokenCounter, TokenCounter};
pub use lines::{count_by_lines, line_parts};
pub use models::{
    EMBEDDED_DEFAULT_MAX_TOKENS, MAX_DEFAULT_RESERVED_OUTPUT, context_window_for, counter_for,
    default_reserved_output, encoding_for,
};
pub use overhead::{
    REPLY_PRIMING_TOKENS, SYSTEM_ROLE_TOKENS, TOKENS_PER_MESSAGE, TOKENS_PER_NAME, TOKENS_PER_TOOL_CALL,
    message_tokens, message_tokens_with, name_tokens, request_overhead, tool_schema_items,
    tool_schema_tokens,
};
pub use parallel::{MAX_THREADS, PARALLEL_MIN_BYTES, map_each};
pub use server_counter::ServerCounter;
pub use threshold::{
    Adjustment, DEFAULT_THRESHOLD_CAP, DEFAULT_THRESHOLD_RATIO, SMALL_WINDOW_PERCENT, THRESHOLD_FLOOR,
    Threshold, ThresholdSettings,
};
