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
    use crate::pipeline::{Action, CutMemo, PrepareInput, prepare_with};
    use crate::tokens::{TokenCounter, message_tokens};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// One token per byte, remembering the longest text it counted.
    struct Bytes(AtomicUsize);
    impl TokenCounter for Bytes {
        fn id(&self) -> &str {
            "bytes"
        }
        fn exact(&self) -> bool {
            true
        }
        fn count(&self, text: &str) -> usize {
            self.0.fetch_max(text.len(), Ordering::Relaxed);
            text.len()
        }
    }

    #[test]
    fn a_huge_message_is_sent_cut_in_every_later_request_and_costs_its_cut_size() {
        let s = SessionId::new();
        let paste: String = (0..4_000).map(|i| format!("log line {i}\n")).collect();
        let mut h = vec![
            Message::new(s, Role::User, "what is a lexer?", 0),
            Message::new(s, Role::Assistant, "It splits text into tokens.", 0),
            Message::new(s, Role::User, paste.as_str(), 0),
            Message::new(s, Role::Assistant, "The log shows a crash.", 0),
            Message::new(s, Role::User, "why?", 0),
        ];
        for (i, m) in h.iter_mut().enumerate() {
            m.seq = i as i64;
        }
        let counter = Bytes(AtomicUsize::new(0));
        let counts: Vec<u32> = h.iter().map(|m| message_tokens(&counter, m)).collect();
        let system = RequestSystem {
            text: String::new(),
            boundary_offset: None,
        };
        let input = PrepareInput {
            system: &system,
            system_tokens: 100,
            messages: &h,
            counts: &counts,
            counter: &counter,
            tools: &[],
            tool_tokens: 0,
            window: 8_192,
            reserved_output: 1_024,
            exact: true,
            max_messages: None,
            single_system: false,
            model: "m",
            max_tokens: 1_024,
            temperature: None,
        };
        let mut memo = CutMemo::new();
        let first = prepare_with(&input, &mut memo).unwrap();
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
        counter.0.store(0, Ordering::Relaxed);
        let second = prepare_with(&input, &mut memo).unwrap();
        assert_eq!(second, first);
        let longest = counter.0.load(Ordering::Relaxed);
        assert!(longest < 1_000, "the copy was counted again ({longest} bytes)");
        // The stored message is untouched.
        assert_eq!(h[2].content.len(), counts[2] as usize - 7);
    }
}

#[cfg(test)]
mod stability {
    use crate::domain::{Message, RequestSystem, Role, SessionId};
    use crate::pipeline::{CutMemo, PrepareInput, prepare_with};
    use crate::tokens::{TokenCounter, message_tokens};

    /// One token per four bytes, and `.0` more for every text: the same
    /// tokenizer as it learns (an estimate, then the server's counts).
    struct Per(usize);
    impl TokenCounter for Per {
        fn id(&self) -> &str {
            "per"
        }
        fn exact(&self) -> bool {
            true
        }
        fn count(&self, text: &str) -> usize {
            text.len() / 4 + self.0
        }
    }

    /// The paste's copy as sent, from a fresh memo, with `counter` counting
    /// what the pipeline makes and `window` tokens.
    fn sent_copy(counter: &dyn TokenCounter, window: u64, messages: &[Message], counts: &[u32]) -> String {
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
        let p = prepare_with(&input, &mut CutMemo::new()).unwrap();
        p.request
            .messages
            .iter()
            .find(|m| m.content.contains("line 0\n"))
            .unwrap()
            .content
            .clone()
    }

    /// The copy is the same bytes whatever the counter has learned (an
    /// estimate first, the server's counts later) and when the framing
    /// around it moves by a few tokens: the cached prefix holds.
    #[test]
    fn the_cut_copy_is_the_same_bytes_on_every_turn() {
        let s = SessionId::new();
        let paste: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let h = vec![
            Message::new(s, Role::User, paste.as_str(), 0),
            Message::new(s, Role::Assistant, "ok", 0),
            Message::new(s, Role::User, "and?", 0),
        ];
        // The stored counts, as the session's tokenizer made them.
        let counts: Vec<u32> = h.iter().map(|m| message_tokens(&Per(0), m)).collect();
        let first = sent_copy(&Per(0), 8_192, &h, &counts);
        assert!(first.len() < paste.len() / 4, "{}", first.len());
        assert_eq!(
            sent_copy(&Per(2), 8_192, &h, &counts),
            first,
            "the counter's view moved"
        );
        assert_eq!(
            sent_copy(&Per(0), 8_200, &h, &counts),
            first,
            "framing a few tokens larger"
        );
    }
}
