//! Turning what a user typed into an FTS5 query that cannot fail to parse.
//!
//! Every whitespace-separated term becomes a quoted FTS5 string (inner `"`
//! doubled) followed by `*`, so `foo"bar`, `AND(`, `NEAR` or `-x` are plain
//! words to look for, each matched as a prefix, all of them required.
//! Terms without a letter or digit are dropped, since the tokenizer would
//! reduce them to nothing.

/// One term of a search, and how it is matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Term {
    /// An FTS5 `MATCH` expression: the term quoted, as a word prefix.
    Fts(String),
    /// A plain substring, for text the word tokenizer cannot find inside a
    /// longer run: CJK scripts (written without spaces) and symbols such as
    /// emoji.
    Substring(String),
}

/// Whether `c` belongs to a script written without spaces between words.
fn unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x9FFF       // CJK radicals, kana, CJK unified ideographs
        | 0xAC00..=0xD7AF     // Hangul syllables
        | 0xF900..=0xFAFF     // CJK compatibility ideographs
        | 0xFF66..=0xFF9F     // half-width katakana
        | 0x20000..=0x3FFFF) // CJK extensions
}

/// The terms of `text` (empty when it holds nothing searchable: blank, or
/// ASCII punctuation only). A session matches when each term is found
/// somewhere in it (its title or any of its messages), not necessarily all
/// in one message.
///
/// `foo "bar` → `[Fts("\"foo\"*"), Fts("\"\"\"bar\"*")]`; `测试` and `🎉`
/// are substrings.
pub(crate) fn fts_terms(text: &str) -> Vec<Term> {
    text.split_whitespace()
        .filter_map(|t| {
            if t.chars()
                .any(|c| unspaced_script(c) || (!c.is_ascii() && !c.is_alphanumeric()))
            {
                Some(Term::Substring(t.to_owned()))
            } else if t.chars().any(char::is_alphanumeric) {
                Some(Term::Fts(format!("\"{}\"*", t.replace('"', "\"\""))))
            } else {
                None
            }
        })
        .collect()
}

/// All terms of `text` as one FTS5 expression (every term in the same
/// row), or `None` when nothing is searchable.
#[cfg(test)]
pub(crate) fn fts_query(text: &str) -> Option<String> {
    let terms: Vec<String> = fts_terms(text)
        .into_iter()
        .filter_map(|t| match t {
            Term::Fts(q) => Some(q),
            Term::Substring(_) => None,
        })
        .collect();
    (!terms.is_empty()).then(|| terms.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_term_is_quoted_and_prefix_matched() {
        assert_eq!(fts_query("hello world").as_deref(), Some("\"hello\"* \"world\"*"));
    }

    #[test]
    fn quotes_are_doubled_and_operators_are_words() {
        assert_eq!(fts_query("foo\"bar").as_deref(), Some("\"foo\"\"bar\"*"));
        assert_eq!(fts_query("AND(").as_deref(), Some("\"AND(\"*"));
    }

    #[test]
    fn nothing_searchable_gives_none() {
        assert_eq!(fts_query(""), None);
        assert_eq!(fts_query("  \t "), None);
        assert_eq!(fts_query("( ) \" *"), None);
    }

    #[test]
    fn every_query_parses_in_fts5() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5(x); INSERT INTO t VALUES ('foo bar');")
            .unwrap();
        for input in [
            "foo\"bar",
            "AND(",
            "NEAR(a b)",
            "a OR b",
            "-x",
            "^start",
            "x:y",
            "\"",
            "'",
            "a*b",
            "{col}",
            "日本語",
            "emoji 🎉",
            "foo\" OR \"bar",
        ] {
            if let Some(q) = fts_query(input) {
                let r: rusqlite::Result<i64> =
                    conn.query_row("SELECT count(*) FROM t WHERE t MATCH ?1", [&q], |r| r.get(0));
                assert!(r.is_ok(), "{input:?} gave {q:?}: {r:?}");
            }
        }
    }
}
