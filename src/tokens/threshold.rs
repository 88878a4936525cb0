//! The compression threshold (DESIGN §7 "Threshold"): the input-token
//! estimate at which strata compresses a session's history.
//!
//! `effective_window = window − reserved_output`;
//! `requested = effective_window × ratio`;
//! `t = max(requested, 64,000)`; if `t ≥ effective_window` then
//! `t = effective_window × 0.85`; finally `t = min(t, cap)`.
//! The floor keeps large windows from compressing needlessly early; the 85 %
//! rule keeps small windows (where the floor would reach the window) usable;
//! the cap bounds the cost of long-context requests. Both the requested and
//! the effective value are reported, so a changed value is never silent.

use serde::{Deserialize, Serialize};

/// Default share of the effective window (`compress.threshold`).
pub const DEFAULT_THRESHOLD_RATIO: f64 = 0.75;

/// Default upper bound in tokens (`compress.threshold_tokens`).
pub const DEFAULT_THRESHOLD_CAP: u64 = 256_000;

/// The threshold never starts below this many tokens, unless the window is
/// too small for it.
pub const THRESHOLD_FLOOR: u64 = 64_000;

/// Share of the effective window used when the floor reaches the window,
/// in percent (85 %).
pub const SMALL_WINDOW_PERCENT: u64 = 85;

/// The user's threshold settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThresholdSettings {
    /// Share of the effective window, normally in `(0, 1]`.
    pub ratio: f64,
    /// Upper bound in tokens.
    pub cap_tokens: u64,
}

impl Default for ThresholdSettings {
    fn default() -> Self {
        Self {
            ratio: DEFAULT_THRESHOLD_RATIO,
            cap_tokens: DEFAULT_THRESHOLD_CAP,
        }
    }
}

/// Why a threshold's value in force differs from what the settings ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adjustment {
    /// It is what the settings ask.
    None,
    /// Raised to [`THRESHOLD_FLOOR`].
    Floor,
    /// The floor or the asked value reached the window:
    /// [`SMALL_WINDOW_PERCENT`] of it.
    SmallWindow,
    /// Lowered to the cap (`compress.threshold_tokens`).
    Capped,
}

/// A computed threshold, in tokens of request input. Serialises as
/// `{requested, effective}` (the `strata context --json` contract); `ratio`
/// is kept for display only.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The ratio it was computed from.
    #[serde(skip, default = "default_ratio")]
    pub ratio: f64,
    /// `effective_window × ratio`, what the settings ask for.
    pub requested: u64,
    /// The value in force after the floor, the small-window rule and the cap.
    pub effective: u64,
}

fn default_ratio() -> f64 {
    DEFAULT_THRESHOLD_RATIO
}

/// `x × share` rounded down, with a one-millionth nudge so that a product
/// such as 64,000 × 0.85 that lands a hair under an integer in binary floating
/// point still gives that integer; a non-finite or negative product gives 0
/// (float-to-int `as` saturates and maps NaN to 0).
fn scale(x: u64, share: f64) -> u64 {
    (x as f64 * share + 1e-6).floor() as u64
}

impl Threshold {
    /// Computes the threshold for a window (tokens), an output reserve
    /// (`max_tokens`), a ratio and a cap, by the rule in the module doc.
    /// A reserve larger than the window gives an effective window of 0 and
    /// a threshold of 0.
    #[must_use]
    pub fn compute(window: u64, reserved_output: u64, ratio: f64, cap_tokens: u64) -> Self {
        let effective_window = window.saturating_sub(reserved_output);
        let requested = scale(effective_window, ratio);
        let mut t = requested.max(THRESHOLD_FLOOR);
        if t >= effective_window {
            t = effective_window / 100 * SMALL_WINDOW_PERCENT
                + effective_window % 100 * SMALL_WINDOW_PERCENT / 100;
        }
        Self {
            ratio,
            requested,
            effective: t.min(cap_tokens),
        }
    }

    /// Why the value in force differs from the requested one, given the
    /// effective window it was computed for (`window − reserved_output`).
    #[must_use]
    pub fn adjustment(&self, effective_window: u64) -> Adjustment {
        let small = effective_window / 100 * SMALL_WINDOW_PERCENT
            + effective_window % 100 * SMALL_WINDOW_PERCENT / 100;
        if self.effective == self.requested {
            Adjustment::None
        } else if self.effective == small {
            Adjustment::SmallWindow
        } else if self.effective == THRESHOLD_FLOOR && self.effective > self.requested {
            Adjustment::Floor
        } else {
            Adjustment::Capped
        }
    }

    /// The value in force as a whole percentage of the effective window
    /// (0 for an empty window).
    #[must_use]
    pub fn percent_of(&self, effective_window: u64) -> u64 {
        if effective_window == 0 {
            return 0;
        }
        (self.effective * 100 + effective_window / 2) / effective_window
    }

    /// [`Threshold::compute`] with [`ThresholdSettings`].
    #[must_use]
    pub fn from_settings(window: u64, reserved_output: u64, settings: ThresholdSettings) -> Self {
        Self::compute(window, reserved_output, settings.ratio, settings.cap_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default(window: u64, reserved: u64) -> Threshold {
        Threshold::compute(window, reserved, DEFAULT_THRESHOLD_RATIO, DEFAULT_THRESHOLD_CAP)
    }

    #[test]
    fn window_64k_at_half_uses_85_percent_of_the_effective_window() {
        let t = Threshold::compute(64_000, 0, 0.5, DEFAULT_THRESHOLD_CAP);
        assert_eq!(t.requested, 32_000);
        assert_eq!(t.effective, 54_400);
        let t = Threshold::compute(64_000, 8_192, 0.5, DEFAULT_THRESHOLD_CAP);
        assert_eq!(t.requested, 27_904);
        assert_eq!(t.effective, 47_436); // floor(55,808 × 0.85)
    }

    #[test]
    fn window_of_a_million_is_capped() {
        let t = default(1_000_000, 8_192);
        assert_eq!(t.requested, 743_856);
        assert_eq!(t.effective, 256_000);
    }

    #[test]
    fn small_window_takes_85_percent() {
        let t = default(8_192, 2_048);
        assert_eq!(t.requested, 4_608);
        assert_eq!(t.effective, 5_222); // floor(6,144 × 0.85)
        // The embedded model's window and default reserve.
        let t = default(8_192, 512);
        assert_eq!(t.requested, 5_760);
        assert_eq!(t.effective, 6_528); // 7,680 × 0.85
    }

    #[test]
    fn mid_window_is_raised_to_the_floor() {
        let t = default(128_000, 8_192);
        assert_eq!(t.requested, 89_856);
        assert_eq!(t.effective, 89_856);
        let t = Threshold::compute(128_000, 8_192, 0.3, DEFAULT_THRESHOLD_CAP);
        assert_eq!(t.requested, 35_942);
        assert_eq!(t.effective, 64_000);
    }

    #[test]
    fn each_adjustment_is_named() {
        let t = default(8_192, 2_048);
        assert_eq!(t.adjustment(6_144), Adjustment::SmallWindow);
        assert_eq!(t.percent_of(6_144), 85);
        let t = Threshold::compute(128_000, 8_192, 0.3, DEFAULT_THRESHOLD_CAP);
        assert_eq!(t.adjustment(119_808), Adjustment::Floor);
        let t = default(1_000_000, 8_192);
        assert_eq!(t.adjustment(991_808), Adjustment::Capped);
        let t = default(128_000, 8_192);
        assert_eq!(t.adjustment(119_808), Adjustment::None);
        assert_eq!(t.percent_of(119_808), 75);
        // Asking for more than the window is held at 85 % of it.
        let t = Threshold::compute(128_000, 8_192, 1.5, DEFAULT_THRESHOLD_CAP);
        assert_eq!(t.adjustment(119_808), Adjustment::SmallWindow);
        assert_eq!(t.percent_of(119_808), 85);
        assert_eq!(default(4_000, 8_192).percent_of(0), 0);
    }

    #[test]
    fn user_cap_below_the_floor_wins() {
        let t = Threshold::compute(200_000, 8_192, 0.75, 50_000);
        assert_eq!(t.effective, 50_000);
    }

    #[test]
    fn reserve_larger_than_window_gives_zero() {
        let t = default(4_000, 8_192);
        assert_eq!((t.requested, t.effective), (0, 0));
    }

    /// The manual's worked examples (`window − reserved → threshold`, in
    /// `docs/compression.md`) are what the code computes, and the rule it
    /// states is the one in the module doc: 85 % only when the floor
    /// reaches the window.
    #[test]
    fn the_manual_examples_are_what_the_code_computes() {
        let page = include_str!("../../docs/compression.md");
        let start = page.find("The threshold is 75 %").unwrap();
        let end = start + page[start..].find("`strata context` shows").unwrap();
        let text = page[start..end].split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains("raised to 64,000 tokens when lower"), "{text}");
        assert!(text.contains("When that reaches the effective window"), "{text}");
        let number = |s: &str| s.replace(',', "").parse::<u64>().unwrap();
        let example = regex::Regex::new(r"([\d,]+) − ([\d,]+) → ([\d,]+)").unwrap();
        let examples: Vec<_> = example
            .captures_iter(&text)
            .map(|c| (number(&c[1]), number(&c[2]), number(&c[3])))
            .collect();
        assert_eq!(examples.len(), 5, "{text}");
        for (window, reserved, threshold) in examples {
            assert_eq!(
                default(window, reserved).effective,
                threshold,
                "{window} − {reserved}"
            );
        }
    }

    #[test]
    fn serialises_requested_and_effective_only() {
        let json = serde_json::to_value(default(128_000, 8_192)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"requested": 89_856, "effective": 89_856})
        );
    }
}
