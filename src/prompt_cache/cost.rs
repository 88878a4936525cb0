//! What an action will cost in cache before it runs: the tokens of the
//! next request the provider will not read from its cache once a message
//! leaves the request (an exclusion, a compression) or comes back (an
//! inclusion), from the blocks of the last request.

use crate::domain::{BlockKind, MessageId, PrefixSnapshot};

/// Tokens of `prev`'s blocks before the first message block for which
/// `changed` holds: the prefix an action that changes that message keeps
/// cached. All of `prev` when no block is changed.
#[must_use]
pub fn kept_before(prev: &PrefixSnapshot, changed: impl Fn(MessageId) -> bool) -> u64 {
    prev.blocks
        .iter()
        .take_while(|b| match b.kind {
            BlockKind::Message {
                message_id: Some(id), ..
            } => !changed(id),
            _ => true,
        })
        .map(|b| u64::from(b.tokens))
        .sum()
}

/// Tokens of a next request of `next` tokens that will be uncached after
/// an action changing the messages `changed` holds for, given the last
/// request's blocks (`None`: nothing is cached yet, all of it is).
#[must_use]
pub fn uncached_after(next: u64, prev: Option<&PrefixSnapshot>, changed: impl Fn(MessageId) -> bool) -> u64 {
    prev.map_or(next, |p| next.saturating_sub(kept_before(p, changed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{PrefixBlock, Role};

    fn message(id: MessageId, tokens: u32) -> PrefixBlock {
        PrefixBlock {
            kind: BlockKind::Message {
                message_id: Some(id),
                role: Role::User,
                parts: 1,
                summary: false,
            },
            chain: 0,
            tokens,
        }
    }

    #[test]
    fn what_stays_cached_is_the_prefix_before_the_first_change() {
        let ids: Vec<MessageId> = (0..4).map(|_| MessageId::new()).collect();
        let prev = PrefixSnapshot {
            blocks: std::iter::once(PrefixBlock {
                kind: BlockKind::Tools,
                chain: 0,
                tokens: 500,
            })
            .chain(ids.iter().map(|&id| message(id, 100)))
            .collect(),
            ..PrefixSnapshot::default()
        };
        assert_eq!(kept_before(&prev, |id| id == ids[2]), 700);
        assert_eq!(uncached_after(1_000, Some(&prev), |id| id == ids[2]), 300);
        // An inclusion lands before every block newer than it: with ids[1]
        // coming back, the blocks from ids[2] on change.
        let back = ids[1];
        assert_eq!(kept_before(&prev, |id| id > back), 700);
        assert_eq!(uncached_after(1_000, None, |_| true), 1_000);
        assert_eq!(kept_before(&prev, |_| false), 900);
    }
}
