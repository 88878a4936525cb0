//! The protected head and tail of a history and the middle between them
//! (DESIGN §7 phase 2).
//!
//! Head: the leading system messages plus the first three other messages;
//! after a first compaction (an active summary exists) the system messages
//! only. A message larger than the tail budget is never protected by its
//! position alone, and the head never ends inside a tool group or between a
//! user message and its reply (it shrinks instead).
//!
//! Tail: walk back from the end while the tokens fit the budget; one message
//! may overshoot it up to 1.5× rather than be cut; at least
//! [`min_tail_messages`] messages unless one of them alone exceeds 1.5× the
//! budget, or taking it would bring the tail past 2.5× the budget (half the
//! threshold: on a small window a few long messages would otherwise fill
//! the tail, leave nothing to summarise, and the pipeline would leave the
//! older turns out instead). Then the last real user message and the last visible assistant
//! reply are pulled in, and the start moves back until it neither begins
//! with a tool result nor separates a user message from its reply.
//!
//! A message over 1.5× the budget is pulled in by none of these once it is
//! no longer the newest request (a reply answers it): the tail never grows
//! past what fits, so a huge paste is summarised like any older turn, its
//! reply kept in the tail when that fits.
//!
//! [`cut`]: a tail the user chose instead of the budget (keep the last N
//! exchanges, or summarise up to a selected message).
//!
//! Works on indexes into the caller's history; pure.

use super::{is_real_user, is_visible_assistant};
use crate::domain::{Message, MessageKind, Role};
use std::ops::Range;

pub mod cut;

pub use cut::{Cut, cut_boundaries};

/// Non-system messages protected at the head before a first compaction.
pub const HEAD_MESSAGES: usize = 3;

/// Where the protected head ends and the protected tail starts, as indexes
/// into the history: head `0..head_end`, middle `head_end..tail_start`,
/// tail `tail_start..`. `head_end <= tail_start` always.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boundaries {
    /// One past the last head message.
    pub head_end: usize,
    /// The first tail message.
    pub tail_start: usize,
}

impl Boundaries {
    /// The indexes of the middle (what may be summarised).
    #[must_use]
    pub fn middle(&self) -> Range<usize> {
        self.head_end..self.tail_start
    }

    /// Whether there is nothing between head and tail.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.head_end >= self.tail_start
    }
}

/// The minimum tail length in messages: `max(3, min(protect_last_n, 8))`.
#[must_use]
pub fn min_tail_messages(protect_last_n: usize) -> usize {
    protect_last_n.clamp(3, 8)
}

/// Computes head and tail for `history` with per-message `tokens` (same
/// length), a tail budget in tokens (20 % of the effective threshold) and
/// the configured `protect_last_n`. See the module doc for the rules.
#[must_use]
pub fn find_boundaries(
    history: &[Message],
    tokens: &[u32],
    tail_budget: u64,
    protect_last_n: usize,
) -> Boundaries {
    find_boundaries_with(history, tokens, tail_budget, protect_last_n, false)
}

/// [`find_boundaries`], or with `minimum_only` the smallest tail the rules
/// allow: the minimum message count (still skipping a message over 1.5×
/// the budget) and the forced inclusions, without filling the token budget.
/// A forced `/compress` uses it when the budgeted tail leaves no middle.
#[must_use]
pub fn find_boundaries_with(
    history: &[Message],
    tokens: &[u32],
    tail_budget: u64,
    protect_last_n: usize,
    minimum_only: bool,
) -> Boundaries {
    find_boundaries_sent(history, tokens, &[], tail_budget, protect_last_n, minimum_only)
}

/// [`find_boundaries_with`] knowing which messages the next request leaves
/// out to fit (`dropped`, same order; empty when not known): those are
/// never protected, at the start or the end — keeping them verbatim would
/// keep nothing, while summarising them keeps what they said.
#[must_use]
pub fn find_boundaries_sent(
    history: &[Message],
    tokens: &[u32],
    dropped: &[bool],
    tail_budget: u64,
    protect_last_n: usize,
    minimum_only: bool,
) -> Boundaries {
    let n = history.len();
    let dropped = |i: usize| dropped.get(i).copied().unwrap_or(false);
    let head_end = head_end(history, tokens, tail_budget, &dropped);
    let mut start = n;
    let mut used = 0u64;
    let mut overshot = false;
    let hard = tail_budget.saturating_mul(3) / 2;
    let minimum_cap = tail_budget.saturating_mul(5) / 2;
    let min_tail = min_tail_messages(protect_last_n);
    while start > head_end && !dropped(start - 1) {
        let t = u64::from(tokens[start - 1]);
        let within = !minimum_only && used + t <= tail_budget;
        let overshoot = !minimum_only && !overshot && used + t <= hard;
        let for_minimum = n - start < min_tail && t <= hard && used + t <= minimum_cap;
        if !(within || overshoot || for_minimum) {
            break;
        }
        overshot |= !within;
        used += t;
        start -= 1;
    }
    if start == n && n > head_end {
        start = n - 1;
    }
    // The newest request stays whatever its size; a message too large to
    // protect is pulled in by nothing else.
    let last_user = history.iter().rposition(is_real_user);
    let answered = |u: usize| {
        history[u + 1..]
            .iter()
            .any(|m| m.role == Role::Assistant && m.tool_calls.is_empty() && is_visible_assistant(m))
    };
    let forced = [
        last_user.filter(|&u| u64::from(tokens[u]) <= hard || !answered(u)),
        history
            .iter()
            .rposition(is_visible_assistant)
            .filter(|&a| u64::from(tokens[a]) <= hard),
    ];
    for must in forced.into_iter().flatten() {
        if must >= head_end {
            start = start.min(must);
        }
    }
    while start > head_end && start < n {
        let here = history[start].role;
        let before = history[start - 1].role;
        let splits_group = here == Role::Tool;
        // A reply stays with its question, unless the question is too
        // large to protect: it is summarised, the reply kept.
        let splits_turn = before == Role::User
            && matches!(here, Role::Assistant | Role::Tool)
            && (u64::from(tokens[start - 1]) <= hard || Some(start - 1) == last_user && !answered(start - 1));
        if splits_group || splits_turn {
            start -= 1;
        } else {
            break;
        }
    }
    Boundaries {
        head_end,
        tail_start: start.max(head_end),
    }
}

fn head_end(history: &[Message], tokens: &[u32], tail_budget: u64, dropped: &dyn Fn(usize) -> bool) -> usize {
    let n = history.len();
    let system = history.iter().take_while(|m| m.role == Role::System).count();
    if history.iter().any(|m| m.kind == MessageKind::Summary) {
        return system;
    }
    let mut end = system;
    let mut taken = 0;
    while end < n && taken < HEAD_MESSAGES && u64::from(tokens[end]) <= tail_budget && !dropped(end) {
        if history[end].role != Role::System {
            taken += 1;
        }
        end += 1;
    }
    while end > system && end < n {
        let last = &history[end - 1];
        let next = history[end].role;
        let inside_group = next == Role::Tool || !last.tool_calls.is_empty();
        let before_reply = last.role == Role::User && matches!(next, Role::Assistant | Role::Tool);
        if inside_group || before_reply {
            end -= 1;
        } else {
            break;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::SessionId;

    fn history(roles: &[Role]) -> Vec<Message> {
        let s = SessionId::new();
        roles
            .iter()
            .enumerate()
            .map(|(i, r)| Message::new(s, *r, format!("m{i}"), 0))
            .collect()
    }

    #[test]
    fn head_is_system_plus_three_and_does_not_end_before_a_reply() {
        use Role::{Assistant as A, System as S, User as U};
        let h = history(&[S, U, A, U, A, U, A, U, A, U, A, U, A]);
        let b = find_boundaries(&h, &[10; 13], 30, 3);
        assert_eq!(b.head_end, 3, "S U A; the third (U) is followed by its reply");
        assert_eq!(b.tail_start, 9, "three fit, a fourth overshoots");
    }

    #[test]
    fn the_minimum_tail_count_stops_at_two_and_a_half_budgets() {
        use Role::{Assistant as A, User as U};
        // A 3,072-token server: a tail budget of 391, turns of ~500 tokens.
        let h = history(&[U, A, U, A, U, A, U, A, U]);
        let tokens = [500, 300, 500, 300, 500, 300, 500, 300, 500];
        let b = find_boundaries(&h, &tokens, 391, 6);
        // The last user message overshoots, its predecessor's reply fits
        // under 2.5 budgets (977), and the turn is kept whole.
        assert_eq!(b.tail_start, 6, "{b:?}");
        assert!(!b.is_empty(), "older turns are left to summarise");
        // Small messages still get the minimum count: six, then the turn
        // the sixth answers.
        let b = find_boundaries(&h, &[4; 9], 10, 6);
        assert_eq!(b.tail_start, 2, "{b:?}");
    }

    #[test]
    fn tail_overshoots_once_rather_than_cutting() {
        use Role::{Assistant as A, User as U};
        let h = history(&[U, A, U, A, U, A, U, A, U, A]);
        let tokens = [10, 10, 10, 10, 10, 10, 10, 10, 14, 10];
        // budget 20: 10 fits, 14 overshoots to 24 <= 30, then stop; minimum 3 adds one more.
        let b = find_boundaries(&h, &tokens, 20, 3);
        assert_eq!(b.tail_start, 6);
    }

    #[test]
    fn a_message_too_large_to_protect_leaves_the_tail_once_answered() {
        use Role::{Assistant as A, User as U};
        // A question, a huge paste, its reply, then another exchange.
        let h = history(&[U, A, U, A, U, A]);
        let tokens = [10, 10, 10_000, 10, 10, 10];
        let b = find_boundaries(&h, &tokens, 100, 3);
        assert_eq!(
            (b.head_end, b.tail_start),
            (2, 3),
            "the paste alone is summarised: {b:?}"
        );
        // Answered and the newest: the same.
        let b = find_boundaries(&h[..4], &tokens[..4], 100, 3);
        assert_eq!((b.head_end, b.tail_start), (2, 3), "{b:?}");
        // Not answered yet, it is the request being made: it stays.
        let b = find_boundaries(&h[..3], &tokens[..3], 100, 3);
        assert_eq!((b.head_end, b.tail_start), (2, 2), "{b:?}");
    }
}
