#![allow(clippy::unwrap_used, clippy::expect_used)]
//! strata's counts (`TiktokenCounter`, counted with `bpe-openai`) equal
//! Python tiktoken's on a fixed fixture set, in both encodings.
//!
//! The REFERENCE values came from Python tiktoken 0.14.0
//! (`len(enc.encode_ordinary(text))`), printed by
//! `tests/tools/tiktoken_reference.py` (see its header for how to run it).
//! Regenerate them with that script whenever a fixture changes.

use crate::support::mixed_text;

use mixed_text::mixed_text;
use serde::Deserialize;
use strata::tokens::{Encoding, TiktokenCounter, TokenCounter};

/// (fixture name, o200k_base, cl100k_base), from Python tiktoken 0.14.0.
const REFERENCE: &[(&str, usize, usize)] = &[
    ("empty", 0, 0),
    ("hello_world", 2, 2),
    ("sentence", 10, 10),
    ("contractions", 14, 19),
    ("caps_contractions", 15, 14),
    ("numbers", 36, 35),
    ("url", 18, 18),
    ("special_token_text", 23, 22),
    ("json", 24, 24),
    ("cjk_chinese", 14, 16),
    ("cjk_japanese", 24, 32),
    ("cjk_korean", 9, 14),
    ("cjk_mixed_48", 27, 43),
    ("emoji_zwj_family", 11, 18),
    ("emoji_flags", 20, 30),
    ("emoji_skin_tones", 18, 30),
    ("emoji_mixed", 28, 37),
    ("spaces_1", 1, 1),
    ("spaces_2", 1, 1),
    ("spaces_17", 1, 1),
    ("spaces_1000", 9, 9),
    ("tabs_8", 1, 1),
    ("newlines_1", 1, 1),
    ("newlines_3", 1, 1),
    ("newlines_100", 7, 4),
    ("crlf_run", 3, 3),
    ("mixed_ws", 7, 7),
    ("trailing_ws", 2, 2),
    ("leading_ws", 2, 2),
    ("indent_code", 14, 14),
    ("nbsp", 7, 8),
    ("combining", 26, 29),
    ("rtl", 7, 21),
    ("devanagari", 10, 27),
    ("file_english", 173, 179),
    ("file_rust", 310, 303),
    ("file_python", 268, 268),
    ("file_cjk", 156, 224),
    ("file_emoji", 156, 209),
    ("file_whitespace", 46, 44),
    ("mixed_100k", 28518, 31017),
];

#[derive(Deserialize)]
struct Case {
    name: String,
    text: String,
}

/// Every fixture, in the order the script prints them.
fn fixtures() -> Vec<(String, String)> {
    let cases: Vec<Case> = serde_json::from_str(include_str!("../fixtures/tokens/cases.json")).unwrap();
    let mut out: Vec<(String, String)> = cases.into_iter().map(|c| (c.name, c.text)).collect();
    let files = [
        ("english", include_str!("../fixtures/tokens/english.txt")),
        ("rust", include_str!("../fixtures/tokens/rust.txt")),
        ("python", include_str!("../fixtures/tokens/python.txt")),
        ("cjk", include_str!("../fixtures/tokens/cjk.txt")),
        ("emoji", include_str!("../fixtures/tokens/emoji.txt")),
        ("whitespace", include_str!("../fixtures/tokens/whitespace.txt")),
    ];
    for (name, text) in files {
        out.push((format!("file_{name}"), text.to_owned()));
    }
    out.push(("mixed_100k".to_owned(), mixed_text(100_000)));
    out
}

#[test]
fn every_fixture_has_a_reference_value() {
    let names: Vec<String> = fixtures().into_iter().map(|(n, _)| n).collect();
    let reference: Vec<&str> = REFERENCE.iter().map(|r| r.0).collect();
    assert_eq!(names, reference);
}

#[test]
fn counts_match_python_tiktoken_in_both_encodings() {
    let o200k = TiktokenCounter::new(Encoding::O200kBase, true);
    let cl100k = TiktokenCounter::new(Encoding::Cl100kBase, true);
    let mut mismatches = Vec::new();
    for ((name, text), (_, want_o200k, want_cl100k)) in fixtures().iter().zip(REFERENCE) {
        let got = (o200k.count(text), cl100k.count(text));
        if got != (*want_o200k, *want_cl100k) {
            mismatches.push(format!(
                "{name}: got {got:?}, python tiktoken {:?}",
                (want_o200k, want_cl100k)
            ));
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

#[test]
fn mixed_text_is_deterministic_and_at_least_the_target_size() {
    let a = mixed_text(100_000);
    assert!(a.len() >= 100_000);
    assert!(a.len() < 100_000 + mixed_text::PARAGRAPH.len() + 16);
    assert_eq!(a, mixed_text(100_000));
    assert!(a.starts_with("[0] Release notes"));
}
