//! The [`TokenCounter`] trait and its implementation for tiktoken's
//! encodings, counted with the `bpe-openai` crate's tables (pieces seen
//! recently answered from a per-thread table: [`super::vocab`]).

use bpe_openai::Tokenizer;

/// Counts tokens of a text under one tokenizer.
///
/// `id` names the tokenizer (`o200k_base`, `cl100k_base`, or a local model's
/// own); `exact` says whether the counts match what the provider will count
/// (false when the provider uses a tokenizer we do not have, e.g. Anthropic,
/// and `o200k_base` stands in as an estimate).
pub trait TokenCounter: Send + Sync {
    /// Tokenizer id, stored next to cached counts.
    fn id(&self) -> &str;
    /// Whether counts are exact for the model in use.
    fn exact(&self) -> bool;
    /// Number of tokens of `text`, with special-token text treated as
    /// ordinary text (tiktoken's `encode_ordinary`).
    fn count(&self, text: &str) -> usize;
    /// A lower bound on [`count`](Self::count) that costs far less than
    /// counting, so a caller can turn away a text that cannot fit without
    /// tokenising it. The default, 0, bounds nothing.
    fn at_least(&self, text: &str) -> usize {
        let _ = text;
        0
    }
    /// Whether counts add up across a line start: `count(a + b) ==
    /// count(a) + count(b)` whenever `a` ends with `\n` and `b` starts with
    /// a char that is neither whitespace nor `/` (see
    /// [`count_by_lines`](super::count_by_lines)). The default, false,
    /// promises nothing.
    fn splits_at_line_starts(&self) -> bool {
        false
    }
    /// How many texts this counter has answered with an estimate so far,
    /// for a counter exact for some texts only (a server's tokenizer whose
    /// counts were fetched ahead, [`ServerCounter`](super::ServerCounter)):
    /// a count made while this grew is an estimate, not to be cached under
    /// [`id`](Self::id). Never decreases; the default, 0, suits counters
    /// that count every text themselves.
    fn estimates(&self) -> u64 {
        0
    }
    /// Whether figures another counter may have made (a frozen prompt's
    /// layer tokens) are to be counted again with this one before use:
    /// true for [`ServerCounter`](super::ServerCounter), whose counts are
    /// table lookups and whose prompt was counted before the server was.
    /// The default, false, trusts them.
    fn recounts_stored(&self) -> bool {
        false
    }
}

/// The two OpenAI encodings strata knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, o-series and later.
    O200kBase,
    /// GPT-4, GPT-3.5-turbo and the older embeddings.
    Cl100kBase,
}

impl Encoding {
    /// `o200k_base` or `cl100k_base`.
    #[must_use]
    pub fn id(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// Loads the process-wide BPE table now (it takes 0.03–0.1 s), so
    /// a later first count does not wait for it; a no-op once loaded.
    /// Callers run it on a thread of their own at start-up.
    pub fn warm(self) {
        let _ = self.bpe();
    }

    /// The encoding's tag in the per-thread table of piece counts.
    fn tag(self) -> u8 {
        match self {
            Self::O200kBase => 1,
            Self::Cl100kBase => 2,
        }
    }

    /// The process-wide BPE table: prebuilt when `bpe-openai` is compiled,
    /// deserialised once, on first use.
    fn bpe(self) -> &'static Tokenizer {
        match self {
            Self::O200kBase => bpe_openai::o200k_base(),
            Self::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
}

/// A [`TokenCounter`] for tiktoken's encodings (counted with `bpe-openai`).
/// Counts equal Python tiktoken's `len(enc.encode_ordinary(text))`: text
/// that looks like a special token (`<|endoftext|>`) is counted as ordinary
/// text, since `bpe-openai` knows no special tokens.
#[derive(Clone, Copy, Debug)]
pub struct TiktokenCounter {
    encoding: Encoding,
    exact: bool,
}

impl TiktokenCounter {
    /// A counter for `encoding`; `exact` is false when it only estimates the
    /// provider's tokenizer.
    #[must_use]
    pub fn new(encoding: Encoding, exact: bool) -> Self {
        Self { encoding, exact }
    }

    /// The encoding counted with.
    #[must_use]
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

impl TokenCounter for TiktokenCounter {
    fn id(&self) -> &str {
        self.encoding.id()
    }

    fn exact(&self) -> bool {
        self.exact
    }

    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        super::vocab::count(self.encoding.bpe(), self.encoding.tag(), text)
    }

    /// One token per run of non-whitespace: the pre-tokenizer patterns of
    /// `o200k_base` and `cl100k_base` (tiktoken's) only put whitespace at
    /// the start of a piece or in a piece of whitespace alone, so two runs
    /// never share a piece, and every piece is at least one token.
    fn at_least(&self, text: &str) -> usize {
        text.split_ascii_whitespace().count()
    }

    /// True: in both pre-tokenizer patterns a `\n` is matched by
    /// `\s*[\r\n]+`, or ends a run of punctuation through `[\r\n/]*`
    /// (`[\r\n]*` in `cl100k_base`); neither goes on into a char that is
    /// neither whitespace nor `/`, and no pattern looks behind. So a piece
    /// always ends there, and the text after it is split as if it stood
    /// alone. A property test checks both encodings.
    fn splits_at_line_starts(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_world_is_two_tokens_in_both_encodings() {
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            assert_eq!(TiktokenCounter::new(enc, true).count("hello world"), 2);
        }
    }

    #[test]
    fn the_lower_bound_never_exceeds_the_count() {
        let texts = [
            "",
            "word",
            "a b c d e f g h",
            "  leading and trailing  ",
            "don't stop: it's 12345 apples, 3.14 pies\n\n- item\n",
            "x\u{2003}y\u{00a0}z \t\r\n tabs",
            "日本語 のテキスト 😀 emoji",
            "fn main() { println!(\"{}\", 1 + 2); }",
            "https://example.com/a/b?c=d&e=f #anchor",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b",
        ];
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let c = TiktokenCounter::new(enc, true);
            for t in texts {
                assert!(c.at_least(t) <= c.count(t), "{enc:?} {t:?}");
            }
            assert_eq!(c.at_least("a b c d e f g h"), c.count("a b c d e f g h"));
        }
    }

    #[test]
    fn empty_text_is_zero_tokens() {
        assert_eq!(TiktokenCounter::new(Encoding::O200kBase, true).count(""), 0);
    }
}
