//! Whole-word keyword search for the extractive summariser: where, in one
//! text, its error, decision and completion patterns match.
//!
//! The patterns are alternations of literal words between `\b`s under
//! `(?i)`. On an ASCII text they match exactly where one of the literals
//! occurs, in any ASCII case, with no ASCII word char (`[A-Za-z0-9_]`) right
//! before or after it: a Unicode `\b` and Unicode case folding only differ
//! from their ASCII forms on non-ASCII chars. So ASCII texts are searched
//! with one Aho-Corasick pass for all three lists (the regex engine runs the
//! same patterns several times slower); other texts go to the regexes.
//!
//! Pure; called by [`super::extractive`] only.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use std::sync::LazyLock;

/// The lists: what makes a line an error fact, a sentence a decision or a
/// statement of finished work. The same words as the regexes of
/// [`super::extractive`] (`error(?:\[\w+\])?` matches wherever `error` does).
pub(crate) const LISTS: [&[&str]; 3] = [
    &[
        "error",
        "failed",
        "failure",
        "panicked",
        "exception",
        "traceback",
        "fatal",
        "segmentation fault",
        "command not found",
        "permission denied",
        "no such file or directory",
        "err!",
    ],
    &[
        "decided",
        "decide to",
        "we will",
        "we'll",
        "let's",
        "let us",
        "chose",
        "choose to",
        "going with",
        "settled on",
        "agreed",
        "decision",
    ],
    &[
        "fixed",
        "added",
        "implemented",
        "done",
        "completed",
        "created",
        "updated",
        "removed",
        "renamed",
        "now passes",
        "all tests pass",
        "merged",
        "finished",
    ],
];

struct Searcher {
    ac: AhoCorasick,
    /// Per pattern id: the index of its list.
    list: Vec<usize>,
}

static SEARCHER: LazyLock<Option<Searcher>> = LazyLock::new(|| {
    let words: Vec<&str> = LISTS.iter().flat_map(|l| l.iter().copied()).collect();
    let list = LISTS
        .iter()
        .enumerate()
        .flat_map(|(i, l)| std::iter::repeat_n(i, l.len()))
        .collect();
    let ac = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(words)
        .ok()?;
    Some(Searcher { ac, list })
});

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether `bytes[s..e]` is `Error` or `Exception` ending a CamelCase name
/// (`TypeError`, `IOError`, `NullPointerException`): the regex's
/// `[A-Za-z0-9](?:Error|Exception)\b`.
fn camel_case_error(bytes: &[u8], s: usize, e: usize) -> bool {
    s > 0 && bytes[s - 1].is_ascii_alphanumeric() && matches!(&bytes[s..e], b"Error" | b"Exception")
}

/// Start offsets of whole-word matches of each list in `text`, sorted;
/// `None` when `text` is not ASCII (use the regexes then).
pub(crate) fn keyword_starts(text: &str) -> Option<[Vec<usize>; 3]> {
    if !text.is_ascii() {
        return None;
    }
    let searcher = SEARCHER.as_ref()?;
    let bytes = text.as_bytes();
    let mut out: [Vec<usize>; 3] = Default::default();
    for m in searcher.ac.find_overlapping_iter(text) {
        let (s, e) = (m.start(), m.end());
        let before = s == 0 || !is_word(bytes[s - 1]);
        let after = e == bytes.len() || !is_word(bytes[e]);
        let list = searcher.list[m.pattern().as_usize()];
        if after && (before || (list == 0 && camel_case_error(bytes, s, e))) {
            out[list].push(s);
        }
    }
    for v in &mut out {
        v.sort_unstable();
        v.dedup();
    }
    Some(out)
}
