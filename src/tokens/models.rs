//! What strata knows about well-known models without asking anyone: which
//! tokenizer counts for them, how large their context window is, and how much
//! output to reserve by default.
//!
//! Pure lookups on the provider and model names; callers (the config and the
//! runtime) fall back to configured values when a lookup says `None`.
//! Model names are matched case-insensitively after dropping any routing
//! prefix up to the last `/` (`openai/gpt-4o` is `gpt-4o`) and a fine-tune
//! prefix `ft:`.

use super::counter::{Encoding, TiktokenCounter};
use crate::domain::ProviderKind;

/// Model-name prefixes counted with `o200k_base`, after tiktoken's
/// `MODEL_PREFIX_TO_ENCODING` / `MODEL_TO_ENCODING` tables (`gpt-oss` uses
/// `o200k_harmony`, whose ordinary text encoding is `o200k_base`'s).
const O200K_PREFIXES: &[&str] = &[
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "gpt-oss",
    "o1",
    "o3",
    "o4",
];

/// Model-name prefixes counted with `cl100k_base` (checked after the
/// `o200k_base` ones, so `gpt-4o` never lands here).
const CL100K_PREFIXES: &[&str] = &[
    "gpt-4",
    "gpt-3.5",
    "gpt-35",
    "text-embedding-",
    "davinci-002",
    "babbage-002",
];

/// The model name as matched: lower case, no routing or fine-tune prefix.
fn normalise(model: &str) -> String {
    let base = model.rsplit('/').next().unwrap_or(model);
    let base = base.strip_prefix("ft:").unwrap_or(base);
    base.trim().to_ascii_lowercase()
}

/// `name` starts with `prefix` and does not go on with a digit (unless the
/// prefix ends in `-`), so `o1` matches `o1` and `o1-mini` but not `o100`,
/// and `gpt-4` matches `gpt-4-0613` but not `gpt-40`.
fn has_model_prefix(name: &str, prefix: &str) -> bool {
    match name.strip_prefix(prefix) {
        Some(rest) => {
            rest.is_empty() || prefix.ends_with('-') || !rest.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// The encoding for a model and whether it is exact.
///
/// `o200k_base` (exact) for current OpenAI models (`gpt-4o*`, `chatgpt-4o*`,
/// `gpt-4.1*`, `gpt-4.5*`, `gpt-5*`, `gpt-oss*`, `o1*`, `o3*`, `o4*`);
/// `cl100k_base` (exact) for older ones (`gpt-4`, `gpt-4-turbo`,
/// `gpt-3.5-turbo`, `text-embedding-*`); for the `anthropic` provider and for
/// any model not listed, `o200k_base` as an estimate (`exact == false`).
/// The provider only matters for `anthropic`: OpenAI-compatible gateways
/// serving OpenAI models keep exact counts.
#[must_use]
pub fn encoding_for(provider: ProviderKind, model: &str) -> (Encoding, bool) {
    if provider == ProviderKind::Anthropic {
        return (Encoding::O200kBase, false);
    }
    let name = normalise(model);
    if O200K_PREFIXES.iter().any(|p| has_model_prefix(&name, p)) {
        (Encoding::O200kBase, true)
    } else if CL100K_PREFIXES.iter().any(|p| has_model_prefix(&name, p)) {
        (Encoding::Cl100kBase, true)
    } else {
        (Encoding::O200kBase, false)
    }
}

/// The counter to use for a session's provider and model (see
/// [`encoding_for`]). Callers hold it as `Arc<dyn TokenCounter>` so that the
/// local model's own tokenizer can stand in its place.
#[must_use]
pub fn counter_for(provider: ProviderKind, model: &str) -> TiktokenCounter {
    let (encoding, exact) = encoding_for(provider, model);
    TiktokenCounter::new(encoding, exact)
}

/// Context windows (input + output tokens) of well-known models, from the
/// providers' model pages. More specific prefixes come first.
const WINDOWS: &[(&str, u64)] = &[
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-5", 400_000),
    ("gpt-3.5-turbo-instruct", 4_096),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-35-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
];

/// The context window of a well-known model in tokens, or `None` when the
/// model is unknown (the caller then uses the configured `context_window`,
/// else 128,000).
///
/// gpt-4o / gpt-4o-mini 128,000; gpt-4.1* 1,047,576; gpt-5* 400,000;
/// o1 / o3 / o4-mini 200,000 (o1-mini, o1-preview 128,000); claude-* 200,000;
/// gpt-4-turbo 128,000; gpt-4-32k 32,768; gpt-4 8,192; gpt-3.5-turbo 16,385.
/// The provider is not consulted: model names are unique across the
/// providers strata speaks to.
#[must_use]
pub fn context_window_for(_provider: ProviderKind, model: &str) -> Option<u64> {
    let name = normalise(model);
    WINDOWS
        .iter()
        .find(|(prefix, _)| has_model_prefix(&name, prefix))
        .map(|(_, window)| *window)
}

/// Largest default output reserve, in tokens.
pub const MAX_DEFAULT_RESERVED_OUTPUT: u64 = 8_192;

/// Default output reserve of the embedded model, in tokens: a 135M-parameter
/// model that has not ended its reply by then is usually repeating itself,
/// and at 20 to 50 tokens a second the cap ends such a reply within
/// seconds.
pub const EMBEDDED_DEFAULT_MAX_TOKENS: u64 = 512;

/// The default output reserve (`max_tokens`) for a window:
/// `min(8,192, window / 4)`, and at most
/// [`EMBEDDED_DEFAULT_MAX_TOKENS`] for the embedded model
/// ([`ProviderKind::Local`]). A quarter of the window keeps small served
/// models usable (an 8,192-token window reserves 2,048); 8,192 covers a long
/// answer with code on large windows without eating into history. A
/// configured `max_tokens` replaces it.
#[must_use]
pub fn default_reserved_output(provider: ProviderKind, window: u64) -> u64 {
    let reserve = MAX_DEFAULT_RESERVED_OUTPUT.min(window / 4);
    match provider {
        ProviderKind::Local => reserve.min(EMBEDDED_DEFAULT_MAX_TOKENS),
        ProviderKind::OpenAi | ProviderKind::Anthropic => reserve,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::TokenCounter;

    #[test]
    fn current_openai_models_are_exact_o200k() {
        for model in [
            "gpt-4o",
            "gpt-4o-mini",
            "gpt-4o-2024-08-06",
            "chatgpt-4o-latest",
            "gpt-4.1",
            "gpt-4.1-nano",
            "gpt-5",
            "gpt-5-mini",
            "o1",
            "o1-mini",
            "o3",
            "o3-mini",
            "o4-mini",
            "openai/gpt-4o",
            "GPT-4O",
            "ft:gpt-4o-mini:org::abc",
        ] {
            assert_eq!(
                encoding_for(ProviderKind::OpenAi, model),
                (Encoding::O200kBase, true),
                "{model}"
            );
        }
    }

    #[test]
    fn older_openai_models_are_exact_cl100k() {
        for model in [
            "gpt-4",
            "gpt-4-0613",
            "gpt-4-turbo",
            "gpt-4-32k",
            "gpt-3.5-turbo",
            "gpt-3.5-turbo-0125",
            "gpt-35-turbo",
            "text-embedding-3-small",
            "text-embedding-ada-002",
        ] {
            assert_eq!(
                encoding_for(ProviderKind::OpenAi, model),
                (Encoding::Cl100kBase, true),
                "{model}"
            );
        }
    }

    #[test]
    fn anthropic_and_unknown_models_are_approximate_o200k() {
        assert_eq!(
            encoding_for(ProviderKind::Anthropic, "claude-sonnet-4-5"),
            (Encoding::O200kBase, false)
        );
        for model in ["llama-3.1-8b", "qwen2.5-coder", "o100", "smollm2", ""] {
            assert_eq!(
                encoding_for(ProviderKind::OpenAi, model),
                (Encoding::O200kBase, false),
                "{model}"
            );
        }
    }

    #[test]
    fn counter_for_carries_id_and_exactness() {
        let c = counter_for(ProviderKind::OpenAi, "gpt-3.5-turbo");
        assert_eq!((c.id(), c.exact()), ("cl100k_base", true));
        let c = counter_for(ProviderKind::Anthropic, "claude-opus-4");
        assert_eq!((c.id(), c.exact()), ("o200k_base", false));
    }

    #[test]
    fn windows_of_well_known_models() {
        let cases = [
            ("gpt-4o", Some(128_000)),
            ("gpt-4o-mini", Some(128_000)),
            ("gpt-4.1-mini", Some(1_047_576)),
            ("gpt-5", Some(400_000)),
            ("o3", Some(200_000)),
            ("o4-mini", Some(200_000)),
            ("o1-mini", Some(128_000)),
            ("claude-sonnet-4-5", Some(200_000)),
            ("gpt-4", Some(8_192)),
            ("gpt-4-0613", Some(8_192)),
            ("gpt-4-turbo-2024-04-09", Some(128_000)),
            ("gpt-3.5-turbo", Some(16_385)),
            ("mystery-model", None),
        ];
        for (model, want) in cases {
            assert_eq!(context_window_for(ProviderKind::OpenAi, model), want, "{model}");
        }
    }

    #[test]
    fn reserved_output_is_a_quarter_of_small_windows_capped_at_8192() {
        let served = ProviderKind::OpenAi;
        assert_eq!(default_reserved_output(served, 8_192), 2_048);
        assert_eq!(default_reserved_output(served, 16_385), 4_096);
        assert_eq!(default_reserved_output(ProviderKind::Anthropic, 128_000), 8_192);
        assert_eq!(default_reserved_output(served, 0), 0);
    }

    #[test]
    fn the_embedded_model_reserves_at_most_512() {
        assert_eq!(default_reserved_output(ProviderKind::Local, 8_192), 512);
        assert_eq!(default_reserved_output(ProviderKind::Local, 1_024), 256);
        // A model behind a served OpenAI-compatible URL keeps a quarter.
        assert_eq!(default_reserved_output(ProviderKind::OpenAi, 8_192), 2_048);
    }
}
