//! The cache reads a request should get, from the previous request of the
//! session and the provider's rule ([`predict`]).

use crate::domain::{BlockKind, CacheRule, PrefixSnapshot, Role};

/// Anthropic looks for an earlier cache entry at most this many content
/// blocks before a `cache_control` marker (docs.anthropic.com, "Prompt
/// caching": the automatic prefix check).
pub const ANTHROPIC_LOOKBACK_BLOCKS: u32 = 20;

/// What [`predict`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prediction {
    /// Tokens of the blocks the request shares with the previous one, in
    /// strata's estimate scaled by the calibration ratio.
    pub shared_tokens: u64,
    /// The provider's expected cache reads under its rule.
    pub predicted_cached_tokens: u64,
    /// Index of the first block that differs from the previous request,
    /// when one does (a request that only adds blocks has none).
    pub first_change: Option<usize>,
    /// The previous request went to another model.
    pub model_changed: bool,
    /// The provider's entries expired since the previous request.
    pub expired: bool,
}

/// Predicts `cur`'s cache reads given `prev`, the session's previous
/// request, under `rule`; `ratio` converts strata's estimate into the
/// provider's counts (the session's calibration, 1.0 before any).
///
/// - OpenAI: the shared prefix, counted when both requests are at least
///   `min_tokens` long, rounded down to `step`.
/// - Anthropic: the longest prefix ending at one of `prev`'s markers that
///   `cur` shares whole, at least `min_tokens` long, that one of `cur`'s
///   markers reaches within [`ANTHROPIC_LOOKBACK_BLOCKS`]; nothing once
///   `ttl_ms` has passed.
/// - Shared prefix: the shared prefix itself, and the reply that followed
///   the previous request when the new one goes on from it (a KV cache
///   holds the tokens it generated).
#[must_use]
pub fn predict(
    rule: CacheRule,
    prev: Option<&PrefixSnapshot>,
    cur: &PrefixSnapshot,
    ratio: f64,
) -> Prediction {
    let Some(prev) = prev else {
        return Prediction::default();
    };
    let scale = |tokens: u64| -> u64 { scaled(tokens, ratio) };
    let first_change = first_change(prev, cur);
    let model_changed = prev.model != cur.model;
    let same = first_change.unwrap_or(cur.blocks.len().min(prev.blocks.len()));
    let shared = if model_changed {
        0
    } else {
        scale(tokens_to(cur, same))
    };
    let mut out = Prediction {
        shared_tokens: shared,
        predicted_cached_tokens: 0,
        first_change: if model_changed { Some(0) } else { first_change },
        model_changed,
        expired: false,
    };
    if model_changed {
        return out;
    }
    out.predicted_cached_tokens = match rule {
        CacheRule::OpenAi { min_tokens, step } => {
            let min = u64::from(min_tokens);
            if shared >= min && scale(prev.tokens()) >= min && scale(cur.tokens()) >= min {
                shared / u64::from(step.max(1)) * u64::from(step.max(1))
            } else {
                0
            }
        }
        CacheRule::Anthropic { min_tokens, ttl_ms } => {
            if cur.at_ms.saturating_sub(prev.at_ms) > ttl_ms {
                out.expired = true;
                0
            } else {
                anthropic_read(prev, cur, same, u64::from(min_tokens), ratio)
            }
        }
        // The KV cache also holds the reply it generated: a request that
        // goes on from the previous one finds that reply cached too.
        CacheRule::SharedPrefix => match (first_change, cur.blocks.get(prev.blocks.len())) {
            (None, Some(b))
                if matches!(
                    b.kind,
                    BlockKind::Message {
                        role: Role::Assistant,
                        ..
                    }
                ) =>
            {
                shared + scale(u64::from(b.tokens))
            }
            _ => shared,
        },
    };
    out
}

/// Index of the first block whose chain differs; `None` when one request's
/// blocks are a prefix of the other's.
fn first_change(prev: &PrefixSnapshot, cur: &PrefixSnapshot) -> Option<usize> {
    let n = prev.blocks.len().min(cur.blocks.len());
    // Chains agree up to the first change and differ after it: bisect.
    if n == 0 || prev.blocks[n - 1].chain == cur.blocks[n - 1].chain {
        return None;
    }
    let (mut lo, mut hi) = (0, n - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if prev.blocks[mid].chain == cur.blocks[mid].chain {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// Tokens of `s.blocks[..n]`.
fn tokens_to(s: &PrefixSnapshot, n: usize) -> u64 {
    s.blocks[..n.min(s.blocks.len())]
        .iter()
        .map(|b| u64::from(b.tokens))
        .sum()
}

fn scaled(tokens: u64, ratio: f64) -> u64 {
    if (ratio - 1.0).abs() < f64::EPSILON || !ratio.is_finite() || ratio <= 0.0 {
        return tokens;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let out = (tokens as f64 * ratio).round() as u64;
    out
}

/// Anthropic's read: entries `prev` wrote end at its markers; `cur` reads
/// the longest of them it shares whole (`same` blocks agree) and reaches
/// from one of its own markers within the lookback.
fn anthropic_read(prev: &PrefixSnapshot, cur: &PrefixSnapshot, same: usize, min: u64, ratio: f64) -> u64 {
    let parts = |s: &PrefixSnapshot, from: usize, to: usize| -> u32 {
        s.blocks[from..=to]
            .iter()
            .map(|b| match b.kind {
                BlockKind::Message { parts, .. } => parts,
                _ => 0,
            })
            .sum()
    };
    let mut best = 0;
    for &p in prev.markers.iter().filter(|&&p| p < same) {
        let tokens = scaled(tokens_to(cur, p + 1), ratio);
        if tokens < min || tokens <= best {
            continue;
        }
        let reached = cur.markers.iter().any(|&c| {
            c >= p
                && c < cur.blocks.len()
                && parts(cur, p, c).saturating_sub(parts(cur, p, p)) <= ANTHROPIC_LOOKBACK_BLOCKS
        });
        if reached {
            best = tokens;
        }
    }
    best
}
