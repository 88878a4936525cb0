//! Before reduce: a message too large to be sent whole in any request
//! (more tokens than [`Budgets::cut_room`], all that messages may use) is
//! sent as a copy cut to that size (its code blocks' middles when that is
//! enough, else its own middle), wherever it stands in
//! the history — not only while it is the newest request. The stored
//! message is never changed; the copy is made once per message and room
//! and kept in the caller's [`CutMemo`], like token counts. So a huge
//! paste costs every later request (and the pre-limit estimate the
//! compression trigger reads) what it is really sent as, never its whole
//! size.
//!
//! Never a pinned message, a tool result (reduce cuts those by its own
//! rule), or a message with tool calls (arguments are never cut).

use super::limit::Budgets;
use super::memo::CutMemo;
use super::truncate::{cut_blocks, may_have_blocks};
use super::work::Work;
use crate::domain::Role;
use crate::tokens::TokenCounter;

/// Steps the room is rounded down to, so that a token more or less of
/// framing (the omitted-messages note's count growing a digit) keeps the
/// same copy.
const ROOM_STEP: u64 = 256;

/// Cuts every live message over `budgets.cut_room` to its memoised copy.
pub(crate) fn cap_oversized(
    work: &mut Work<'_>,
    budgets: &Budgets,
    counter: &dyn TokenCounter,
    memo: &mut CutMemo,
) {
    let over = u32::try_from(budgets.cut_room).unwrap_or(u32::MAX);
    let stepped = if budgets.cut_room > 2 * ROOM_STEP {
        budgets.cut_room - budgets.cut_room % ROOM_STEP
    } else {
        budgets.cut_room
    };
    let room = u32::try_from(stepped).unwrap_or(u32::MAX);
    for i in 0..work.msgs.len() {
        let m = &work.msgs[i];
        if !work.live(i)
            || work.tokens[i] <= over
            || m.pinned
            || m.role == Role::Tool
            || !m.tool_calls.is_empty()
        {
            continue;
        }
        // The reduce rule's copy (code blocks cut) when that fits: it keeps
        // more of the message's shape.
        let blocks = may_have_blocks(&m.content)
            .then(|| memo.reduced(counter, m, cut_blocks))
            .flatten()
            .filter(|(_, n)| *n <= room);
        if let Some((copy, tokens)) = blocks.or_else(|| memo.oversized(counter, m, work.tokens[i], room)) {
            work.tokens[i] = tokens;
            work.content[i] = Some(copy.to_string());
            work.truncated[i] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::{Message, RequestSystem, Role, SessionId};
    use crate::pipeline::{Action, CutMemo, PrepareInput, Prepared, prepare_with};
    use crate::tokens::{TokenCounter, message_tokens};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// One token per `per` bytes plus `extra` for every text (the same
    /// tokenizer as it learns: an estimate, then the server's counts),
    /// remembering the longest text it counted.
    struct Counter {
        per: usize,
        extra: usize,
        longest: AtomicUsize,
    }

    fn counter(per: usize, extra: usize) -> Counter {
        Counter {
            per,
            extra,
            longest: AtomicUsize::new(0),
        }
    }

    impl TokenCounter for Counter {
        fn id(&self) -> &str {
            "counter"
        }
        fn exact(&self) -> bool {
            true
        }
        fn count(&self, text: &str) -> usize {
            self.longest.fetch_max(text.len(), Ordering::Relaxed);
            text.len() / self.per + self.extra
        }
    }

    /// `messages` prepared in a `window` with a 1,024-token reserve and a
    /// 100-token system prompt.
    fn prepare(
        counter: &dyn TokenCounter,
        window: u64,
        messages: &[Message],
        counts: &[u32],
        memo: &mut CutMemo,
    ) -> Prepared {
        let system = RequestSystem {
            text: String::new(),
            boundary_offset: None,
        };
        let input = PrepareInput {
            system: &system,
            system_tokens: 100,
            messages,
            counts,
            counter,
            tools: &[],
            tool_tokens: 0,
            window,
            reserved_output: 1_024,
            exact: true,
            max_messages: None,
            single_system: false,
            model: "m",
            max_tokens: 1_024,
            temperature: None,
        };
        prepare_with(&input, memo).unwrap()
    }

    fn history(texts: &[(Role, &str)]) -> Vec<Message> {
        let s = SessionId::new();
        texts
            .iter()
            .enumerate()
            .map(|(i, (role, text))| {
                let mut m = Message::new(s, *role, *text, 0);
                m.seq = i as i64;
                m
            })
            .collect()
    }

    #[test]
    fn a_huge_message_is_sent_cut_in_every_later_request_and_costs_its_cut_size() {
        let paste: String = (0..4_000).map(|i| format!("log line {i}\n")).collect();
        let h = history(&[
            (Role::User, "what is a lexer?"),
            (Role::Assistant, "It splits text into tokens."),
            (Role::User, paste.as_str()),
            (Role::Assistant, "The log shows a crash."),
            (Role::User, "why?"),
        ]);
        let counter = counter(1, 0);
        let counts: Vec<u32> = h.iter().map(|m| message_tokens(&counter, m)).collect();
        let mut memo = CutMemo::new();
        let first = prepare(&counter, 8_192, &h, &counts, &mut memo);
        // The paste is no longer the newest request, and is still sent
        // cut: it costs its cut size before the limit too, so the turns
        // around it are kept.
        let paste = &first.report[2];
        assert_eq!(paste.action, Action::Truncated);
        assert_eq!(paste.tokens_after, first.prelimit_counts[2]);
        assert!(paste.tokens_after < 8_192 - 1_024, "{}", paste.tokens_after);
        assert!(u64::from(counts[2]) > 40_000);
        assert!(first.prelimit_tokens < 8_192, "{}", first.prelimit_tokens);
        assert!(
            first.report.iter().all(|r| r.action != Action::Dropped),
            "{:?}",
            first.report
        );
        // The copy is made once: a second preparation counts nothing.
        counter.longest.store(0, Ordering::Relaxed);
        let second = prepare(&counter, 8_192, &h, &counts, &mut memo);
        assert_eq!(second, first);
        let longest = counter.longest.load(Ordering::Relaxed);
        assert!(longest < 1_000, "the copy was counted again ({longest} bytes)");
        // The stored message is untouched.
        assert_eq!(h[2].content.len(), counts[2] as usize - 7);
    }

    /// The copy is the same bytes whatever the counter has learned (an
    /// estimate first, the server's counts later) and when the framing
    /// around it moves by a few tokens: the cached prefix holds.
    #[test]
    fn the_cut_copy_is_the_same_bytes_on_every_turn() {
        let paste: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let h = history(&[
            (Role::User, paste.as_str()),
            (Role::Assistant, "ok"),
            (Role::User, "and?"),
        ]);
        // The stored counts, as the session's tokenizer made them.
        let counts: Vec<u32> = h.iter().map(|m| message_tokens(&counter(4, 0), m)).collect();
        let sent = |counter: &Counter, window: u64| {
            let p = prepare(counter, window, &h, &counts, &mut CutMemo::new());
            p.request
                .messages
                .iter()
                .find(|m| m.content.contains("line 0\n"))
                .unwrap()
                .content
                .clone()
        };
        let first = sent(&counter(4, 0), 8_192);
        assert!(first.len() < paste.len() / 4, "{}", first.len());
        assert_eq!(sent(&counter(4, 2), 8_192), first, "the counter's view moved");
        assert_eq!(sent(&counter(4, 0), 8_200), first, "framing a few tokens larger");
    }
}
