//! The [`TokenCounter`] trait and its tiktoken implementation.

use tiktoken_rs::CoreBPE;

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

    /// The process-wide BPE table (built once, ~0.3 s, on first use).
    fn bpe(self) -> &'static CoreBPE {
        match self {
            Self::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Self::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

/// A [`TokenCounter`] backed by tiktoken-rs. Counts equal Python tiktoken's
/// `len(enc.encode_ordinary(text))`.
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
        self.encoding.bpe().encode_ordinary(text).len()
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
    fn empty_text_is_zero_tokens() {
        assert_eq!(TiktokenCounter::new(Encoding::O200kBase, true).count(""), 0);
    }
}
