//! The reduce (stage 2) and limit (stage 4) stages, and the budgets they
//! share. Both walk whole turns from newest to oldest after the must-keep
//! messages (pinned ones with their tool call units, and the last user
//! message); reduce against the soft limit, limit against the hard one.

use super::memo::{Cut, CutMemo};
use super::truncate::{cut_blocks, cut_tool_result, may_have_blocks, shrink_to_fit};
use super::work::{Fate, Work};
use super::{PrepareError, PrepareInput, SOFT_LIMIT_APPROXIMATE, SOFT_LIMIT_EXACT};
use crate::domain::{MessageKind, Role};
use crate::tokens::{TokenCounter, request_overhead};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The omitted-messages note, whose room is reserved in both budgets.
pub(crate) const OMITTED_NOTE: &str = include_str!("../../assets/prompts/omitted_note.md");

/// Token budgets for the messages of one request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budgets {
    /// Tokens messages may use under the soft limit.
    pub soft: u64,
    /// Tokens messages may use at most.
    pub hard: u64,
    /// `history.max_messages`.
    pub max_messages: Option<usize>,
    /// What the must-keep messages are cut to when they overflow `hard`:
    /// `hard` itself when counts are exact, else `hard` less
    /// [`ESTIMATE_MARGIN`] of it, so that a message "sent cut to fit"
    /// still fits when the provider's tokenizer counts more than the
    /// estimate (about 8 % more was measured against llama.cpp).
    pub cut_room: u64,
}

/// The share of the hard budget kept free when the must-keep messages are
/// cut under an estimating counter: one eighth.
pub const ESTIMATE_MARGIN: f64 = 0.125;

impl Budgets {
    /// Budgets for `input`. The fixed part (system prompt, tool schemas,
    /// output reserve, request overhead and room for the omitted-messages
    /// note) comes off the window first.
    pub fn new(input: &PrepareInput<'_>) -> Result<Self, PrepareError> {
        let fixed = u64::from(input.system_tokens) + input.tool_tokens + input.reserved_output;
        let overhead = u64::from(request_overhead(true)) + note_reserve(input);
        if fixed + overhead >= input.window {
            return Err(PrepareError::WindowTooSmall {
                system: u64::from(input.system_tokens),
                tools: input.tool_tokens,
                reserve: input.reserved_output,
                framing: overhead,
                window: input.window,
            });
        }
        let hard = input.window - fixed - overhead;
        let share = if input.exact {
            SOFT_LIMIT_EXACT
        } else {
            SOFT_LIMIT_APPROXIMATE
        };
        let effective = input.window - input.reserved_output;
        let soft_total = (effective as f64 * share) as u64;
        let soft = soft_total.saturating_sub(fixed - input.reserved_output + overhead);
        let cut_room = if input.exact {
            hard
        } else {
            hard - (hard as f64 * ESTIMATE_MARGIN) as u64
        };
        Ok(Self {
            soft: soft.min(hard),
            hard,
            max_messages: input.max_messages,
            cut_room,
        })
    }
}

/// Tokens of the omitted-messages note for the largest count it can carry;
/// none for a history of one message, which has nothing to omit.
fn note_reserve(input: &PrepareInput<'_>) -> u64 {
    if input.messages.len() < 2 {
        return 0;
    }
    let text = OMITTED_NOTE
        .trim_end()
        .replace("{count}", &input.messages.len().to_string());
    let role = input.counter.count(Role::User.as_str());
    u64::from(crate::tokens::TOKENS_PER_MESSAGE) + (role + input.counter.count(&text)) as u64
}

/// Why a walk stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// Every turn fits.
    AllFit,
    /// The next older turn (or the must-keep messages) exceed the tokens.
    Tokens,
    /// The next older turn would exceed `max_messages`.
    Count,
}

/// A walk over whole turns from newest to oldest. `next` turns
/// (`turns[..next]`) are not included yet; `used` and `count` cover the
/// must-keep messages and the included turns.
struct Walk {
    budget: u64,
    cap: Option<usize>,
    used: u64,
    count: usize,
    next: usize,
}

impl Walk {
    fn new(work: &Work<'_>, budget: u64, cap: Option<usize>) -> Self {
        let (mut used, mut count) = (0u64, 0usize);
        for i in (0..work.msgs.len()).filter(|&i| work.must[i] && work.live(i)) {
            used += u64::from(work.tokens[i]);
            count += 1;
        }
        Self {
            budget,
            cap,
            used,
            count,
            next: work.turns.len(),
        }
    }

    /// Tokens and count of a turn's live members that are not must-keep.
    fn turn_cost(work: &Work<'_>, t: usize) -> (u64, usize) {
        work.turns[t]
            .clone()
            .filter(|&i| work.live(i) && !work.must[i])
            .fold((0, 0), |(tok, n), i| (tok + u64::from(work.tokens[i]), n + 1))
    }

    /// Includes older turns while they fit; `on_include(turn)` is called for
    /// each one included.
    fn advance(&mut self, work: &Work<'_>, mut on_include: impl FnMut(usize)) -> Stop {
        if self.used > self.budget {
            return Stop::Tokens;
        }
        while self.next > 0 {
            let t = self.next - 1;
            let (tokens, n) = Self::turn_cost(work, t);
            if self.cap.is_some_and(|cap| self.count + n > cap) {
                return Stop::Count;
            }
            if self.used + tokens > self.budget {
                return Stop::Tokens;
            }
            self.used += tokens;
            self.count += n;
            self.next = t;
            on_include(t);
        }
        Stop::AllFit
    }

    /// Whether message `i` is counted in `used`.
    fn counts(&self, work: &Work<'_>, i: usize) -> bool {
        work.must[i] || work.turn_of[i] >= self.next
    }
}

/// Whether `i` is worth offering to reduce (a cheap check).
fn candidate(work: &Work<'_>, i: usize) -> bool {
    let m = &work.msgs[i];
    work.live(i)
        && !m.pinned
        && !work.truncated[i]
        && work.calls_out[i].is_none()
        && match m.role {
            Role::Tool => m.content.len() > super::truncate::TOOL_RESULT_LONG_BYTES,
            _ => may_have_blocks(&m.content),
        }
}

/// Truncates message `i` by the reduce rules; returns the tokens saved (0
/// when it cannot be truncated or the copy is not smaller). The copy and its
/// count come from `memo` when an earlier preparation made them.
fn truncate(work: &mut Work<'_>, counter: &dyn TokenCounter, memo: &mut CutMemo, i: usize) -> u32 {
    let m = &work.msgs[i];
    let reduced = memo.reduced(counter, m, |text| match m.role {
        Role::Tool => cut_tool_result(text),
        _ => cut_blocks(text),
    });
    let Some((copy, after)) = reduced else {
        return 0;
    };
    let before = work.tokens[i];
    if after >= before {
        return 0;
    }
    work.tokens[i] = after;
    work.content[i] = Some(copy.to_string());
    work.truncated[i] = true;
    before - after
}

/// Stage 2: while the live history is over the soft budget, truncates the
/// largest truncatable message among those the limit could keep (the
/// must-keep messages, the turns that fit under the soft budget, and the
/// next older turn), skipping messages that cannot be truncated.
pub(crate) fn reduce(work: &mut Work<'_>, budgets: &Budgets, counter: &dyn TokenCounter, memo: &mut CutMemo) {
    let total: u64 = (0..work.msgs.len())
        .filter(|&i| work.live(i))
        .map(|i| u64::from(work.tokens[i]))
        .sum();
    if total <= budgets.soft {
        return;
    }
    let mut heap = BinaryHeap::new();
    for i in (0..work.msgs.len()).filter(|&i| work.must[i] && candidate(work, i)) {
        heap.push((work.tokens[i], Reverse(i)));
    }
    let mut walk = Walk::new(work, budgets.soft, budgets.max_messages);
    let mut offered = work.turns.len();
    loop {
        let stop = walk.advance(work, |_| {});
        if stop != Stop::Tokens {
            return;
        }
        // Offer the included turns and the frontier turn, once each.
        let frontier = walk.next.saturating_sub(1);
        while offered > frontier {
            offered -= 1;
            for i in work.turns[offered].clone() {
                if !work.must[i] && candidate(work, i) {
                    heap.push((work.tokens[i], Reverse(i)));
                }
            }
        }
        let Some((_, Reverse(i))) = heap.pop() else {
            return;
        };
        let saved = truncate(work, counter, memo, i);
        if saved > 0 && walk.counts(work, i) {
            walk.used -= u64::from(saved);
        }
    }
}

/// Stage 4: keeps the must-keep messages and whole turns, newest first,
/// while they fit the hard budget and the message cap; when even the
/// newest turn does not fit, its newest tool call units that do; every
/// other live message is dropped. When the must-keep messages alone do not fit, their
/// text (the last user message, a compaction summary; never a pinned
/// message, never tool calls or results) is cut in the middle, head and
/// tail kept, the smaller ones kept whole first.
///
/// # Errors
///
/// [`PrepareError::TooLargeToSend`] when they do not fit even so.
pub(crate) fn limit(
    work: &mut Work<'_>,
    budgets: &Budgets,
    counter: &dyn TokenCounter,
    memo: &mut CutMemo,
) -> Result<(), PrepareError> {
    let mut walk = Walk::new(work, budgets.hard, budgets.max_messages);
    if walk.used > budgets.hard {
        shrink_must_keep(work, budgets.cut_room, walk.used, counter, memo)?;
        walk = Walk::new(work, budgets.hard, budgets.max_messages);
        if walk.used > budgets.hard {
            return Err(too_large(work, walk.used, budgets.hard));
        }
    }
    work.prelimit = (0..work.msgs.len())
        .map(|i| if work.live(i) { work.tokens[i] } else { 0 })
        .collect();
    walk.advance(work, |_| {});
    // The newest turn alone does not fit (a long tool loop): keep its
    // newest tool call units that do, instead of none of it.
    let mut partial = vec![false; work.msgs.len()];
    if walk.next == work.turns.len() {
        for i in newest_units_that_fit(work, &mut walk) {
            partial[i] = true;
        }
    }
    for t in 0..walk.next {
        for i in work.turns[t].clone() {
            if work.live(i) && !work.must[i] && !partial[i] {
                work.fate[i] = Fate::Dropped;
            }
        }
    }
    Ok(())
}

/// The newest units of the newest turn (a tool call with all its results,
/// or one other message) that fit what `walk` leaves, newest first and
/// without gaps; their tokens and count are added to `walk`.
fn newest_units_that_fit(work: &Work<'_>, walk: &mut Walk) -> Vec<usize> {
    let Some(turn) = work.turns.last().cloned() else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    let mut end = turn.end;
    while end > turn.start {
        let last = end - 1;
        let start = match work.msgs[last].role {
            Role::Tool => match unit_owner(work, last) {
                Some(owner) if owner >= turn.start => owner,
                _ => last,
            },
            _ => last,
        };
        let members: Vec<usize> = (start..end).filter(|&i| work.live(i) && !work.must[i]).collect();
        let tokens: u64 = members.iter().map(|&i| u64::from(work.tokens[i])).sum();
        if walk.used + tokens > walk.budget || walk.cap.is_some_and(|cap| walk.count + members.len() > cap) {
            break;
        }
        walk.used += tokens;
        walk.count += members.len();
        kept.extend(members);
        end = start;
    }
    kept
}

/// The assistant message whose calls the run of tool results holding `i`
/// answers, when there is one.
fn unit_owner(work: &Work<'_>, i: usize) -> Option<usize> {
    let owner = (0..i).rev().find(|&j| work.msgs[j].role != Role::Tool)?;
    (work.msgs[owner].role == Role::Assistant && !work.msgs[owner].tool_calls.is_empty()).then_some(owner)
}

/// The error for must-keep messages of `needed` tokens over `room`,
/// naming what they are.
fn too_large(work: &Work<'_>, needed: u64, room: u64) -> PrepareError {
    let kept = |i: &usize| work.must[*i] && work.live(*i);
    PrepareError::TooLargeToSend {
        needed,
        room,
        pinned: (0..work.msgs.len())
            .filter(kept)
            .filter(|&i| work.msgs[i].pinned)
            .count(),
        summary: (0..work.msgs.len())
            .filter(kept)
            .any(|i| work.msgs[i].kind == MessageKind::Summary),
    }
}

/// Cuts the must-keep messages that may be cut so that all must-keep
/// messages (`used` tokens now) fit `hard`: the smaller ones stay whole
/// while they fit an equal share, the larger ones are cut to share the rest.
fn shrink_must_keep(
    work: &mut Work<'_>,
    hard: u64,
    used: u64,
    counter: &dyn TokenCounter,
    memo: &mut CutMemo,
) -> Result<(), PrepareError> {
    let too_large = too_large(work, used, hard);
    let cuttable: Vec<usize> = (0..work.msgs.len())
        .filter(|&i| {
            let m = &work.msgs[i];
            work.must[i] && work.live(i) && !m.pinned && m.tool_calls.is_empty() && m.role != Role::Tool
        })
        .collect();
    let fixed = used - cuttable.iter().map(|&i| u64::from(work.tokens[i])).sum::<u64>();
    let Some(mut room) = hard.checked_sub(fixed).filter(|r| *r > 0) else {
        return Err(too_large);
    };
    // Water-filling, smallest first: a message under an equal share of what
    // is left stays whole, the larger ones share the rest.
    let mut cuttable = cuttable;
    cuttable.sort_by_key(|&i| work.tokens[i]);
    let mut left = cuttable.len() as u64;
    for i in cuttable {
        let share = u32::try_from(room / left.max(1)).unwrap_or(u32::MAX);
        left -= 1;
        if work.tokens[i] > share {
            let text = work.text(i).to_owned();
            let msgs = work.msgs;
            let (message, of_reduced) = (&msgs[i], work.truncated[i]);
            let mut count = |(head, tail): (usize, usize), copy: &str| {
                let cut = Cut::Middle {
                    head,
                    tail,
                    of_reduced,
                };
                memo.count(counter, message, cut, copy)
            };
            let Some((copy, after)) = shrink_to_fit(&text, work.tokens[i], "message", share, &mut count)
            else {
                return Err(too_large);
            };
            work.tokens[i] = after;
            work.content[i] = Some(copy);
            work.truncated[i] = true;
        }
        room = room.saturating_sub(u64::from(work.tokens[i]));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Message, RequestSystem, SessionId};
    use crate::tokens::message_tokens;

    /// One token per byte.
    struct Bytes;
    impl TokenCounter for Bytes {
        fn id(&self) -> &str {
            "bytes"
        }
        fn exact(&self) -> bool {
            true
        }
        fn count(&self, text: &str) -> usize {
            text.len()
        }
    }

    fn history(specs: &[(Role, &str)]) -> Vec<Message> {
        let s = SessionId::new();
        specs.iter().map(|(r, c)| Message::new(s, *r, *c, 0)).collect()
    }

    fn counts(h: &[Message]) -> Vec<u32> {
        h.iter().map(|m| message_tokens(&Bytes, m)).collect()
    }

    fn budgets(soft: u64, hard: u64, max_messages: Option<usize>) -> Budgets {
        Budgets {
            soft,
            hard,
            max_messages,
            cut_room: hard,
        }
    }

    fn fates(w: &Work<'_>) -> Vec<Fate> {
        w.fate.clone()
    }

    #[test]
    fn limit_keeps_whole_turns_newest_first_and_the_last_user_message() {
        use Role::*;
        let h = history(&[
            (User, "aaaa"),
            (Assistant, "bbbb"),
            (User, "cccc"),
            (Assistant, "dddd"),
        ]);
        let c = counts(&h); // 3 + role + 4 each: 12, 17, 12, 17
        let mut w = Work::new(&h, &c);
        limit(&mut w, &budgets(40, 40, None), &Bytes, &mut CutMemo::new()).unwrap();
        assert_eq!(fates(&w), [Fate::Dropped, Fate::Dropped, Fate::Live, Fate::Live]);
        // A turn that does not fit stops the walk; the last user message stays.
        let mut w = Work::new(&h, &c);
        limit(&mut w, &budgets(20, 20, None), &Bytes, &mut CutMemo::new()).unwrap();
        assert_eq!(
            fates(&w),
            [Fate::Dropped, Fate::Dropped, Fate::Live, Fate::Dropped]
        );
    }

    #[test]
    fn max_messages_is_a_second_cap() {
        use Role::*;
        let h = history(&[(User, "a"), (Assistant, "b"), (User, "c"), (Assistant, "d")]);
        let c = counts(&h);
        let mut w = Work::new(&h, &c);
        limit(
            &mut w,
            &budgets(1_000, 1_000, Some(3)),
            &Bytes,
            &mut CutMemo::new(),
        )
        .unwrap();
        assert_eq!(fates(&w), [Fate::Dropped, Fate::Dropped, Fate::Live, Fate::Live]);
    }

    #[test]
    fn a_last_user_message_too_large_alone_is_cut_to_fit() {
        let text = "line of text\n".repeat(1_000);
        let h = history(&[(Role::User, &text)]);
        let c = counts(&h);
        let mut w = Work::new(&h, &c);
        limit(&mut w, &budgets(500, 500, None), &Bytes, &mut CutMemo::new()).unwrap();
        assert!(w.truncated[0] && w.tokens[0] <= 500);
        assert!(w.text(0).starts_with("line of text\n"));
        assert!(w.text(0).contains("from the middle of this message"));
        let mut w = Work::new(&h, &c);
        let err = limit(&mut w, &budgets(30, 30, None), &Bytes, &mut CutMemo::new()).unwrap_err();
        assert!(matches!(err, PrepareError::TooLargeToSend { room: 30, .. }));
    }

    #[test]
    fn reduce_cuts_the_largest_block_first_and_stops_under_the_soft_limit() {
        let small = format!("```\n{}```\n", "s\n".repeat(30));
        let large = format!("```\n{}```\n", "large line\n".repeat(30));
        let h = history(&[
            (Role::User, &small),
            (Role::Assistant, &large),
            (Role::User, "ok"),
        ]);
        let c = counts(&h);
        let total: u64 = c.iter().map(|&n| u64::from(n)).sum();
        let mut w = Work::new(&h, &c);
        reduce(
            &mut w,
            &budgets(total - 50, 10_000, None),
            &Bytes,
            &mut CutMemo::new(),
        );
        assert_eq!(w.truncated, [false, true, false]);
        assert!(w.text(1).contains("[...]"));
        assert!(w.tokens[1] < c[1]);
    }

    #[test]
    fn reduce_skips_what_it_cannot_truncate_and_never_touches_pinned_messages() {
        let block = format!("```\n{}```\n", "line\n".repeat(40));
        let big_block = format!("```\n{}```\n", "longer line\n".repeat(40));
        let mut h = history(&[
            (Role::User, &big_block),
            (Role::Assistant, &"plain ".repeat(200)),
            (Role::User, &block),
        ]);
        h[0].pinned = true;
        let c = counts(&h);
        let mut w = Work::new(&h, &c);
        // Room for the pinned and the last message, not for the plain reply.
        reduce(
            &mut w,
            &budgets(c[0] as u64 + c[2] as u64 + 10, 10_000, None),
            &Bytes,
            &mut CutMemo::new(),
        );
        assert_eq!(w.truncated, [false, false, true]);
    }

    #[test]
    fn a_last_message_too_large_is_cut_to_the_cut_room() {
        let h = history(&[(Role::User, &"word ".repeat(4_000))]);
        let c = counts(&h);
        for cut_room in [1_000, 875] {
            let mut w = Work::new(&h, &c);
            let b = Budgets {
                cut_room,
                ..budgets(1_000, 1_000, None)
            };
            limit(&mut w, &b, &Bytes, &mut CutMemo::new()).unwrap();
            assert!(w.truncated[0]);
            assert!(u64::from(w.tokens[0]) <= cut_room, "{} > {cut_room}", w.tokens[0]);
            assert!(
                u64::from(w.tokens[0]) > cut_room * 9 / 10,
                "cut near the room: {}",
                w.tokens[0]
            );
        }
    }

    #[test]
    fn reduce_leaves_turns_beyond_reach_alone() {
        let block = format!("```\n{}```\n", "line\n".repeat(40));
        let h = history(&[
            (Role::User, &block),
            (Role::Assistant, "ok"),
            (Role::User, &"x".repeat(5_000)),
            (Role::Assistant, "ok"),
            (Role::User, &block),
        ]);
        let c = counts(&h);
        let mut w = Work::new(&h, &c);
        // The middle turn can never fit, so the first one is out of reach.
        reduce(&mut w, &budgets(1_000, 1_000, None), &Bytes, &mut CutMemo::new());
        assert_eq!(w.truncated, [false, false, false, false, true]);
    }

    #[test]
    fn budgets_subtract_the_fixed_part_and_refuse_a_full_window() {
        let system = RequestSystem {
            text: String::new(),
            boundary_offset: None,
        };
        let h = history(&[(Role::User, "hi")]);
        let c = counts(&h);
        let mut input = PrepareInput {
            system: &system,
            system_tokens: 1_000,
            messages: &h,
            counts: &c,
            counter: &Bytes,
            tools: &[],
            tool_tokens: 500,
            window: 10_000,
            reserved_output: 2_000,
            exact: true,
            max_messages: None,
            single_system: false,
            model: "m",
            max_tokens: 2_000,
            temperature: None,
        };
        let b = Budgets::new(&input).unwrap();
        assert_eq!(
            note_reserve(&input),
            0,
            "one message: nothing to omit, no room kept for the note"
        );
        let two = history(&[(Role::User, "hi"), (Role::Assistant, "hello")]);
        let two_counts = counts(&two);
        let with_history = PrepareInput {
            messages: &two,
            counts: &two_counts,
            ..input
        };
        assert!(note_reserve(&with_history) > 0);
        let overhead = 7 + note_reserve(&input);
        assert_eq!(b.hard, 10_000 - 3_500 - overhead);
        assert_eq!(b.soft, 7_200 - 1_500 - overhead);
        assert_eq!(b.cut_room, b.hard, "exact counts cut to the whole room");
        input.exact = false;
        let approximate = Budgets::new(&input).unwrap();
        assert_eq!(approximate.soft, 6_000 - 1_500 - overhead);
        assert_eq!(
            approximate.cut_room,
            approximate.hard - approximate.hard / 8,
            "an estimate keeps an eighth free"
        );
        // Room for the fixed part but not for the framing: the figure
        // given is what is needed, over the window.
        input.window = 3_500 + overhead - 1;
        let err = Budgets::new(&input).unwrap_err();
        assert_eq!(
            err,
            PrepareError::WindowTooSmall {
                system: 1_000,
                tools: 500,
                reserve: 2_000,
                framing: overhead,
                window: 3_500 + overhead - 1,
            }
        );
        assert_eq!(err.fixed_tokens(), Some(3_500 + overhead));
        assert!(
            err.to_string().contains(&format!(
                "request framing ({overhead}) alone need {}",
                3_500 + overhead
            )),
            "{err}"
        );
    }
}
