//! A [`TokenCounter`] for a server's own tokenizer (llama.cpp's `POST
//! /tokenize`), which cannot be asked from a synchronous count: the runtime
//! counts the texts a request will hold ahead of need, in batches, and
//! [`ServerCounter::fill`]s the table; a count answers from it. A text the
//! table does not hold is answered by the `o200k_base` estimate, and the
//! counter says so ([`TokenCounter::estimates`], [`TokenCounter::exact`]),
//! so such a count is neither cached as exact nor shown as exact.
//!
//! Pure: no I/O, the table is filled by the caller.

use super::counter::{Encoding, TiktokenCounter, TokenCounter};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

/// Counts from a server's tokenizer, fetched ahead; the `o200k_base`
/// estimate for anything else.
#[derive(Debug)]
pub struct ServerCounter {
    id: String,
    estimate: TiktokenCounter,
    /// Tokens of each text the server counted.
    table: RwLock<HashMap<String, u32>>,
    /// Texts answered by the estimate so far.
    estimates: AtomicU64,
    /// `estimates` when the latest complete batch was filled.
    mark: AtomicU64,
    /// Whether a complete batch was filled once.
    filled: AtomicBool,
    /// Texts estimated since [`ServerCounter::take_missed`] last ran (at
    /// most [`MISSED_TEXTS`] of them, [`MISSED_BYTES`] in all), for the
    /// caller to count next.
    missed: Mutex<Missed>,
}

/// Most texts remembered as missed between two batches.
pub const MISSED_TEXTS: usize = 256;
/// Most bytes of missed texts remembered between two batches.
pub const MISSED_BYTES: usize = 1 << 20;

#[derive(Debug, Default)]
struct Missed {
    texts: Vec<String>,
    bytes: usize,
}

impl ServerCounter {
    /// A counter named `id` (`llama.cpp:<model>`, stored with its counts)
    /// with an empty table: every count is an estimate until a batch is
    /// filled.
    #[must_use]
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            estimate: TiktokenCounter::new(Encoding::O200kBase, false),
            table: RwLock::new(HashMap::new()),
            estimates: AtomicU64::new(0),
            mark: AtomicU64::new(0),
            filled: AtomicBool::new(false),
            missed: Mutex::new(Missed::default()),
        }
    }

    fn remember_missed(&self, text: &str) {
        let mut missed = self
            .missed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if missed.texts.len() < MISSED_TEXTS && missed.bytes + text.len() <= MISSED_BYTES {
            missed.bytes += text.len();
            missed.texts.push(text.to_owned());
        }
    }

    /// The texts estimated since the last call (some of them, when there
    /// were many: see [`MISSED_TEXTS`]), each once, oldest first; the list
    /// starts again empty. A caller that ran a computation to learn what
    /// it counts (the pipeline's own texts: notes, separators, cut copies)
    /// counts these next.
    pub fn take_missed(&self) -> Vec<String> {
        let missed = std::mem::take(
            &mut *self
                .missed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let mut seen = std::collections::HashSet::new();
        missed
            .texts
            .into_iter()
            .filter(|t| seen.insert(t.clone()))
            .collect()
    }

    fn known(&self, text: &str) -> Option<u32> {
        let table = self
            .table
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        table.get(text).copied()
    }

    /// The texts of `texts` the table does not hold, each once, in the
    /// order given; empty texts (0 tokens, never asked) are left out.
    #[must_use]
    pub fn missing<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        let table = self
            .table
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut seen = std::collections::HashSet::new();
        texts
            .into_iter()
            .filter(|t| !t.is_empty() && !table.contains_key(*t) && seen.insert(*t))
            .collect()
    }

    /// Adds the server's counts (`(text, tokens)`). With `complete` (every
    /// text the next request needs was counted), counts are exact again
    /// from now on until a text is estimated.
    pub fn fill(&self, counted: impl IntoIterator<Item = (String, u32)>, complete: bool) {
        {
            let mut table = self
                .table
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            table.extend(counted);
        }
        if complete {
            self.mark
                .store(self.estimates.load(Ordering::SeqCst), Ordering::SeqCst);
            self.filled.store(true, Ordering::SeqCst);
        }
    }

    /// Number of texts whose server count is held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.table
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Whether no server count is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl TokenCounter for ServerCounter {
    fn id(&self) -> &str {
        &self.id
    }

    /// True once a complete batch was filled and no text was estimated
    /// since.
    fn exact(&self) -> bool {
        self.filled.load(Ordering::SeqCst)
            && self.estimates.load(Ordering::SeqCst) == self.mark.load(Ordering::SeqCst)
    }

    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        if let Some(n) = self.known(text) {
            return n as usize;
        }
        self.estimates.fetch_add(1, Ordering::SeqCst);
        self.remember_missed(text);
        self.estimate.count(text)
    }

    /// The server's count when held (a lookup), else the estimate's bound
    /// (what [`count`](TokenCounter::count) would answer is the estimate).
    fn at_least(&self, text: &str) -> usize {
        match self.known(text) {
            Some(n) => n as usize,
            None => self.estimate.at_least(text),
        }
    }

    fn estimates(&self) -> u64 {
        self.estimates.load(Ordering::SeqCst)
    }

    fn recounts_stored(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_texts_are_exact_and_others_are_estimated_and_said_so() {
        let c = ServerCounter::new("llama.cpp:m");
        assert!(!c.exact(), "nothing filled yet");
        c.fill([("hello world".to_owned(), 7)], true);
        assert!(c.exact());
        assert_eq!(c.count("hello world"), 7);
        assert_eq!(c.at_least("hello world"), 7);
        assert_eq!(c.count(""), 0);
        assert_eq!(c.estimates(), 0);
        assert!(c.exact());
        // Not held: the o200k_base estimate, counted as one estimate.
        assert_eq!(c.count("good morning"), 2);
        assert_eq!(c.estimates(), 1);
        assert!(!c.exact());
        // A complete batch makes it exact again.
        c.fill([("good morning".to_owned(), 3)], true);
        assert!(c.exact());
        assert_eq!(c.count("good morning"), 3);
        // An incomplete one does not.
        let _ = c.count("unheld");
        c.fill([("other".to_owned(), 1)], false);
        assert!(!c.exact());
    }

    #[test]
    fn estimated_texts_are_handed_over_once_each() {
        let c = ServerCounter::new("llama.cpp:m");
        c.fill([("held".to_owned(), 1)], true);
        for t in ["a b", "held", "c", "a b"] {
            let _ = c.count(t);
        }
        assert_eq!(c.take_missed(), ["a b", "c"]);
        assert!(c.take_missed().is_empty(), "handed over once");
        let long = "x".repeat(MISSED_BYTES);
        let _ = c.count(&long);
        let _ = c.count("y");
        assert_eq!(
            c.take_missed(),
            std::slice::from_ref(&long),
            "the byte cap leaves the rest out"
        );
        let _ = c.count("y");
        let _ = c.count(&long);
        let _ = c.count("z");
        assert_eq!(c.take_missed(), ["y", "z"]);
    }

    #[test]
    fn missing_texts_are_each_listed_once_without_empty_or_held_ones() {
        let c = ServerCounter::new("llama.cpp:m");
        c.fill([("a".to_owned(), 1)], true);
        assert_eq!(c.missing(["a", "b", "", "b", "c"]), ["b", "c"]);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn the_lower_bound_never_exceeds_the_count() {
        let c = ServerCounter::new("llama.cpp:m");
        c.fill([("x y z".to_owned(), 9)], true);
        for t in ["x y z", "a b c d", "", "word"] {
            assert!(c.at_least(t) <= c.count(t), "{t:?}");
        }
    }
}
