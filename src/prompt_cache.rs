//! Layer 1 (pure): prompt-cache bookkeeping. Each request is reduced to its
//! cacheable blocks in the provider's order — the tools array, the system
//! prompt's layers, the messages as sent — each a content hash chained onto
//! the one before ([`snapshot`]); two requests share a cached prefix up to
//! the last block where their chains agree. From that and the provider's
//! documented rule ([`crate::domain::CacheRule`]) strata predicts the next
//! request's cache reads ([`predict`]) and, when the prefix broke, names the
//! block and the reason ([`reason`]).
//!
//! Hashes are SHA-256 truncated to 128 bits; a message sent whole is hashed
//! once per process ([`BlockHashes`]), so a request costs one map lookup
//! and one 32-byte hash per block, not a pass over the history.

mod cost;
mod predict;
mod reason;
mod snapshot;

pub use cost::{kept_before, uncached_after};
pub use predict::{Prediction, predict};
pub use reason::{Changes, reason};
pub use snapshot::{BlockHashes, SnapshotInput, snapshot};

#[cfg(test)]
mod tests;
