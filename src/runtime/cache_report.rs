//! The prompt cache as `strata context --json` and the context pane show
//! it: the last request's predicted and reported cache reads with the break
//! ([`CacheStatus`]), and every request of the session as a series
//! ([`RequestPoint`]), from the stored usage rows.

use crate::domain::{CacheBreak, Compaction, CompactionKind, Usage};
use serde::Serialize;

/// `cache` in `strata context --json`: the session's last request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStatus {
    /// Input tokens strata expected the provider to read from its cache;
    /// `None` before any request strata checked.
    pub predicted_cached_tokens: Option<u64>,
    /// What the provider reported it read (`cached_tokens`,
    /// `cache_read_input_tokens`, the embedded model's re-used prefix);
    /// `None` when it did not say.
    pub reported_cached_tokens: Option<u64>,
    /// Tokens the request shared with the one before it.
    pub shared_tokens: Option<u64>,
    /// Where and why the cached prefix broke, `null` when it held.
    #[serde(rename = "break")]
    pub cache_break: Option<CacheBreak>,
}

impl CacheStatus {
    /// The status of the last of `usage` (oldest first).
    #[must_use]
    pub fn of(usage: &[Usage]) -> Self {
        let Some(last) = usage.last() else {
            return Self::default();
        };
        Self {
            predicted_cached_tokens: last.cache.as_ref().map(|c| c.predicted_cached_tokens),
            reported_cached_tokens: last.cache_read_tokens,
            shared_tokens: last.cache.as_ref().map(|c| c.shared_tokens),
            cache_break: last.cache.as_ref().and_then(|c| c.cache_break.clone()),
        }
    }
}

/// One request of the session, for the chart and `requests` in `strata
/// context --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RequestPoint {
    /// When it finished, unix milliseconds.
    pub at: i64,
    /// Its input tokens as the provider counted them, or strata's estimate
    /// when the provider did not say.
    pub prompt_tokens: u64,
    /// Whether `prompt_tokens` is strata's estimate.
    pub estimated: bool,
    /// Input tokens read from the cache, when the provider said.
    pub cached_tokens: Option<u64>,
    /// What strata predicted of them.
    pub predicted_cached_tokens: Option<u64>,
    /// A compaction (kind `summary`) stored since the request before.
    pub compaction: bool,
    /// Where and why the prefix broke.
    #[serde(rename = "break")]
    pub cache_break: Option<CacheBreak>,
    /// The assistant message it produced.
    pub message_id: Option<crate::domain::MessageId>,
    /// Its output tokens as the provider counted them, when it said.
    pub completion_tokens: Option<u64>,
}

/// The series of `usage` (oldest first), with `compactions` marked on the
/// first request after each.
#[must_use]
pub fn request_points(usage: &[Usage], compactions: &[Compaction]) -> Vec<RequestPoint> {
    let mut since = i64::MIN;
    usage
        .iter()
        .map(|u| {
            let compaction = compactions.iter().any(|c| {
                c.kind == CompactionKind::Summary && c.created_at > since && c.created_at <= u.created_at
            });
            since = u.created_at;
            RequestPoint {
                at: u.created_at,
                prompt_tokens: u.prompt_tokens.unwrap_or(u.estimated_prompt_tokens),
                estimated: u.prompt_tokens.is_none(),
                cached_tokens: u.cache_read_tokens,
                predicted_cached_tokens: u.cache.as_ref().map(|c| c.predicted_cached_tokens),
                compaction,
                cache_break: u.cache.as_ref().and_then(|c| c.cache_break.clone()),
                message_id: u.message_id,
                completion_tokens: u.completion_tokens,
            }
        })
        .collect()
}
