//! Per-message token counts, computed once and remembered.
//!
//! A count is keyed by (message id, tokenizer id) and is the value of
//! [`message_tokens`] (framing included). Counts already stored with a
//! message (`Message.tokens`, loaded from its row) are honoured when their
//! tokenizer matches, so a history loaded from the store is not tokenised
//! again; counts made here are reported back so the caller can persist them.
//!
//! Invariant relied on: a message id's content never changes once complete
//! (strata stores rewrites as new rows). A message still `streaming` is
//! counted on every call and never cached. Code that counts an edited copy
//! of a message (the pipeline's truncation) must call [`message_tokens`]
//! directly, not this cache. A count the counter had to estimate
//! ([`TokenCounter::estimates`] grew while it was made) is returned but
//! neither cached nor reported for storing.

use super::counter::TokenCounter;
use super::overhead::message_tokens;
use crate::domain::{Message, MessageId, MessageStatus, TokenCount};
use std::collections::HashMap;

/// In-memory token counts per tokenizer and message.
#[derive(Clone, Debug, Default)]
pub struct TokenCache {
    by_tokenizer: HashMap<String, HashMap<MessageId, u32>>,
}

/// The counts of a history, as returned by [`TokenCache::count_history`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryCounts {
    /// Tokens of each message, in the order given (framing included).
    pub tokens: Vec<u32>,
    /// Sum of `tokens`.
    pub total: u64,
    /// Messages tokenised by this call, with the count to store in their row
    /// (`messages.tokens`); empty when everything came from a cache.
    pub newly_counted: Vec<(MessageId, TokenCount)>,
}

impl TokenCache {
    /// An empty cache.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached count of `id` under `tokenizer`, if any.
    #[must_use]
    pub fn get(&self, tokenizer: &str, id: MessageId) -> Option<u32> {
        self.by_tokenizer.get(tokenizer)?.get(&id).copied()
    }

    /// Remembers a count (for example one loaded from the store).
    pub fn insert(&mut self, tokenizer: &str, id: MessageId, tokens: u32) {
        if let Some(map) = self.by_tokenizer.get_mut(tokenizer) {
            map.insert(id, tokens);
        } else {
            self.by_tokenizer
                .insert(tokenizer.to_owned(), HashMap::from([(id, tokens)]));
        }
    }

    /// Forgets every count of `id` (all tokenizers).
    pub fn forget(&mut self, id: MessageId) {
        for map in self.by_tokenizer.values_mut() {
            map.remove(&id);
        }
    }

    /// Number of cached (message, tokenizer) counts.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_tokenizer.values().map(HashMap::len).sum()
    }

    /// Whether nothing is cached.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The count of `message` this cache or its row holds under
    /// `tokenizer` (a stored one is remembered here), if any.
    fn known(&mut self, tokenizer: &str, message: &Message) -> Option<u32> {
        if message.status == MessageStatus::Streaming {
            return None;
        }
        if let Some(n) = self.get(tokenizer, message.id) {
            return Some(n);
        }
        let stored = message.tokens.as_ref().filter(|t| t.tokenizer == tokenizer)?;
        self.insert(tokenizer, message.id, stored.tokens);
        Some(stored.tokens)
    }

    /// Counts `message` and says whether the count is the tokenizer's own
    /// (not an estimate: [`TokenCounter::estimates`] did not grow).
    fn measure(counter: &dyn TokenCounter, message: &Message) -> (u32, bool) {
        let estimated = counter.estimates();
        let n = message_tokens(counter, message);
        (n, counter.estimates() == estimated)
    }

    /// Remembers a count just made, unless `message` is still streaming or
    /// the count is an estimate; `true` when it was remembered (the caller
    /// should persist it).
    fn remember(&mut self, tokenizer: &str, message: &Message, (n, own): (u32, bool)) -> bool {
        if message.status == MessageStatus::Streaming || !own {
            // A streaming message grows; an estimate is not the
            // tokenizer's own count: neither is remembered under its id.
            return false;
        }
        self.insert(tokenizer, message.id, n);
        true
    }

    /// The count of one message and whether it was tokenised just now
    /// (`true`: the caller should persist it). Looks in this cache, then at
    /// `message.tokens`, then counts with [`message_tokens`].
    pub fn message_tokens(&mut self, counter: &dyn TokenCounter, message: &Message) -> (u32, bool) {
        let tokenizer = counter.id();
        if let Some(n) = self.known(tokenizer, message) {
            return (n, false);
        }
        let measured = Self::measure(counter, message);
        (measured.0, self.remember(tokenizer, message, measured))
    }

    /// Counts a whole history, tokenising only messages with no count under
    /// `counter`'s tokenizer in this cache or in their row; a large number
    /// of them is counted on every core ([`super::parallel::map_each`]).
    pub fn count_history(&mut self, counter: &dyn TokenCounter, messages: &[Message]) -> HistoryCounts {
        let tokenizer = counter.id();
        let known: Vec<Option<u32>> = messages.iter().map(|m| self.known(tokenizer, m)).collect();
        let todo: Vec<&Message> = messages
            .iter()
            .zip(&known)
            .filter_map(|(m, k)| k.is_none().then_some(m))
            .collect();
        let mut measured =
            super::parallel::map_each(&todo, |m| text_bytes(m), |m| Self::measure(counter, m)).into_iter();
        let mut out = HistoryCounts {
            tokens: Vec::with_capacity(messages.len()),
            ..HistoryCounts::default()
        };
        for (message, known) in messages.iter().zip(known) {
            let n = match known {
                Some(n) => n,
                None => {
                    // One measured count per message not known, in order.
                    let m = measured.next().unwrap_or_else(|| Self::measure(counter, message));
                    if self.remember(tokenizer, message, m) {
                        out.newly_counted.push((
                            message.id,
                            TokenCount {
                                tokenizer: tokenizer.to_owned(),
                                tokens: m.0,
                            },
                        ));
                    }
                    m.0
                }
            };
            out.tokens.push(n);
            out.total += u64::from(n);
        }
        out
    }
}

/// Bytes [`message_tokens`] tokenises of `message` (its content and tool
/// calls), the weight of counting it.
#[must_use]
pub fn text_bytes(message: &Message) -> usize {
    message.content.len()
        + message
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Role, SessionId};
    use crate::tokens::{Encoding, TiktokenCounter};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A counter that records how many texts it tokenised.
    struct Counting {
        inner: TiktokenCounter,
        calls: AtomicUsize,
    }

    impl Counting {
        fn new(encoding: Encoding) -> Self {
            Self {
                inner: TiktokenCounter::new(encoding, true),
                calls: AtomicUsize::new(0),
            }
        }
        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    impl TokenCounter for Counting {
        fn id(&self) -> &str {
            self.inner.id()
        }
        fn exact(&self) -> bool {
            true
        }
        fn count(&self, text: &str) -> usize {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.count(text)
        }
    }

    fn history(n: usize) -> Vec<Message> {
        let session = SessionId::new();
        (0..n)
            .map(|i| {
                let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
                Message::new(session, role, format!("message number {i}"), 0)
            })
            .collect()
    }

    #[test]
    fn second_pass_over_a_history_tokenises_nothing() {
        let counter = Counting::new(Encoding::O200kBase);
        let mut cache = TokenCache::new();
        let msgs = history(50);
        let first = cache.count_history(&counter, &msgs);
        assert!(counter.calls() > 0);
        assert_eq!(first.newly_counted.len(), 50);
        let calls = counter.calls();
        let second = cache.count_history(&counter, &msgs);
        assert_eq!(counter.calls(), calls);
        assert_eq!(second.tokens, first.tokens);
        assert_eq!(second.total, first.total);
        assert!(second.newly_counted.is_empty());
    }

    #[test]
    fn stored_counts_with_the_same_tokenizer_are_honoured() {
        let counter = Counting::new(Encoding::O200kBase);
        let mut msgs = history(3);
        for m in &mut msgs {
            m.tokens = Some(TokenCount {
                tokenizer: "o200k_base".into(),
                tokens: 42,
            });
        }
        let mut cache = TokenCache::new();
        let counts = cache.count_history(&counter, &msgs);
        assert_eq!(counter.calls(), 0);
        assert_eq!(counts.tokens, [42, 42, 42]);
        assert_eq!(counts.total, 126);
        assert!(counts.newly_counted.is_empty());
    }

    #[test]
    fn stored_counts_of_another_tokenizer_are_recounted_and_reported() {
        let counter = Counting::new(Encoding::Cl100kBase);
        let mut msgs = history(2);
        msgs[0].tokens = Some(TokenCount {
            tokenizer: "o200k_base".into(),
            tokens: 42,
        });
        let counts = TokenCache::new().count_history(&counter, &msgs);
        let want = message_tokens(&counter.inner, &msgs[0]);
        assert_eq!(counts.tokens[0], want);
        let ids: Vec<MessageId> = counts.newly_counted.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [msgs[0].id, msgs[1].id]);
        assert_eq!(counts.newly_counted[0].1.tokenizer, "cl100k_base");
    }

    #[test]
    fn only_new_messages_are_counted_after_a_turn() {
        let counter = Counting::new(Encoding::O200kBase);
        let mut cache = TokenCache::new();
        let mut msgs = history(10);
        cache.count_history(&counter, &msgs);
        msgs.extend(history(2));
        let counts = cache.count_history(&counter, &msgs);
        let ids: Vec<MessageId> = counts.newly_counted.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [msgs[10].id, msgs[11].id]);
    }

    #[test]
    fn tokenizers_are_kept_apart() {
        let o200k = TiktokenCounter::new(Encoding::O200kBase, true);
        let cl100k = TiktokenCounter::new(Encoding::Cl100kBase, true);
        let session = SessionId::new();
        let m = Message::new(session, Role::User, "한국어 설명도 포함됩니다 🚀", 0);
        let mut cache = TokenCache::new();
        let (a, _) = cache.message_tokens(&o200k, &m);
        let (b, fresh) = cache.message_tokens(&cl100k, &m);
        assert!(fresh);
        assert_ne!(a, b);
        assert_eq!(cache.get("o200k_base", m.id), Some(a));
        assert_eq!(cache.get("cl100k_base", m.id), Some(b));
        assert_eq!(cache.len(), 2);
        cache.forget(m.id);
        assert!(cache.is_empty());
    }

    #[test]
    fn a_count_the_counter_estimated_is_neither_cached_nor_reported() {
        let counter = crate::tokens::ServerCounter::new("llama.cpp:m");
        let session = SessionId::new();
        let held = Message::new(session, Role::User, "held", 0);
        let other = Message::new(session, Role::User, "not held", 0);
        counter.fill([("user".to_owned(), 1), ("held".to_owned(), 5)], true);
        let mut cache = TokenCache::new();
        let counts = cache.count_history(&counter, &[held.clone(), other.clone()]);
        assert_eq!(counts.tokens[0], 3 + 1 + 5);
        let ids: Vec<MessageId> = counts.newly_counted.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [held.id], "only the server's own count is stored");
        assert_eq!(cache.get("llama.cpp:m", other.id), None);
        // Once the server counted it, it is cached like any other.
        counter.fill([("not held".to_owned(), 7)], true);
        let (n, fresh) = cache.message_tokens(&counter, &other);
        assert_eq!((n, fresh), (3 + 1 + 7, true));
    }

    #[test]
    fn streaming_messages_are_never_cached() {
        let counter = TiktokenCounter::new(Encoding::O200kBase, true);
        let mut m = Message::new(SessionId::new(), Role::Assistant, "partial", 0);
        m.status = MessageStatus::Streaming;
        let mut cache = TokenCache::new();
        let (first, fresh) = cache.message_tokens(&counter, &m);
        assert!(!fresh);
        assert!(cache.is_empty());
        m.content.push_str(" answer grows longer and longer");
        let (second, _) = cache.message_tokens(&counter, &m);
        assert!(second > first);
    }
}
