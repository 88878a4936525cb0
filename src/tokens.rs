//! Layer 1 (pure): token accounting. One estimator for everything that shows
//! or decides on a token count: the context pane, the compression trigger,
//! the tail walk and `strata context`.
//!
//! No I/O. The BPE tables ship inside the `tiktoken-rs` crate.

mod counter;

pub use counter::{Encoding, TiktokenCounter, TokenCounter};
