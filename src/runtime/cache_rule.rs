//! Which prompt-cache rule a model's provider follows
//! ([`crate::domain::CacheRule`]).

use super::Runtime;
use crate::config::{ModelChoice, ProviderKind};
use crate::domain::CacheRule;

/// How long an Anthropic cache entry lives after its last use by default
/// (docs.anthropic.com, "Prompt caching": 5 minutes).
pub const ANTHROPIC_TTL_MS: i64 = 5 * 60 * 1_000;

/// Anthropic's minimum cacheable prompt length for `model`
/// (docs.anthropic.com, "Prompt caching", "Cache limitations"): 4,096
/// tokens for Claude Opus 4.5 and Haiku 4.5, 2,048 for the older Haiku
/// models, 1,024 for the others.
#[must_use]
pub fn anthropic_min_tokens(model: &str) -> u32 {
    let m = model.to_ascii_lowercase();
    if m.contains("opus-4-5") || m.contains("haiku-4-5") {
        4_096
    } else if m.contains("haiku") {
        2_048
    } else {
        1_024
    }
}

impl Runtime {
    /// The rule for `choice`: the longest shared prefix for the embedded
    /// model and for a server that said what it serves (llama.cpp, Ollama,
    /// vLLM, LM Studio keep a KV prefix), through either API; Anthropic's
    /// for Anthropic otherwise; OpenAI's documented rule otherwise.
    #[must_use]
    pub fn cache_rule(&self, choice: &ModelChoice) -> CacheRule {
        // A server that said what it serves is a self-hosted one, whatever
        // API it is spoken to through.
        let served = super::served_window::window_key(choice).is_some_and(|(base, model)| {
            self.store
                .served_window(&base, &model)
                .ok()
                .flatten()
                .is_some_and(|w| w.source == "server")
        });
        match choice.provider {
            ProviderKind::Local => CacheRule::SharedPrefix,
            _ if served => CacheRule::SharedPrefix,
            ProviderKind::Anthropic => CacheRule::Anthropic {
                min_tokens: anthropic_min_tokens(&choice.model),
                ttl_ms: ANTHROPIC_TTL_MS,
            },
            ProviderKind::OpenAi => CacheRule::OPENAI,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_lengths_follow_the_model() {
        assert_eq!(anthropic_min_tokens("claude-sonnet-4-20250514"), 1_024);
        assert_eq!(anthropic_min_tokens("claude-3-5-haiku-latest"), 2_048);
        assert_eq!(anthropic_min_tokens("claude-haiku-4-5"), 4_096);
        assert_eq!(anthropic_min_tokens("claude-opus-4-5-20251101"), 4_096);
    }
}
