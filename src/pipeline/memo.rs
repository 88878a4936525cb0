//! [`CutMemo`]: the token counts of truncated copies, remembered from one
//! preparation to the next by the caller that owns the session.
//!
//! A truncated copy is a pure function of its message and of the cut, so its
//! count is keyed by (message id, [`Cut`]) under one tokenizer. The reduce
//! stage's copies are kept too (shared, `Arc<str>`), along with the messages
//! that turned out not to be truncatable, so a warm preparation neither
//! tokenises nor cuts again. The memo only
//! answers for messages whose content never changes under their id (complete
//! ones; strata stores rewrites as new rows, the invariant
//! [`TokenCache`](crate::tokens::TokenCache) relies on too); a message still
//! `streaming` is never remembered. Values are exactly what
//! [`message_tokens`] gives for the copy, so a preparation with a warm memo
//! is identical to one without.

use crate::domain::{Message, MessageId, MessageStatus};
use crate::tokens::{TokenCounter, message_tokens};
use std::collections::HashMap;
use std::sync::Arc;

/// A cut copy and its tokens.
type CutCopy = Option<(Arc<str>, u32)>;

/// Which copy of a message was counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Cut {
    /// A middle cut keeping `head` and `tail` bytes of the message's text;
    /// `of_reduced` when that text was the reduce cut rather than the stored
    /// content.
    Middle {
        head: usize,
        tail: usize,
        of_reduced: bool,
    },
}

/// Counts of truncated copies per (message, cut), for one tokenizer.
///
/// Owned by whoever prepares requests for a session again and again (the
/// conversation core); pass the same memo to every
/// [`prepare_with`](super::prepare_with) call. Memory: one entry per
/// truncated message and cut, a few dozen bytes each, plus the reduce
/// stage's copy of each message it truncated (about 6 KB for a long tool
/// result). A memo filled under another tokenizer is emptied on first use
/// with a new one.
#[derive(Clone, Debug, Default)]
pub struct CutMemo {
    tokenizer: String,
    counts: HashMap<(MessageId, Cut), u32>,
    /// The reduce stage's copy and its count; `None` when the cut leaves the
    /// message as it is.
    reduced: HashMap<MessageId, Option<(Arc<str>, u32)>>,
    /// The copy of a message too large to send whole, per room it was cut
    /// to fit ([`super::oversize`]); `None` when no cut fits.
    oversized: HashMap<MessageId, (u32, CutCopy)>,
}

impl CutMemo {
    /// An empty memo.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of remembered entries (counts of cuts, and messages the
    /// reduce stage looked at).
    #[must_use]
    pub fn len(&self) -> usize {
        self.counts.len() + self.reduced.len() + self.oversized.len()
    }

    /// Whether nothing is remembered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets everything about messages `keep` rejects (for example the
    /// messages archived by a compaction).
    pub fn retain(&mut self, mut keep: impl FnMut(MessageId) -> bool) {
        self.counts.retain(|(id, _), _| keep(*id));
        self.reduced.retain(|id, _| keep(*id));
        self.oversized.retain(|id, _| keep(*id));
    }

    /// Empties the memo when it holds counts of another tokenizer.
    pub(crate) fn use_tokenizer(&mut self, tokenizer: &str) {
        if self.tokenizer != tokenizer {
            self.counts.clear();
            self.reduced.clear();
            self.oversized.clear();
            tokenizer.clone_into(&mut self.tokenizer);
        }
    }

    /// The reduce stage's copy of `message` (`cut` of its content) and the
    /// copy's tokens, or `None` when `cut` leaves it as it is: remembered,
    /// or made, counted with [`message_tokens`] and remembered unless the
    /// message is still streaming.
    pub(crate) fn reduced(
        &mut self,
        counter: &dyn TokenCounter,
        message: &Message,
        cut: impl FnOnce(&str) -> Option<String>,
    ) -> Option<(Arc<str>, u32)> {
        if let Some(hit) = self.reduced.get(&message.id) {
            return hit.clone();
        }
        let made = cut(&message.content).map(|copy| {
            let n = message_tokens(counter, &with_content(message, &copy));
            (Arc::<str>::from(copy), n)
        });
        if message.status != MessageStatus::Streaming {
            self.reduced.insert(message.id, made.clone());
        }
        made
    }

    /// The copy of `message` (`got` tokens whole) cut in the middle to
    /// about nine tenths of `room` tokens, and its tokens: remembered for
    /// this room, or made and remembered unless the message is still
    /// streaming. How much is kept follows from the message's own bytes per
    /// token (its length over `got`, its stored count), never from trial
    /// counts, so the copy is the same bytes in every process and on every
    /// turn whatever the counter has learned meanwhile: the provider's
    /// cached prefix holds. `None` when nothing would be cut.
    pub(crate) fn oversized(
        &mut self,
        counter: &dyn TokenCounter,
        message: &Message,
        got: u32,
        room: u32,
    ) -> Option<(Arc<str>, u32)> {
        if let Some((r, hit)) = self.oversized.get(&message.id)
            && *r == room
        {
            return hit.clone();
        }
        let bytes = message.content.len() as u64;
        let keep =
            usize::try_from(bytes * u64::from(room) * 9 / 10 / u64::from(got.max(1))).unwrap_or(usize::MAX);
        let (head, tail) = (keep * 2 / 3, keep / 3);
        let made = super::truncate::cut_middle(&message.content, head, tail, "message").map(|copy| {
            let cut = Cut::Middle {
                head,
                tail,
                of_reduced: false,
            };
            let n = self.count(counter, message, cut, &copy);
            (Arc::<str>::from(copy), n)
        });
        if message.status != MessageStatus::Streaming {
            self.oversized.insert(message.id, (room, made.clone()));
        }
        made
    }

    /// Tokens of `message` with its content replaced by `copy`, the `cut`
    /// copy: remembered, or counted with [`message_tokens`] and remembered
    /// unless the message is still streaming.
    pub(crate) fn count(
        &mut self,
        counter: &dyn TokenCounter,
        message: &Message,
        cut: Cut,
        copy: &str,
    ) -> u32 {
        let key = (message.id, cut);
        if let Some(&n) = self.counts.get(&key) {
            return n;
        }
        let n = message_tokens(counter, &with_content(message, copy));
        if message.status != MessageStatus::Streaming {
            self.counts.insert(key, n);
        }
        n
    }
}

/// A copy of `m` with `content`, for counting with [`message_tokens`].
fn with_content(m: &Message, content: &str) -> Message {
    Message {
        id: m.id,
        session_id: m.session_id,
        seq: m.seq,
        role: m.role,
        content: content.to_owned(),
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        pinned: m.pinned,
        excluded: m.excluded,
        ephemeral_ttl: m.ephemeral_ttl,
        kind: m.kind,
        archived_by: m.archived_by,
        status: m.status,
        interruption: m.interruption,
        error: None,
        created_at: m.created_at,
        tokens: None,
        tool: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Role, SessionId};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// One token per byte, counting its calls.
    struct Bytes(AtomicUsize);
    impl TokenCounter for Bytes {
        fn id(&self) -> &str {
            "bytes"
        }
        fn exact(&self) -> bool {
            true
        }
        fn count(&self, text: &str) -> usize {
            self.0.fetch_add(1, Ordering::Relaxed);
            text.len()
        }
    }

    #[test]
    fn a_cut_is_counted_once_and_equals_a_direct_count() {
        let counter = Bytes(AtomicUsize::new(0));
        let m = Message::new(SessionId::new(), Role::Tool, "long original", 0);
        let mut memo = CutMemo::new();
        memo.use_tokenizer("bytes");
        let direct = message_tokens(&counter, &with_content(&m, "cut"));
        let calls = counter.0.load(Ordering::Relaxed);
        let cut = |_: &str| Some("cut".to_owned());
        let (copy, n) = memo.reduced(&counter, &m, cut).unwrap();
        assert_eq!((&*copy, n), ("cut", direct));
        let after_first = counter.0.load(Ordering::Relaxed);
        assert!(after_first > calls);
        let again = memo.reduced(&counter, &m, |_| panic!("cut again"));
        assert_eq!(again, Some((copy, direct)));
        assert_eq!(counter.0.load(Ordering::Relaxed), after_first);
        let middle = Cut::Middle {
            head: 1,
            tail: 1,
            of_reduced: false,
        };
        assert_eq!(memo.count(&counter, &m, middle, "l[..]l"), direct + 3);
        assert_eq!(memo.count(&counter, &m, middle, "other"), direct + 3);
        assert_eq!(memo.len(), 2);
        memo.retain(|id| id != m.id);
        assert!(memo.is_empty());
    }

    #[test]
    fn streaming_messages_and_other_tokenizers_are_not_answered_from_memory() {
        let counter = Bytes(AtomicUsize::new(0));
        let mut m = Message::new(SessionId::new(), Role::Assistant, "partial", 0);
        m.status = MessageStatus::Streaming;
        let mut memo = CutMemo::new();
        memo.use_tokenizer("bytes");
        memo.reduced(&counter, &m, |_| None);
        assert!(memo.is_empty());
        m.status = MessageStatus::Complete;
        memo.reduced(&counter, &m, |_| None);
        assert_eq!(memo.len(), 1, "an uncuttable message is remembered too");
        memo.use_tokenizer("bytes");
        assert_eq!(memo.len(), 1);
        memo.use_tokenizer("o200k_base");
        assert!(memo.is_empty());
    }
}
