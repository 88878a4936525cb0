//! Percentiles of timing samples for the plain benchmark programs.

#![allow(dead_code)]

use std::time::Duration;

/// `p50 · p95 · max` of `samples`, in milliseconds, with their number.
pub fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort_unstable();
    let at = |p: usize| samples[(samples.len() * p / 100).min(samples.len() - 1)];
    format!(
        "p50 {:.2} ms · p95 {:.2} ms · max {:.2} ms ({} samples)",
        at(50).as_secs_f64() * 1e3,
        at(95).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3,
        samples.len()
    )
}
