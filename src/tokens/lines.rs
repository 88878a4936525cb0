//! Counting a text line by line when the tokenizer allows it: for
//! tiktoken's encodings the count of a text is the sum of the counts of its
//! parts cut after a `\n` that is followed by a char other than whitespace
//! and `/` ([`TokenCounter::splits_at_line_starts`]). A caller that has
//! already counted most of a text's lines (the extractive summary's items)
//! gets the whole count for the price of the lines it has not.

use super::counter::TokenCounter;

/// The parts of `text` cut after every `\n` whose next char is neither
/// whitespace nor `/`; they join back to `text`.
pub fn line_parts(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut cuts = memchr::memchr_iter(b'\n', bytes)
        .filter(move |&i| {
            text[i + 1..]
                .chars()
                .next()
                .is_some_and(|c| !c.is_whitespace() && c != '/')
        })
        .map(|i| i + 1)
        .chain(std::iter::once(text.len()));
    std::iter::from_fn(move || {
        let end = cuts.next()?;
        let part = &text[start..end];
        start = end;
        Some(part).filter(|p| !p.is_empty())
    })
}

/// Tokens of `text`: the sum over its [`line_parts`], each taken from
/// `known` when it has it and counted otherwise, when `counter` splits at
/// line starts; else one count of the whole text.
pub fn count_by_lines(
    counter: &dyn TokenCounter,
    text: &str,
    known: &dyn Fn(&str) -> Option<usize>,
) -> usize {
    if !counter.splits_at_line_starts() {
        return counter.count(text);
    }
    line_parts(text)
        .map(|part| known(part).unwrap_or_else(|| counter.count(part)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{Encoding, TiktokenCounter};
    use proptest::prelude::*;

    /// Pieces that stress the pre-tokenizers around line breaks.
    const PIECES: &[&str] = &[
        "\n",
        "\n",
        "\n\n",
        "\r\n",
        " ",
        "  ",
        "\t",
        "- ",
        "## ",
        "```",
        "/",
        "//",
        "word",
        "Word",
        "WORDS",
        "don't",
        "'s",
        "'LL",
        "123",
        "4567",
        ".",
        ",",
        "!?",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "\"",
        "é",
        "日本語",
        "😀",
        "\u{301}",
        "\u{a0}",
        "\u{2003}",
        "-",
        "#",
        "`",
        ":",
        "*",
        "_",
        "x.",
        "a/b",
        "\\",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3_000))]

        #[test]
        fn line_parts_add_up_to_the_whole_count(parts in prop::collection::vec(0..PIECES.len(), 0..40)) {
            let text: String = parts.iter().map(|&i| PIECES[i]).collect();
            prop_assert_eq!(line_parts(&text).collect::<String>(), text.clone());
            for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
                let c = TiktokenCounter::new(enc, true);
                prop_assert!(c.splits_at_line_starts());
                let split: usize = line_parts(&text).map(|p| c.count(p)).sum();
                prop_assert_eq!(split, c.count(&text), "{:?} {:?}", enc, text);
            }
        }
    }

    #[test]
    fn parts_are_cut_only_before_a_line_that_starts_with_text() {
        let parts: Vec<&str> = line_parts("## A\n- one\n  two\n/path\n\n- three").collect();
        assert_eq!(parts, ["## A\n", "- one\n  two\n/path\n\n", "- three"]);
        assert_eq!(line_parts("").count(), 0);
    }

    #[test]
    fn known_parts_are_not_counted_again() {
        let c = TiktokenCounter::new(Encoding::O200kBase, true);
        let text = "## Files\n- `src/lib.rs`\n- `Cargo.toml`\n";
        let whole = c.count(text);
        assert_eq!(count_by_lines(&c, text, &|_| None), whole);
        let wrong = count_by_lines(&c, text, &|p| (p == "- `Cargo.toml`\n").then_some(1_000));
        assert_eq!(wrong, whole - c.count("- `Cargo.toml`\n") + 1_000);
    }
}
