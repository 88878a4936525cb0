//! The conversation's prompt-cache bookkeeping: each request sent is
//! compared with the previous one of the session ([`crate::prompt_cache`]),
//! the prediction and break ride on the reply to its usage row, and the
//! request becomes the one the next is compared with once the provider
//! answered it.

use super::Conversation;
use crate::domain::{BreakAt, BreakReason, CacheBreak, CacheCheck, CacheRule, PrefixSnapshot};
use crate::pipeline::Prepared;
use crate::prompt_cache::{self, BlockHashes, Changes, SnapshotInput};

/// The previous request and the hashes of messages already seen.
#[derive(Clone, Debug)]
pub(super) struct CacheBook {
    rule: CacheRule,
    last: Option<PrefixSnapshot>,
    hashes: BlockHashes,
}

impl Default for CacheBook {
    fn default() -> Self {
        Self {
            rule: CacheRule::OPENAI,
            last: None,
            hashes: BlockHashes::new(),
        }
    }
}

impl Conversation {
    /// Uses `rule` for the provider's prompt cache, and `last` (the
    /// session's previous request, from the store) as what the next
    /// request is compared with.
    #[must_use]
    pub fn with_cache_rule(mut self, rule: CacheRule, last: Option<PrefixSnapshot>) -> Self {
        self.book.rule = rule;
        self.book.last = last;
        self
    }

    /// The provider's caching rule in use.
    #[must_use]
    pub fn cache_rule(&self) -> CacheRule {
        self.book.rule
    }

    /// The previous request's blocks, when there was one.
    #[must_use]
    pub fn last_prefix(&self) -> Option<&PrefixSnapshot> {
        self.book.last.as_ref()
    }

    /// The blocks of `prepared` and what they predict against the previous
    /// request (calibrated to the provider's counts).
    pub(super) fn check_cache(&mut self, prepared: &Prepared, now_ms: i64) -> (PrefixSnapshot, CacheCheck) {
        let tool_tokens = self.tool_items().iter().map(|i| i.tokens).sum();
        let snapshot = prompt_cache::snapshot(
            &SnapshotInput {
                request: &prepared.request,
                report: &prepared.report,
                sources: &prepared.sources,
                messages: &self.messages,
                prompt: &self.prompt,
                tool_tokens,
                system_tokens: u64::from(self.system_tokens.unwrap_or(0))
                    + u64::from(crate::tokens::TOKENS_PER_MESSAGE + crate::tokens::SYSTEM_ROLE_TOKENS),
                rule: self.book.rule,
                now_ms,
            },
            &mut self.book.hashes,
        );
        let check = self.check_against_last(&snapshot, &prepared.report);
        (snapshot, check)
    }

    /// What `snapshot` predicts against the previous request.
    pub(crate) fn check_against_last(
        &self,
        snapshot: &PrefixSnapshot,
        report: &[crate::pipeline::ReportEntry],
    ) -> CacheCheck {
        let last = self.book.last.as_ref();
        let prediction = prompt_cache::predict(self.book.rule, last, snapshot, self.calibration.ratio());
        let changes = Changes {
            messages: &self.messages,
            report,
        };
        let cache_break = prompt_cache::reason(&prediction, last, snapshot, &changes).or_else(|| {
            prediction.expired.then_some(CacheBreak {
                at: BreakAt::Provider,
                reason: BreakReason::Expired,
            })
        });
        CacheCheck {
            predicted_cached_tokens: prediction.predicted_cached_tokens,
            shared_tokens: prediction.shared_tokens,
            cache_break,
        }
    }

    /// The provider answered the request of `snapshot`: it is what the
    /// next request is compared with.
    pub(super) fn answered(&mut self, snapshot: PrefixSnapshot) {
        self.book.last = Some(snapshot);
    }
}

/// `check` with what the provider reported: a prediction above 0 with
/// nothing read and no break strata saw is a provider-side miss.
#[must_use]
pub(super) fn with_reported(mut check: CacheCheck, reported: Option<u64>) -> CacheCheck {
    if check.cache_break.is_none() && check.predicted_cached_tokens > 0 && reported == Some(0) {
        check.cache_break = Some(CacheBreak {
            at: BreakAt::Provider,
            reason: BreakReason::ProviderMiss,
        });
    }
    check
}
