//! Boundaries the user chooses instead of the tail budget: keep the last N
//! exchanges verbatim (`/compress here N`, `strata compress --keep-last N`)
//! or summarise up to a selected message ("compress up to here",
//! `strata compress --up-to MSG`).
//!
//! An exchange is a real user message and everything up to the next real
//! user message. The protected head stays as [`find_boundaries`] finds it.
//! The tail always starts at a turn boundary: "up to here" moves forward to
//! the end of the selected message's exchange, so no tool call is parted
//! from its results and no request from its reply. The last real user
//! message and the last visible assistant reply always stay in the tail; a
//! cut that would summarise them moves back (and a [`CompressWarning::CutMoved`]
//! says where it landed). Pure; works on indexes into the caller's history.
//!
//! [`find_boundaries`]: super::find_boundaries

use super::super::notices::CompressWarning;
use super::super::{CompressError, is_real_user, is_visible_assistant};
use super::{Boundaries, head_end};
use crate::domain::{Message, MessageId, Role};

/// Where the user ends the summarised range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Keep exactly the last N exchanges verbatim (N ≥ 1); everything
    /// before them, after the protected head, is summarised.
    KeepLast(usize),
    /// Summarise this message and everything before it (after the
    /// protected head); keep everything after its exchange verbatim.
    UpTo(MessageId),
}

/// The boundaries for `cut` over `history` (per-message `tokens`, the tail
/// budget only decides the head as [`find_boundaries`](super::find_boundaries)
/// does), and a warning when the cut had to move. Positions in the warning
/// count from 1 in `history`.
///
/// # Errors
/// [`CompressError::KeepNothing`] for `KeepLast(0)`;
/// [`CompressError::CutNotFound`] when the `UpTo` message is not in
/// `history`; [`CompressError::NothingBeforeCut`] when nothing outside the
/// protected head lies before the cut (fewer exchanges than asked to keep,
/// or a message inside the head).
pub fn cut_boundaries(
    history: &[Message],
    tokens: &[u32],
    tail_budget: u64,
    cut: Cut,
) -> Result<(Boundaries, Option<CompressWarning>), CompressError> {
    let n = history.len();
    let head_end = head_end(history, tokens, tail_budget, &|_| false);
    // `asked`: where the tail would start; `asked_last`: the position
    // (from 1) of the last message the user asked to summarise.
    let (asked, asked_last) = match cut {
        Cut::KeepLast(0) => return Err(CompressError::KeepNothing),
        Cut::KeepLast(keep) => {
            let users: Vec<usize> = (0..n).filter(|&i| is_real_user(&history[i])).collect();
            if users.len() <= keep {
                return Err(CompressError::NothingBeforeCut);
            }
            let start = users[users.len() - keep];
            (start, start)
        }
        Cut::UpTo(id) => {
            let at = history
                .iter()
                .position(|m| m.id == id)
                .ok_or(CompressError::CutNotFound)?;
            // The end of the selected message's exchange.
            let end = (at + 1..n).find(|&i| is_real_user(&history[i])).unwrap_or(n);
            (end, at + 1)
        }
    };
    let mut start = asked;
    for must in [
        history.iter().rposition(is_real_user),
        history.iter().rposition(is_visible_assistant),
    ]
    .into_iter()
    .flatten()
    {
        start = start.min(must);
    }
    if start < asked {
        while start > head_end && start < n && splits(history, start) {
            start -= 1;
        }
    }
    if start <= head_end {
        return Err(CompressError::NothingBeforeCut);
    }
    let warning = (start != asked_last).then_some(CompressWarning::CutMoved {
        asked: asked_last,
        landed: start,
    });
    Ok((
        Boundaries {
            head_end,
            tail_start: start,
        },
        warning,
    ))
}

/// Whether a tail starting at `start` would begin with a tool result or
/// separate a user message from its reply.
fn splits(history: &[Message], start: usize) -> bool {
    let here = history[start].role;
    let before = history[start - 1].role;
    here == Role::Tool || (before == Role::User && matches!(here, Role::Assistant | Role::Tool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SessionId, ToolCall};

    fn history(roles: &[Role]) -> Vec<Message> {
        let s = SessionId::new();
        roles
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut m = Message::new(s, *r, format!("m{i}"), 0);
                m.seq = i as i64 + 1;
                m
            })
            .collect()
    }

    use Role::{Assistant as A, Tool as T, User as U};

    #[test]
    fn keep_last_starts_the_tail_at_the_nth_last_request() {
        let h = history(&[U, A, U, A, U, A, U, A, U, A, U, A]);
        let (b, moved) = cut_boundaries(&h, &[10; 12], 1_000, Cut::KeepLast(2)).unwrap();
        assert_eq!(b.tail_start, 8, "the last two exchanges are U A U A");
        assert_eq!(b.head_end, 2, "U A: the third (U) is followed by its reply");
        assert_eq!(moved, None);
        let (b, _) = cut_boundaries(&h, &[10; 12], 1_000, Cut::KeepLast(4)).unwrap();
        assert_eq!(b.tail_start, 4);
    }

    #[test]
    fn keeping_every_exchange_or_none_is_refused() {
        let h = history(&[U, A, U, A, U, A]);
        let err = cut_boundaries(&h, &[10; 6], 1_000, Cut::KeepLast(3)).unwrap_err();
        assert_eq!(err, CompressError::NothingBeforeCut);
        let err = cut_boundaries(&h, &[10; 6], 1_000, Cut::KeepLast(0)).unwrap_err();
        assert_eq!(err, CompressError::KeepNothing);
        // The head (the first three messages) is never summarised.
        let err = cut_boundaries(&h, &[10; 6], 1_000, Cut::KeepLast(2)).unwrap_err();
        assert_eq!(err, CompressError::NothingBeforeCut);
    }

    #[test]
    fn up_to_a_request_summarises_its_whole_exchange_with_tool_calls() {
        let mut h = history(&[U, A, U, A, U, A, T, T, A, U, A, U, A]);
        h[5].tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        }];
        let selected = h[4].id;
        let (b, moved) = cut_boundaries(&h, &[10; 13], 1_000, Cut::UpTo(selected)).unwrap();
        assert_eq!(
            b.tail_start, 9,
            "the calls, results and the reply go with the request"
        );
        assert_eq!(moved, Some(CompressWarning::CutMoved { asked: 5, landed: 9 }));
        // Selecting the exchange's last message needs no move.
        let (b, moved) = cut_boundaries(&h, &[10; 13], 1_000, Cut::UpTo(h[8].id)).unwrap();
        assert_eq!((b.tail_start, moved), (9, None));
    }

    #[test]
    fn up_to_the_last_request_keeps_it_and_its_reply() {
        let h = history(&[U, A, U, A, U, A, U, A, U, A]);
        let (b, moved) = cut_boundaries(&h, &[10; 10], 1_000, Cut::UpTo(h[9].id)).unwrap();
        assert_eq!(b.tail_start, 8);
        assert_eq!(moved, Some(CompressWarning::CutMoved { asked: 10, landed: 8 }));
        let stranger = Message::new(SessionId::new(), U, "x", 0);
        let err = cut_boundaries(&h, &[10; 10], 1_000, Cut::UpTo(stranger.id)).unwrap_err();
        assert_eq!(err, CompressError::CutNotFound);
        let err = cut_boundaries(&h, &[10; 10], 1_000, Cut::UpTo(h[1].id)).unwrap_err();
        assert_eq!(err, CompressError::NothingBeforeCut, "inside the head");
    }
}
