//! What strata knows of a provider's prompt cache: the cacheable blocks of
//! a request as content hashes ([`PrefixSnapshot`]), the caching rule of the
//! provider ([`CacheRule`]) and where and why the cached prefix broke
//! ([`CacheBreak`]).

use super::ids::MessageId;
use super::message::Role;
use super::system_prompt::LayerName;
use serde::{Deserialize, Serialize};

/// A 128-bit content hash, hex in JSON.
pub type BlockHash = u128;

/// What one cacheable block of a request is, in the provider's order:
/// the tools array, a layer of the system prompt, or one message as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BlockKind {
    /// The whole tools array.
    Tools,
    /// One layer of the frozen system prompt.
    Layer {
        /// Which.
        layer: LayerName,
    },
    /// System text the prompt's layers do not cover (imported `system`
    /// messages merged into it).
    SystemExtra,
    /// One request message, formed from stored messages (several when the
    /// pipeline merged them); `message_id` is the first of them, `None` for
    /// a note strata inserted.
    Message {
        /// The first stored message it holds.
        message_id: Option<MessageId>,
        /// Its role.
        role: Role,
        /// Anthropic content blocks it becomes (text, one per tool call).
        parts: u32,
        /// Whether it is a compaction's summary (what tells an undone
        /// compaction from an undone edit once the summary is gone).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        summary: bool,
    },
}

/// One block: what it is, the hash chain up to and including it, and its
/// tokens in strata's estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixBlock {
    /// What it is.
    #[serde(flatten)]
    pub kind: BlockKind,
    /// Hash of this block's content chained onto the previous block's
    /// chain: equal chains at `i` mean equal requests up to `i`.
    #[serde(with = "hex128")]
    pub chain: BlockHash,
    /// Tokens (framing included).
    pub tokens: u32,
}

/// The cacheable content of one request, block by block.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixSnapshot {
    /// Model the request went to (a cache belongs to one model).
    pub model: String,
    /// When it was sent, unix milliseconds.
    pub at_ms: i64,
    /// Version of the system prompt it carried.
    pub prompt_version: u32,
    /// Tools, system layers and messages, in order.
    pub blocks: Vec<PrefixBlock>,
    /// Indices of blocks after which the request carries a cache marker
    /// (Anthropic's `cache_control`); empty for other providers.
    #[serde(default)]
    pub markers: Vec<usize>,
}

impl PrefixSnapshot {
    /// Sum of the blocks' tokens.
    #[must_use]
    pub fn tokens(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.tokens)).sum()
    }
}

/// How a provider caches prompts, from its documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum CacheRule {
    /// OpenAI (platform.openai.com "Prompt caching"): prompts of at least
    /// `min_tokens` (1,024) tokens are cached automatically, the cached
    /// prefix growing in steps of `step` (128) tokens.
    OpenAi {
        /// Shortest prompt cached.
        min_tokens: u32,
        /// Granularity of cache hits.
        step: u32,
    },
    /// Anthropic (docs.anthropic.com "Prompt caching"): the prefix up to a
    /// `cache_control` marker is cached when it is at least `min_tokens`
    /// long; an entry lives `ttl_ms` after its last use; a marker finds an
    /// earlier entry at most 20 content blocks back.
    Anthropic {
        /// Minimum cacheable length for the model.
        min_tokens: u32,
        /// Lifetime of an entry, milliseconds (5 minutes by default).
        ttl_ms: i64,
    },
    /// llama.cpp (the embedded model, `llama-server`) and other self-hosted
    /// servers: the KV cache keeps the longest token prefix shared with the
    /// previous request.
    SharedPrefix,
}

impl CacheRule {
    /// OpenAI's documented rule: 1,024 tokens at least, 128-token steps.
    pub const OPENAI: Self = Self::OpenAi {
        min_tokens: 1_024,
        step: 128,
    };
}

/// Where the cached prefix broke.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum BreakAt {
    /// The tools array.
    Tools,
    /// A layer of the system prompt.
    System {
        /// The first layer that changed (`None`: text outside the layers).
        layer: Option<LayerName>,
    },
    /// The first message that changed.
    Message {
        /// Its position among the session's active messages, from 1.
        pos: Option<usize>,
        /// The stored message.
        message_id: Option<MessageId>,
    },
    /// Nowhere in the request: the provider did not read what it had.
    Provider,
}

impl BreakAt {
    /// Short text for people: `tools`, `system (project)`, `message 12`,
    /// `provider`.
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Self::Tools => "the tools array".to_owned(),
            Self::System { layer: Some(l) } => format!("the {} layer", l.as_str()),
            Self::System { layer: None } => "the system prompt".to_owned(),
            Self::Message { pos: Some(p), .. } => format!("message {p}"),
            Self::Message { pos: None, .. } => "a message".to_owned(),
            Self::Provider => "the provider".to_owned(),
        }
    }
}

/// Why the cached prefix broke, when strata knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakReason {
    /// The system prompt was rebuilt (`/reload`).
    Reload,
    /// The request went to another model (`/model`).
    Model,
    /// A compression replaced messages with a summary.
    Compaction,
    /// A compression was undone.
    UndoCompaction,
    /// A message was excluded.
    Exclusion,
    /// An excluded message was included again.
    Inclusion,
    /// A message was edited and resent.
    Edit,
    /// An edit was undone (`/undo-resend`): the original message is back.
    UndoEdit,
    /// The pipeline cut, pruned or left out messages differently.
    Truncation,
    /// Tools were added, removed or changed.
    ToolSet,
    /// The provider's entry expired (its TTL passed since the last request).
    Expired,
    /// Identical bytes, nothing read: the provider evicted or expired it.
    ProviderMiss,
    /// Something else changed.
    Changed,
}

impl BreakReason {
    /// The snake_case name (JSON, logs).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reload => "reload",
            Self::Model => "model",
            Self::Compaction => "compaction",
            Self::UndoCompaction => "undo_compaction",
            Self::Exclusion => "exclusion",
            Self::Inclusion => "inclusion",
            Self::Edit => "edit",
            Self::UndoEdit => "undo_edit",
            Self::Truncation => "truncation",
            Self::ToolSet => "tool_set",
            Self::Expired => "expired",
            Self::ProviderMiss => "provider_miss",
            Self::Changed => "changed",
        }
    }

    /// Parses [`as_str`](Self::as_str).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Reload,
            Self::Model,
            Self::Compaction,
            Self::UndoCompaction,
            Self::Exclusion,
            Self::Inclusion,
            Self::Edit,
            Self::UndoEdit,
            Self::Truncation,
            Self::ToolSet,
            Self::Expired,
            Self::ProviderMiss,
            Self::Changed,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }

    /// Why, in words: `/reload`, `a compaction`, ...
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            Self::Reload => "the prompt was reloaded",
            Self::Model => "the model changed",
            Self::Compaction => "a compaction",
            Self::UndoCompaction => "a compaction was undone",
            Self::Exclusion => "an exclusion",
            Self::Inclusion => "an inclusion",
            Self::Edit => "an edit",
            Self::UndoEdit => "an edit was undone",
            Self::Truncation => "the pipeline cut or left out messages differently",
            Self::ToolSet => "the tool set changed",
            Self::Expired => "the cache entry expired",
            Self::ProviderMiss => "a provider-side miss (expired or evicted)",
            Self::Changed => "its content changed",
        }
    }
}

/// A break of the cached prefix: where and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheBreak {
    /// Where.
    #[serde(flatten)]
    pub at: BreakAt,
    /// Why.
    pub reason: BreakReason,
}

/// What strata predicted of a request's cache reads, and the break it saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCheck {
    /// Input tokens strata expects the provider to read from its cache.
    pub predicted_cached_tokens: u64,
    /// Tokens of the prefix shared with the previous request, before the
    /// provider's rule (minimum length, steps) applies.
    pub shared_tokens: u64,
    /// Where and why the prefix broke; `None` when it did not.
    pub cache_break: Option<CacheBreak>,
}

/// Serde for `u128` as 32 hex digits.
mod hex128 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:032x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let text = String::deserialize(d)?;
        u128::from_str_radix(&text, 16).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_survives_json() {
        let snapshot = PrefixSnapshot {
            model: "m".into(),
            at_ms: 5,
            prompt_version: 2,
            blocks: vec![
                PrefixBlock {
                    kind: BlockKind::Tools,
                    chain: u128::MAX - 7,
                    tokens: 40,
                },
                PrefixBlock {
                    kind: BlockKind::Message {
                        message_id: Some(MessageId::new()),
                        role: Role::User,
                        parts: 1,
                        summary: true,
                    },
                    chain: 3,
                    tokens: 9,
                },
            ],
            markers: vec![1],
        };
        let text = serde_json::to_string(&snapshot).unwrap();
        assert_eq!(serde_json::from_str::<PrefixSnapshot>(&text).unwrap(), snapshot);
        assert_eq!(snapshot.tokens(), 49);
    }

    #[test]
    fn reasons_parse_back() {
        for r in [
            BreakReason::Reload,
            BreakReason::ProviderMiss,
            BreakReason::ToolSet,
            BreakReason::UndoEdit,
        ] {
            assert_eq!(BreakReason::parse(r.as_str()), Some(r));
        }
        assert_eq!(BreakReason::parse("nope"), None);
    }
}
