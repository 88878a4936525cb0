//! Calibration of strata's token estimates against what the provider counted
//! (DESIGN §5): the ratio `prompt_tokens / estimate`, smoothed per session.

/// Weight of the newest observation in the moving average.
const ALPHA: f64 = 0.3;
/// Ratios outside this range are treated as noise (a wrong model setting, a
/// provider that counts something else) and ignored.
const PLAUSIBLE: std::ops::RangeInclusive<f64> = 0.25..=4.0;

/// A smoothed ratio of provider-counted to estimated prompt tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    ratio: f64,
    observations: u32,
}

impl Default for Calibration {
    fn default() -> Self {
        Self {
            ratio: 1.0,
            observations: 0,
        }
    }
}

impl Calibration {
    /// Learns from `(estimate, actual)` pairs, oldest first.
    #[must_use]
    pub fn from_history(pairs: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut c = Self::default();
        for (estimate, actual) in pairs {
            c.observe(estimate, actual);
        }
        c
    }

    /// Adds one request's estimate and the provider's `prompt_tokens`.
    pub fn observe(&mut self, estimate: u64, actual: u64) {
        if estimate == 0 || actual == 0 {
            return;
        }
        let r = actual as f64 / estimate as f64;
        if !PLAUSIBLE.contains(&r) {
            return;
        }
        self.ratio = if self.observations == 0 {
            r
        } else {
            ALPHA * r + (1.0 - ALPHA) * self.ratio
        };
        self.observations += 1;
    }

    /// The smoothed ratio (1.0 before any observation).
    #[must_use]
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// Number of observations taken.
    #[must_use]
    pub fn observations(&self) -> u32 {
        self.observations
    }

    /// An estimate scaled by the ratio, rounded.
    #[must_use]
    pub fn apply(&self, estimate: u64) -> u64 {
        (estimate as f64 * self.ratio).round() as u64
    }
}
