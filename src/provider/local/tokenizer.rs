//! The embedded model's own tokenizer, as a [`TokenCounter`] and as the
//! prompt tokenizer of the engine.
//!
//! Owns a shared handle on the loaded model (`LlamaModel` is Send + Sync and
//! tokenizing needs no context), so counts can be taken on any thread while
//! the engine thread generates. Counts are exact for this model.
//!
//! Invariant: [`LocalTokenizer::tokenize_prompt`] tokenises ChatML markers as
//! special tokens and message text with special-token parsing off, so the
//! token sequence of a prompt depends only on its pieces.

use super::chatml::{ChatmlPrompt, Piece};
use crate::tokens::TokenCounter;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use std::sync::Arc;

/// The model's tokenizer. Cheap to clone; usable from any thread.
#[derive(Clone)]
pub struct LocalTokenizer {
    model: Arc<LlamaModel>,
    id: String,
}

impl std::fmt::Debug for LocalTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTokenizer")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl LocalTokenizer {
    pub(super) fn new(model: Arc<LlamaModel>, id: String) -> Self {
        Self { model, id }
    }

    /// Loads only what counting needs from a GGUF file (the weights are
    /// memory-mapped, not read).
    ///
    /// # Errors
    /// `ProviderError::Local` when the file cannot be loaded.
    pub fn load(path: &std::path::Path) -> Result<Self, crate::provider::ProviderError> {
        let loaded = super::load_model(path)?;
        Ok(Self::new(loaded.model, loaded.id))
    }

    /// Token ids of `text`. With `parse_special`, text such as
    /// `<|im_start|>` becomes the special token; without it, it is ordinary
    /// text. No BOS is added.
    #[must_use]
    pub fn tokenize(&self, text: &str, parse_special: bool) -> Vec<u32> {
        self.tokens(text, parse_special)
            .into_iter()
            .map(|token| u32::try_from(token.0).unwrap_or(u32::MAX))
            .collect()
    }

    /// The text of `ids` (special tokens written out), with invalid UTF-8
    /// replaced by U+FFFD.
    #[must_use]
    pub fn detokenize(&self, ids: &[u32]) -> String {
        let tokens: Vec<LlamaToken> = ids
            .iter()
            .map(|&id| LlamaToken(i32::try_from(id).unwrap_or(i32::MAX)))
            .collect();
        if tokens.is_empty() {
            return String::new();
        }
        let bytes = self.model.vocab().detokenize(&tokens, false, true);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The context length the model was trained with (GGUF metadata).
    #[must_use]
    pub fn context_length(&self) -> u32 {
        self.model.n_ctx_train()
    }

    pub(super) fn tokens(&self, text: &str, parse_special: bool) -> Vec<LlamaToken> {
        if text.is_empty() {
            return Vec::new();
        }
        self.model.vocab().tokenize(text.as_bytes(), false, parse_special)
    }

    /// Token sequence of a rendered prompt (with BOS first when the model
    /// asks for one; SmolLM2 does not).
    pub(super) fn tokenize_prompt(&self, prompt: &ChatmlPrompt) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let mut tokens = Vec::new();
        if vocab.should_add_bos() {
            tokens.push(vocab.bos());
        }
        for piece in prompt.pieces() {
            match piece {
                Piece::Marker(marker) => tokens.extend(self.tokens(marker.text(), true)),
                Piece::Text(text) => tokens.extend(self.tokens(text, false)),
            }
        }
        tokens
    }
}

impl TokenCounter for LocalTokenizer {
    fn id(&self) -> &str {
        &self.id
    }

    fn exact(&self) -> bool {
        true
    }

    fn count(&self, text: &str) -> usize {
        self.tokens(text, false).len()
    }
}
