//! Counting many texts on every core: a cold history (nothing counted yet:
//! an import, a first `strata context`, the first compression of a session
//! counted under another tokenizer) is split into contiguous runs of about
//! equal size, one per core, counted at once and put back in order. The
//! counters are `Send + Sync` and keep no state a count depends on, so the
//! result is the same as counting on one thread.
//!
//! Threads are the standard library's scoped threads; the number of cores
//! is asked of the system once per process.

use std::sync::OnceLock;

/// Less than this many bytes to count in all is counted on the calling
/// thread: starting a thread costs tens of microseconds, counting this much
/// takes about 10 ms.
pub const PARALLEL_MIN_BYTES: usize = 256 * 1024;

/// Most threads one call counts on.
pub const MAX_THREADS: usize = 8;

/// The machine's cores (as the process may use them), at most
/// [`MAX_THREADS`]; 1 when the system does not say.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(MAX_THREADS)
    })
}

/// Where each of `threads` runs of `weights` ends (contiguous, about equal
/// weight, none empty unless there are fewer items than threads).
fn run_ends(weights: &[usize], threads: usize) -> Vec<usize> {
    let total: usize = weights.iter().sum();
    let mut ends = Vec::with_capacity(threads);
    let mut acc = 0usize;
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        // The run ends here once it holds its share of the total.
        if ends.len() + 1 < threads && acc.saturating_mul(threads) >= total.saturating_mul(ends.len() + 1) {
            ends.push(i + 1);
        }
    }
    ends.push(weights.len());
    ends.dedup();
    ends
}

/// `f(item)` for each of `items`, in order, on up to one thread per core
/// when the `weight`s (bytes to count; 0 for an item answered without
/// counting) add up to [`PARALLEL_MIN_BYTES`] or more, else on the calling
/// thread, which also takes the first run. A thread that cannot be started
/// leaves its run to the calling thread; a panic in `f` is passed on.
pub fn map_each<T: Sync, R: Send>(
    items: &[T],
    weight: impl Fn(&T) -> usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let weights: Vec<usize> = items.iter().map(weight).collect();
    let total: usize = weights.iter().sum();
    let threads = if total >= PARALLEL_MIN_BYTES { cores() } else { 1 };
    if threads <= 1 || items.len() < 2 {
        return items.iter().map(&f).collect();
    }
    let ends = run_ends(&weights, threads);
    let f = &f;
    std::thread::scope(|scope| {
        let mut start = ends[0];
        let mut others = Vec::with_capacity(ends.len().saturating_sub(1));
        for &end in &ends[1..] {
            let run = &items[start..end];
            let spawned = std::thread::Builder::new()
                .name("strata-count".to_owned())
                .spawn_scoped(scope, move || run.iter().map(f).collect::<Vec<R>>());
            others.push(spawned.map_err(|_| run));
            start = end;
        }
        let mut out: Vec<R> = items[..ends[0]].iter().map(f).collect();
        for other in others {
            match other {
                Ok(handle) => match handle.join() {
                    Ok(run) => out.extend(run),
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                Err(run) => out.extend(run.iter().map(f)),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_every_item_in_order_with_about_equal_weight() {
        assert_eq!(run_ends(&[1, 1, 1, 1], 2), [2, 4]);
        assert_eq!(run_ends(&[10, 0, 0, 1, 1, 1], 2), [1, 6]);
        assert_eq!(run_ends(&[0, 0, 0], 2), [1, 3], "no weight: still two runs");
        assert_eq!(run_ends(&[5], 4), [1]);
        assert_eq!(run_ends(&[], 2), [0]);
        assert_eq!(run_ends(&[1, 1, 1, 1, 1, 1], 3), [2, 4, 6]);
    }

    #[test]
    fn results_are_in_order_on_many_threads_and_on_one() {
        let big: Vec<usize> = (0..1000).map(|i| i * 7).collect();
        let many = map_each(&big, |_| PARALLEL_MIN_BYTES / 100, |n| n + 1);
        let one = map_each(&big, |_| 0, |n| n + 1);
        let want: Vec<usize> = big.iter().map(|n| n + 1).collect();
        assert_eq!(many, want);
        assert_eq!(one, want);
    }
}
