//! The pipeline's working copy of a history: per-message current tokens,
//! truncated content, fate and flags, plus the structure the stages share
//! (turns, tool call units, the messages that must be kept) and the prune
//! stage. Indices are positions in the input slice.
//!
//! Exclusions are applied first, when the copy is made: a message the
//! user's exclusions leave out ([`super::exclude`]) is never live, never
//! must-keep and costs nothing; an assistant message sent without some of
//! its calls carries their mask and is counted without them.

use crate::domain::{Message, MessageKind, Role};
use std::ops::Range;

/// Whether a message is still headed for the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Still to be sent.
    Live,
    /// Its `ephemeral_ttl` expired.
    Pruned,
    /// Left out by the limit or by repair.
    Dropped,
    /// Left out by the user's exclusions (see [`super::exclude`]).
    Excluded,
}

/// The working copy. Stages mutate it; the input messages are untouched.
pub(crate) struct Work<'a> {
    /// The stored messages.
    pub msgs: &'a [Message],
    /// Cached counts as given.
    pub before: &'a [u32],
    /// Current tokens of each message (after truncation and repair).
    pub tokens: Vec<u32>,
    /// Replacement content of truncated messages.
    pub content: Vec<Option<String>>,
    /// Fate of each message.
    pub fate: Vec<Fate>,
    /// Truncated by reduce or limit.
    pub truncated: Vec<bool>,
    /// Kept whatever the budget: pinned messages, their tool call units and
    /// the last user message.
    pub must: Vec<bool>,
    /// The last user message that is not excluded, if any.
    pub last_user: Option<usize>,
    /// Per assistant message sent without some of its calls because their
    /// results are excluded: which calls are sent.
    pub calls_out: Vec<Option<Vec<bool>>>,
    /// Turns over the live messages, oldest first (see `compute_turns`).
    pub turns: Vec<Range<usize>>,
    /// The index in `turns` of each message's turn.
    pub turn_of: Vec<usize>,
    /// Tokens of each message once reduce and the must-keep cut ran,
    /// before the limit leaves whole turns out (0 when pruned; set by the
    /// limit stage).
    pub prelimit: Vec<u32>,
}

/// The tool results answering an assistant message at `i`: the run of
/// `tool` messages right after it.
pub(crate) fn result_run(msgs: &[Message], i: usize) -> Range<usize> {
    let end = msgs[i + 1..]
        .iter()
        .position(|m| m.role != Role::Tool)
        .map_or(msgs.len(), |p| i + 1 + p);
    i + 1..end
}

/// The assistant message whose result run holds the tool message at `i`.
fn call_owner(msgs: &[Message], i: usize) -> Option<usize> {
    let owner = (0..i).rev().find(|&j| msgs[j].role != Role::Tool)?;
    (msgs[owner].role == Role::Assistant).then_some(owner)
}

impl<'a> Work<'a> {
    /// A working copy with every message live and untouched, `must` and
    /// `last_user` computed.
    pub fn new(msgs: &'a [Message], counts: &'a [u32]) -> Self {
        let n = msgs.len();
        let excl = super::exclude::exclusions(msgs);
        let mut tokens = counts.to_vec();
        let mut fate = vec![Fate::Live; n];
        for (i, &out) in excl.out.iter().enumerate() {
            if out {
                fate[i] = Fate::Excluded;
                tokens[i] = 0;
            }
        }
        let mut work = Self {
            msgs,
            before: counts,
            tokens,
            content: vec![None; n],
            fate,
            truncated: vec![false; n],
            must: vec![false; n],
            last_user: last_user(msgs, &excl.out),
            calls_out: excl.calls,
            turns: Vec::new(),
            turn_of: vec![0; n],
            prelimit: Vec::new(),
        };
        // Pinned messages, and the active compaction summary (the only
        // record of everything it replaced), are never dropped; when too
        // large they are cut in the middle like the last user message.
        for i in (0..n).filter(|&i| msgs[i].pinned || msgs[i].kind == MessageKind::Summary) {
            if work.live(i) {
                work.keep_unit(i);
            }
        }
        if let Some(i) = work.last_user {
            work.must[i] = true;
        }
        work.set_turns();
        work
    }

    /// Recomputes `turns` and `turn_of` from the live messages.
    fn set_turns(&mut self) {
        self.turns = self.compute_turns();
        for (t, range) in self.turns.iter().enumerate() {
            for i in range.clone() {
                self.turn_of[i] = t;
            }
        }
    }

    /// Marks `i` and, when it belongs to a tool call unit (an assistant
    /// message with calls and their results), the whole unit as must-keep.
    fn keep_unit(&mut self, i: usize) {
        self.must[i] = self.live(i);
        let owner = match self.msgs[i].role {
            Role::Assistant => Some(i),
            Role::Tool => call_owner(self.msgs, i),
            _ => None,
        };
        let Some(owner) = owner.filter(|&o| !self.msgs[o].tool_calls.is_empty()) else {
            return;
        };
        self.must[owner] = self.live(owner);
        for r in result_run(self.msgs, owner) {
            self.must[r] = self.live(r);
        }
    }

    /// Counts every assistant message that is sent without some of its
    /// calls (their results are excluded) as it will be sent.
    pub fn count_partial_calls(&mut self, counter: &dyn crate::tokens::TokenCounter) {
        for i in 0..self.msgs.len() {
            let Some(mask) = self.calls_out[i].as_ref() else {
                continue;
            };
            let m = &self.msgs[i];
            let copy = Message {
                tool_calls: m
                    .tool_calls
                    .iter()
                    .zip(mask)
                    .filter(|(_, keep)| **keep)
                    .map(|(c, _)| c.clone())
                    .collect(),
                ..m.clone()
            };
            self.tokens[i] = crate::tokens::message_tokens(counter, &copy);
        }
    }

    /// Content as it will be sent.
    pub fn text(&self, i: usize) -> &str {
        self.content[i].as_deref().unwrap_or(&self.msgs[i].content)
    }

    /// Whether `i` is still headed for the request.
    pub fn live(&self, i: usize) -> bool {
        self.fate[i] == Fate::Live
    }

    /// Turns over the live messages: a turn starts at a user message whose
    /// previous live message is not a user message (consecutive user
    /// messages, such as a message and its reminder, are one turn) and runs
    /// to the next such start. Messages before the first user message form
    /// a turn of their own. Ranges cover all indices; members that are not
    /// live are ignored by whoever walks them.
    fn compute_turns(&self) -> Vec<Range<usize>> {
        let mut turns = Vec::new();
        let mut start = 0;
        let mut prev_user = false;
        for (i, m) in self.msgs.iter().enumerate() {
            if !self.live(i) {
                continue;
            }
            let user = m.role == Role::User;
            if user && !prev_user && i > start {
                turns.push(start..i);
                start = i;
            }
            prev_user = user;
        }
        if start < self.msgs.len() {
            turns.push(start..self.msgs.len());
        }
        turns
    }

    /// Stage 3: prunes every message whose `ephemeral_ttl` has expired,
    /// except must-keep ones, then recomputes the turns.
    pub fn prune(&mut self) {
        let ages = assistant_turns_after(self.msgs);
        let mut any = false;
        for (i, m) in self.msgs.iter().enumerate() {
            if self.fate[i] == Fate::Live
                && !self.must[i]
                && m.ephemeral_ttl.is_some_and(|ttl| ages[i] >= ttl)
            {
                self.fate[i] = Fate::Pruned;
                any = true;
            }
        }
        if any {
            self.set_turns();
        }
    }
}

/// The last user message the user wrote (not a synthetic one such as a
/// reminder), else the last user message of any kind; excluded ones
/// (`out`) are not candidates. The one the next request answers.
pub(crate) fn last_user(msgs: &[Message], out: &[bool]) -> Option<usize> {
    let users = || {
        (0..msgs.len())
            .rev()
            .filter(|&i| msgs[i].role == Role::User && !out[i])
    };
    users()
        .find(|&i| msgs[i].kind != MessageKind::Synthetic)
        .or_else(|| users().next())
}

/// For each message, the number of complete assistant turns after it: an
/// assistant turn is the run of non-user messages between two user messages
/// that holds an assistant message; it is complete once a user message
/// follows it, and it counts for a message when it has an assistant message
/// after that message. So a message with `ephemeral_ttl = n` is sent for the
/// `n` assistant turns after it (a reminder with TTL 1 rides through its own
/// turn's whole tool loop) and pruned from then on; TTL 0 is never sent.
pub(crate) fn assistant_turns_after(msgs: &[Message]) -> Vec<u32> {
    let mut ages = vec![0; msgs.len()];
    let mut done = 0u32;
    let mut has_assistant = false;
    let mut complete = false;
    for i in (0..msgs.len()).rev() {
        let here = done + u32::from(has_assistant && complete);
        ages[i] = here;
        match msgs[i].role {
            Role::User => {
                done = here;
                has_assistant = false;
                complete = true;
            }
            Role::Assistant => has_assistant = true,
            Role::System | Role::Tool => {}
        }
    }
    ages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SessionId, ToolCall};

    fn msg(role: Role) -> Message {
        Message::new(SessionId::new(), role, "x", 0)
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: "{}".into(),
        }
    }

    fn result(id: &str) -> Message {
        let mut m = msg(Role::Tool);
        m.tool_call_id = Some(id.into());
        m
    }

    fn asst_calls(ids: &[&str]) -> Message {
        let mut m = msg(Role::Assistant);
        m.tool_calls = ids.iter().map(|id| call(id)).collect();
        m
    }

    #[test]
    fn assistant_turns_count_once_complete() {
        use Role::*;
        let h: Vec<Message> = [User, User, Assistant, Tool, Assistant, User, Assistant]
            .into_iter()
            .map(msg)
            .collect();
        // The first turn (indices 2-4) is complete; the last (6) is not yet.
        assert_eq!(assistant_turns_after(&h), [1, 1, 1, 1, 0, 0, 0]);
    }

    #[test]
    fn a_reminder_with_ttl_one_rides_its_tool_loop_and_goes_next_turn() {
        let mut reminder = msg(Role::User);
        reminder.kind = MessageKind::Synthetic;
        reminder.ephemeral_ttl = Some(1);
        let mut h = vec![msg(Role::User), reminder, asst_calls(&["a"]), result("a")];
        let mut counts = vec![1; h.len()];
        let mut w = Work::new(&h, &counts);
        w.prune();
        assert_eq!(w.fate[1], Fate::Live);
        h.extend([msg(Role::Assistant), msg(Role::User)]);
        counts = vec![1; h.len()];
        let mut w = Work::new(&h, &counts);
        w.prune();
        assert_eq!(w.fate[1], Fate::Pruned);
        assert_eq!(w.last_user, Some(5));
    }

    #[test]
    fn ttl_zero_is_never_sent_but_pinned_and_the_last_user_message_stay() {
        let mut h = vec![msg(Role::User), msg(Role::Assistant), msg(Role::User)];
        for m in &mut h {
            m.ephemeral_ttl = Some(0);
        }
        h[1].pinned = true;
        let counts = [1, 1, 1];
        let mut w = Work::new(&h, &counts);
        w.prune();
        assert_eq!(w.fate, [Fate::Pruned, Fate::Live, Fate::Live]);
    }

    #[test]
    fn pinning_a_tool_result_keeps_its_whole_unit() {
        let mut h = vec![msg(Role::User), asst_calls(&["a", "b"]), result("a"), result("b")];
        h[3].pinned = true;
        h.push(msg(Role::User));
        let counts = vec![1; h.len()];
        let w = Work::new(&h, &counts);
        assert_eq!(w.must, [false, true, true, true, true]);
    }

    #[test]
    fn consecutive_user_messages_open_one_turn() {
        let h: Vec<Message> = [
            Role::Assistant,
            Role::User,
            Role::User,
            Role::Assistant,
            Role::User,
        ]
        .into_iter()
        .map(msg)
        .collect();
        let counts = vec![1; h.len()];
        let w = Work::new(&h, &counts);
        assert_eq!(w.turns, [0..1, 1..4, 4..5]);
    }
}
