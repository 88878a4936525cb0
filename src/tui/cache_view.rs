//! What the context pane says of the prompt cache and of the compression
//! to come: the last request's cache reads (reported by the provider,
//! predicted by strata) with where and why the cached prefix broke, and a
//! warning when the next request comes within 10 % of the compression
//! threshold.

use super::event::ContextSnapshot;
use super::{fmt, theme};
use ratatui::text::Line;

/// The next request is "near" the threshold within this share of it.
pub const NEAR_THRESHOLD: f64 = 0.10;

/// The cache lines: `cache read R of P · predicted X`, and `⚠ prefix
/// broke at WHERE: WHY` when it broke.
#[must_use]
pub fn cache_lines(s: &ContextSnapshot) -> Vec<Line<'static>> {
    let Some(u) = &s.last_usage else {
        return vec![Line::styled("cached – (no request yet)", theme::dim())];
    };
    let figure = |v: Option<u64>| v.map_or_else(|| "–".to_owned(), fmt::tokens);
    let mut text = format!(
        "cached {} of {}",
        figure(u.cache_read_tokens),
        figure(u.prompt_tokens)
    );
    if let Some(check) = &u.cache {
        text.push_str(&format!(
            " · predicted {}",
            fmt::tokens(check.predicted_cached_tokens)
        ));
    }
    let mut out = vec![Line::raw(text)];
    if let Some(brk) = u.cache.as_ref().and_then(|c| c.cache_break.as_ref()) {
        // Whole, wrapped by the pane: where and why is the point.
        let line = format!("⚠ prefix broke at {}: {}", brk.at.label(), brk.reason.words());
        out.push(Line::styled(line, theme::warning()));
    }
    out
}

/// Tokens left before automatic compression fires, when the next request's
/// pre-limit estimate is within [`NEAR_THRESHOLD`] of the effective
/// threshold or over it (0: it fires with the next message); `None`
/// otherwise or when automatic compression cannot run.
#[must_use]
pub fn tokens_before_compression(s: &ContextSnapshot) -> Option<u64> {
    if s.blocked_reason.is_some() {
        return None;
    }
    let threshold = s.budget.threshold.effective;
    let next = s.prelimit_tokens?;
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let near = (threshold as f64 * (1.0 - NEAR_THRESHOLD)) as u64;
    (next >= near).then(|| threshold.saturating_sub(next))
}

/// Turns left before `left` tokens are used up, at the pace of the
/// session's last three requests (1 when there is no pace yet).
#[must_use]
pub fn turns_left(s: &ContextSnapshot, left: u64) -> u64 {
    let growth: Vec<u64> = s
        .requests
        .windows(2)
        .rev()
        .take(3)
        .filter_map(|w| w[1].prompt_tokens.checked_sub(w[0].prompt_tokens))
        .filter(|&d| d > 0)
        .collect();
    if growth.is_empty() {
        return 1;
    }
    let pace = growth.iter().sum::<u64>() / growth.len() as u64;
    left.div_ceil(pace.max(1)).max(1)
}

/// The warning before automatic compression: `auto-compress in ~1 turn:
/// 4.1k tokens left`, and the keys that act on it.
#[must_use]
pub fn compression_warning(s: &ContextSnapshot) -> Vec<Line<'static>> {
    let Some(left) = tokens_before_compression(s) else {
        return Vec::new();
    };
    let keys = if s.compression_helps {
        "  /compress now · F8 list · /auto-compress off"
    } else {
        // Nothing outside the protected start and end would save 10 %.
        "  compressing would save under 10 % · F8 list"
    };
    vec![
        Line::styled(
            format!("⚠ {}", warning_text(left, turns_left(s, left))),
            theme::warning(),
        ),
        Line::styled(keys, theme::dim()),
    ]
}

/// `auto-compress in ~1 turn: 4.1k tokens left`, or, with nothing left,
/// `the next request is over the compression threshold` (whether the
/// engine then compresses or the pipeline leaves turns out depends on
/// what a compression would save).
#[must_use]
pub fn warning_text(left: u64, turns: u64) -> String {
    if left == 0 {
        return "the next request is over the compression threshold".to_owned();
    }
    let unit = if turns == 1 { "turn" } else { "turns" };
    format!(
        "auto-compress in ~{turns} {unit}: {} tokens left",
        fmt::tokens(left)
    )
}
