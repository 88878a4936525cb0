//! What compression tells the user, as values: why automatic compression
//! is paused ([`LockReason`]) and what a compression warns about
//! ([`CompressWarning`]). The words, and the commands they point at (`/new`
//! in the app, `strata chat --new` at the command line), belong to each
//! client's renderer; nothing here is a sentence.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why automatic compression is paused: [`STRIKES_TO_LOCK`] strikes, or as
/// many fallback summaries in a row. A reading that fits lifts it; a manual
/// compression still runs.
///
/// Stored (in the engine's state JSON) as its snake-case name; the
/// sentence an older strata stored in its place is read back as the
/// variant it described, or as [`LockReason::Other`].
///
/// [`STRIKES_TO_LOCK`]: super::engine::STRIKES_TO_LOCK
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockReason {
    /// Compressions in a row found nothing outside the protected messages.
    NothingToCompress,
    /// Compressions in a row would have saved under 10 % of the context.
    UnderTenPercent,
    /// Compressions in a row would not have saved anything (the summary
    /// as large as what it replaces).
    NoSaving,
    /// Preflight passes in a row made no progress.
    NoProgress,
    /// Compressions in a row left the context at or above the threshold.
    StillOverThreshold,
    /// The summariser failed twice in a row and fallback summaries were used.
    FallbacksInRow,
    /// A stored reason this strata does not know: the clause as stored.
    Other(String),
}

/// Stored names, and the clause an older strata stored for each.
const NAMES: [(LockReason, &str, &str); 6] = [
    (
        LockReason::NothingToCompress,
        "nothing_to_compress",
        "compressions in a row found nothing outside the protected messages",
    ),
    (
        LockReason::UnderTenPercent,
        "under_ten_percent",
        "compressions in a row would have saved under 10% of the context",
    ),
    (
        LockReason::NoSaving,
        "no_saving",
        "compressions in a row would not have saved anything",
    ),
    (
        LockReason::NoProgress,
        "no_progress",
        "compressions in a row made no progress",
    ),
    (
        LockReason::StillOverThreshold,
        "still_over_threshold",
        "compressions in a row left the context at or above the threshold",
    ),
    (
        LockReason::FallbacksInRow,
        "fallbacks_in_row",
        "the summariser failed twice in a row and fallback summaries were used",
    ),
];

/// How an older strata began the sentence it stored.
const LEGACY_PREFIX: &str = "Automatic compression is paused: ";

impl LockReason {
    /// The stored name (`nothing_to_compress`, ...); an unknown stored
    /// reason's own text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        if let Self::Other(text) = self {
            return text;
        }
        NAMES
            .iter()
            .find(|(reason, _, _)| reason == self)
            .map_or("", |(_, name, _)| name)
    }

    /// The reason a stored value stands for: a name of [`LockReason::as_str`],
    /// or the sentence an older strata stored ("Automatic compression is
    /// paused: {clause}; start a new session ..."), matched by its clause.
    /// Anything else is kept as [`LockReason::Other`] (the clause when the
    /// sentence has the old shape, else the whole text).
    #[must_use]
    pub fn parse(stored: &str) -> Self {
        if let Some((reason, _, _)) = NAMES.iter().find(|(_, name, _)| *name == stored) {
            return reason.clone();
        }
        let Some(rest) = stored.strip_prefix(LEGACY_PREFIX) else {
            return Self::Other(stored.to_owned());
        };
        if let Some((reason, _, _)) = NAMES.iter().find(|(_, _, clause)| rest.starts_with(clause)) {
            return reason.clone();
        }
        let clause = rest.split(['.', ';']).next().unwrap_or(rest).trim();
        Self::Other(clause.to_owned())
    }
}

impl Serialize for LockReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for LockReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(deserializer)?))
    }
}

/// A problem that did not stop a compression, for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompressWarning {
    /// The new summary is less than half the earlier summary it updates,
    /// so some earlier facts may be gone; undoing the compaction brings
    /// the earlier one back.
    SummaryShrank {
        /// Tokens of the new summary.
        tokens: u64,
        /// Tokens of the earlier summary.
        earlier: u64,
    },
    /// The summariser failed; a fallback summary extracted without a
    /// model was used.
    Fallback {
        /// What failed, as the summariser's error said it.
        why: String,
    },
    /// A dry run did not call the model; the summary shown is the
    /// extractive stand-in.
    DryRunStandIn,
    /// The summariser is the session's model, and its request (the
    /// summary prompt plus twice the target as output) would not fit that
    /// model's window: the extractive summariser wrote the summary instead
    /// of a request the server would refuse.
    SummariserWindow {
        /// Tokens the summariser's request needs: prompt and output.
        needed: u64,
        /// The model's context window, in tokens.
        window: u64,
    },
    /// A model summary was asked for a session on the embedded model,
    /// which cannot summarise; the extractive summariser wrote it.
    EmbeddedExtractive,
    /// A chosen cut ([`Cut`](super::Cut)) moved to a turn boundary: the
    /// summary covers the messages up to position `landed` instead of
    /// `asked` (positions count from 1 among the active messages).
    CutMoved {
        /// Position of the last message asked to be summarised.
        asked: usize,
        /// Position of the last message the summary covers.
        landed: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_json() {
        for (reason, name, _) in NAMES {
            let json = serde_json::to_string(&reason).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<LockReason>(&json).unwrap(), reason);
        }
        let other = LockReason::Other("a reason from elsewhere".into());
        let json = serde_json::to_string(&other).unwrap();
        assert_eq!(serde_json::from_str::<LockReason>(&json).unwrap(), other);
    }

    #[test]
    fn sentences_an_older_strata_stored_are_read_as_their_reason() {
        let both = "Automatic compression is paused: compressions in a row made no progress; start a new session (/new, or `strata chat --new`) or compress by hand (/compress <topic>, or `strata compress ID --topic T`).";
        assert_eq!(LockReason::parse(both), LockReason::NoProgress);
        let first = "Automatic compression is paused: the summariser failed twice in a row and fallback summaries were used. Start a new session with /new, or compress by hand with /compress <topic>.";
        assert_eq!(LockReason::parse(first), LockReason::FallbacksInRow);
        let unknown = "Automatic compression is paused: the moon is full; start a new session (/new).";
        assert_eq!(
            LockReason::parse(unknown),
            LockReason::Other("the moon is full".into())
        );
    }
}
