//! Identifier newtypes. All are UUIDv7 (time-ordered), printed in the
//! hyphenated lower-case form and stored as TEXT; a session also has a
//! short id for people to read and type ([`SessionId::short`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A new time-ordered (UUIDv7) id.
            #[must_use]
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// The underlying UUID.
            #[must_use]
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s.trim()).map(Self)
            }
        }

        impl From<Uuid> for $name {
            fn from(u: Uuid) -> Self {
                Self(u)
            }
        }
    };
}

id_type!(
    /// Identifies a chat session.
    SessionId
);
/// Characters in a session's short id ([`SessionId::short`]).
pub const SHORT_ID_LEN: usize = 8;

impl SessionId {
    /// The id as people read and type it: its last [`SHORT_ID_LEN`] hex
    /// characters (`0190c3a0-…-5e6f1a2b3c4d` → `1a2b3c4d`).
    ///
    /// Why the end: a UUIDv7 starts with its creation time in milliseconds
    /// (the first 8 characters change only every 65 seconds), followed by
    /// a 42-bit counter that is random at each new millisecond but counts
    /// up by one within it; the last 32 bits are random for every id. Two
    /// sessions made in the same minute therefore share their first 8
    /// characters but not their last 8. With 32 random bits, two of 1,000
    /// sessions share a short id with a chance of about 1 in 8,600, two of
    /// 10,000 with about 1 in 86; the lookup then names both, and the full
    /// id still tells them apart.
    #[must_use]
    pub fn short(&self) -> String {
        let bytes = self.0.as_bytes();
        let tail = u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
        format!("{tail:08x}")
    }
}

id_type!(
    /// Identifies one stored message.
    MessageId
);
id_type!(
    /// Identifies one version of a session's frozen system prompt.
    PromptId
);
id_type!(
    /// Identifies one compaction (a compression of part of a session).
    CompactionId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_id_is_the_random_end_of_the_id() {
        let id: SessionId = "0190c3a0-1b2c-7d3e-8f40-5e6f1a2b3c4d".parse().unwrap();
        assert_eq!(id.short(), "1a2b3c4d");
        assert!(id.to_string().ends_with(&id.short()));
        let zeros: SessionId = "0190c3a0-0000-7000-8000-000000000001".parse().unwrap();
        assert_eq!(zeros.short(), "00000001");
    }

    #[test]
    fn sessions_made_together_have_different_short_ids() {
        let ids: Vec<SessionId> = (0..100).map(|_| SessionId::new()).collect();
        // They share the time prefix that lists used to show...
        let first = ids[0].to_string();
        assert!(ids.iter().filter(|id| id.to_string()[..8] == first[..8]).count() > 1);
        // ...but not their short ids.
        let shorts: std::collections::HashSet<String> = ids.iter().map(SessionId::short).collect();
        assert_eq!(shorts.len(), ids.len());
        assert!(shorts.iter().all(|s| s.len() == SHORT_ID_LEN));
    }
}
