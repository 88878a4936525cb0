//! `MSG` as `strata pin|unpin|exclude|include ID MSG` (and the app's
//! commands) take it: a position among the session's active messages
//! counting from 1 (the `pos` of `strata show`), a full message id, or a
//! unique prefix of at least [`MIN_MESSAGE_PREFIX`] hex characters of the
//! id or of its last 8 characters (the random end of a UUIDv7; its start is
//! the creation time, shared by messages made together). Input made only
//! of digits is a position. Pure: resolves against the active messages the
//! caller loaded.

use crate::domain::Message;

/// The fewest hex characters an id prefix may have.
pub const MIN_MESSAGE_PREFIX: usize = 4;

/// Characters of a message id's end that a prefix may also match.
const SHORT_LEN: usize = 8;

/// Why `MSG` names no single active message. Not retryable with the same
/// `MSG`; each is one sentence saying what to give instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MessageRefError {
    /// A position outside `1..=count`.
    #[error("there is no message at position {pos}: {}", positions(*count))]
    NoPosition {
        /// The position given, as typed (digits only).
        pos: String,
        /// Active messages in the session.
        count: usize,
    },
    /// Not a position, and too short (or not hex) for an id prefix.
    #[error(
        "'{given}' is neither a position nor a message id; give the position `strata show` prints, the full id, or at least {MIN_MESSAGE_PREFIX} hex characters of it"
    )]
    NotAnId {
        /// What was given.
        given: String,
    },
    /// No active message's id matches.
    #[error(
        "no active message of this session has an id matching '{given}'; give the position `strata show` prints or an id from `strata show --json`"
    )]
    NotFound {
        /// What was given.
        given: String,
    },
    /// Several active messages' ids match.
    #[error(
        "the message id '{given}' matches {count} active messages; give more of its characters, or the position `strata show` prints"
    )]
    Ambiguous {
        /// What was given.
        given: String,
        /// How many match (at least 2).
        count: usize,
    },
}

/// `the session has 12 active messages (positions 1 to 12)`, or that it has none.
fn positions(count: usize) -> String {
    match count {
        0 => "the session has no active messages".to_owned(),
        1 => "the session has 1 active message (position 1)".to_owned(),
        n => format!("the session has {n} active messages (positions 1 to {n})"),
    }
}

/// The index in `active` (the session's active messages in order) of the
/// message `given` names; see the module doc.
///
/// # Errors
/// [`MessageRefError`] when it names none or several.
pub fn resolve(active: &[Message], given: &str) -> Result<usize, MessageRefError> {
    let wanted = given.trim().to_ascii_lowercase();
    if !wanted.is_empty() && wanted.bytes().all(|b| b.is_ascii_digit()) {
        let digits = wanted.trim_start_matches('0');
        return match digits.parse::<usize>() {
            Ok(p) if (1..=active.len()).contains(&p) => Ok(p - 1),
            _ => Err(MessageRefError::NoPosition {
                pos: if digits.is_empty() {
                    "0".to_owned()
                } else {
                    digits.to_owned()
                },
                count: active.len(),
            }),
        };
    }
    if let Ok(id) = wanted.parse::<crate::domain::MessageId>() {
        return active
            .iter()
            .position(|m| m.id == id)
            .ok_or_else(|| MessageRefError::NotFound {
                given: given.trim().to_owned(),
            });
    }
    let hex = wanted.chars().filter(char::is_ascii_hexdigit).count();
    if hex < MIN_MESSAGE_PREFIX || !wanted.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Err(MessageRefError::NotAnId {
            given: given.trim().to_owned(),
        });
    }
    let matches: Vec<usize> = active
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            let id = m.id.to_string();
            id.starts_with(&wanted) || id[id.len() - SHORT_LEN..].starts_with(&wanted)
        })
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => Err(MessageRefError::NotFound {
            given: given.trim().to_owned(),
        }),
        many => Err(MessageRefError::Ambiguous {
            given: given.trim().to_owned(),
            count: many.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Role, SessionId};

    fn with_ids(ids: &[&str]) -> Vec<Message> {
        ids.iter()
            .map(|id| {
                let mut m = Message::new(SessionId::new(), Role::User, "x", 0);
                m.id = id.parse().unwrap();
                m
            })
            .collect()
    }

    #[test]
    fn positions_ids_and_prefixes_resolve() {
        let msgs = with_ids(&[
            "0190c3a0-0000-7000-8000-00001a2b3c4d",
            "0190c3a0-0000-7000-8000-00005e6f7a8b",
            "0190c3a0-0000-7000-8000-00005e6f0000",
        ]);
        assert_eq!(resolve(&msgs, " 2 "), Ok(1));
        assert_eq!(resolve(&msgs, "0190c3a0-0000-7000-8000-00005e6f0000"), Ok(2));
        assert_eq!(resolve(&msgs, "1A2B"), Ok(0));
        assert_eq!(resolve(&msgs, "5e6f7"), Ok(1));
        assert_eq!(
            resolve(&msgs, "5e6f"),
            Err(MessageRefError::Ambiguous {
                given: "5e6f".into(),
                count: 2
            })
        );
        // A shared time prefix matches all of them.
        assert!(matches!(
            resolve(&msgs, "0190c3a0"),
            Err(MessageRefError::Ambiguous { count: 3, .. })
        ));
    }

    #[test]
    fn what_names_nothing_says_what_to_give() {
        let msgs = with_ids(&["0190c3a0-0000-7000-8000-00001a2b3c4d"]);
        let err = resolve(&msgs, "0").unwrap_err();
        assert_eq!(
            err,
            MessageRefError::NoPosition {
                pos: "0".into(),
                count: 1
            }
        );
        assert!(err.to_string().contains("position 1"), "{err}");
        let huge = resolve(&msgs, "99999999999999999999").unwrap_err().to_string();
        assert!(
            huge.contains("position 99999999999999999999:"),
            "said as typed: {huge}"
        );
        assert!(
            resolve(&[], "3")
                .unwrap_err()
                .to_string()
                .contains("no active messages")
        );
        assert!(matches!(
            resolve(&msgs, "ab"),
            Err(MessageRefError::NotAnId { .. })
        ));
        assert!(matches!(
            resolve(&msgs, "last"),
            Err(MessageRefError::NotAnId { .. })
        ));
        assert!(matches!(
            resolve(&msgs, "ffff"),
            Err(MessageRefError::NotFound { .. })
        ));
        let other = "0190c3a0-0000-7000-8000-0000ffffffff";
        assert!(matches!(
            resolve(&msgs, other),
            Err(MessageRefError::NotFound { .. })
        ));
        for e in [resolve(&msgs, "ab"), resolve(&msgs, "ffff")] {
            let text = e.unwrap_err().to_string();
            assert_eq!(text.matches(';').count(), 1, "one sentence: {text}");
        }
    }
}
