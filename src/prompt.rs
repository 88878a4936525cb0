//! Layer 1 (pure): system prompt assembly (DESIGN §4). Turns
//! [`PromptInputs`] — everything already read from disk by the `workspace`
//! adapter — into the exact prompt bytes, the layer table that explains them,
//! the cache boundary and the warnings the user must see.
//!
//! Invariants: the output depends only on the inputs (no files, clock,
//! environment or process); layers appear in DESIGN §4 order, joined by one
//! blank line; the layers' byte ranges tile the text in tier order; the cache
//! boundary marker opens the volatile tier whenever that tier has text.
//!
//! Callers: the session runtime (building a frozen prompt), `strata prompt`,
//! and tests. All prompt wording lives in `assets/prompts/`.

mod assets;
mod fit;
mod guidance;
mod inputs;
mod layers;
mod orders;
mod project;
mod scan;
mod settings;
mod template;

pub use fit::{split_frontmatter, strip_frontmatter};
pub use guidance::ModelFamily;
pub use inputs::{
    ComputedOutput, EnvFacts, PromptInputs, RecentSession, SessionFacts, SkillEntry, SourceBody, SourceText,
    ToolFacts, WorkspaceFacts,
};
pub use orders::standing_order;
pub use scan::{Finding, FindingKind, scan, scan_memory};
pub use settings::{
    COMPUTED_MAX_CHARS, DEFAULT_FILE_CAP, FILE_CAP_RANGE, INSTRUCTION_FILE_NAMES, INSTRUCTION_RULES_DIR,
    InstructionPolicy, MINIMAL_MODE_WINDOW, PromptSettings, TOTAL_INSTRUCTION_CAP, TruncationNotice,
    head_tail, per_file_cap, resolve_mode,
};

use crate::domain::{LayerInfo, LayerName, Tier};
use crate::tokens::TokenCounter;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The separator between two layers.
pub const LAYER_SEPARATOR: &str = "\n\n";

/// Version of strata's prompt templates, for [`crate::domain::Fingerprint`]:
/// bump it whenever a file in `assets/prompts/` or the layout changes.
pub const TEMPLATE_VERSION: u32 = 1;

/// The result of [`assemble`]; serialises to the `strata prompt --json`
/// contract (`text, sha256, tokenizer, total_tokens, boundary_offset,
/// layers, warnings`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AssembledPrompt {
    /// The exact bytes to send as the system prompt.
    pub text: String,
    /// Lower-case hex sha256 of `text`.
    pub sha256: String,
    /// Id of the tokenizer that counted `total_tokens` and the layer tokens.
    pub tokenizer: String,
    /// Tokens of the whole text: the sum of the layers' counts. Every layer
    /// starts with a non-blank character after a blank line, which the
    /// tiktoken pre-tokenisers always split at, so for them the sum equals a
    /// count of the whole text (the golden tests check this); the text is
    /// not tokenised twice.
    pub total_tokens: usize,
    /// Byte offset in `text` of the cache boundary marker, when there is one.
    pub boundary_offset: Option<usize>,
    /// The layer table, in text order. A layer with sources but no text (all
    /// its files missing, say) has an empty range.
    pub layers: Vec<LayerInfo>,
    /// Every truncation, skip, refusal, decode problem and injection finding,
    /// one sentence each, gathering problems first.
    pub warnings: Vec<String>,
}

/// Assembles the system prompt from `inputs`, counting tokens with `counter`.
/// Same inputs and counter, same bytes. Never fails: every problem becomes a
/// warning.
#[must_use]
pub fn assemble(inputs: &PromptInputs, counter: &dyn TokenCounter) -> AssembledPrompt {
    let mut warnings = inputs.warnings.clone();
    let mut layers = layers::build(inputs, &mut warnings);
    let volatile_has_text = layers
        .iter()
        .any(|l| l.name.tier() == Tier::Volatile && !l.text.is_empty());
    if volatile_has_text {
        let at = layers
            .iter()
            .position(|l| l.name.tier() == Tier::Volatile)
            .unwrap_or(layers.len());
        let marker = layers::Layer {
            name: LayerName::CacheBoundary,
            text: assets::CACHE_BOUNDARY.trim().to_owned(),
            sources: vec![crate::domain::SourceInfo {
                path: assets::builtin("cache_boundary.md"),
                status: crate::domain::SourceStatus::Found,
                original_chars: assets::CACHE_BOUNDARY.trim().chars().count() as u64,
                kept_chars: assets::CACHE_BOUNDARY.trim().chars().count() as u64,
            }],
        };
        layers.insert(at, marker);
    }

    let last_with_text = layers.iter().rposition(|l| !l.text.is_empty());
    let mut text = String::with_capacity(layers.iter().map(|l| l.text.len() + 2).sum());
    let mut table = Vec::with_capacity(layers.len());
    let mut boundary_offset = None;
    for (i, layer) in layers.into_iter().enumerate() {
        let start = text.len();
        if !layer.text.is_empty() {
            text.push_str(&layer.text);
            if Some(i) != last_with_text {
                text.push_str(LAYER_SEPARATOR);
            }
        }
        if layer.name == LayerName::CacheBoundary {
            boundary_offset = Some(start);
        }
        let slice = &text[start..];
        table.push(LayerInfo {
            name: layer.name,
            tier: layer.name.tier(),
            start,
            end: text.len(),
            chars: slice.chars().count(),
            tokens: counter.count(slice),
            sources: layer.sources,
        });
    }
    AssembledPrompt {
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
        tokenizer: counter.id().to_owned(),
        total_tokens: table.iter().map(|l| l.tokens).sum(),
        text,
        boundary_offset,
        layers: table,
        warnings,
    }
}
