//! Pin, unpin, exclude and include one message of a session (DESIGN §17),
//! and the context list's rows.
//!
//! What the user names ([`message_ref`](super::message_ref)) is checked
//! and turned into the flags to write here; the store writes them in one
//! transaction; the pipeline derives the tool call unit from them. Rules:
//!
//! - the last user message (the one the next request answers) cannot be
//!   excluded, nor a compaction summary (undo the compression instead);
//! - a pinned message cannot be excluded (unpin it first), nor a message
//!   whose exclusion would leave out a pinned one of its tool call unit;
//!   an excluded message is included before it is pinned;
//! - a pin is refused when the pinned messages (with their tool call
//!   units) would take more than half of the effective window
//!   (`context_window − max_tokens`, as the threshold has it);
//! - excluding a tool result flags every result of that call; excluding a
//!   call message flags it (its results follow); including either brings
//!   back the whole unit; unpinning clears every pin of the unit.
//!
//! Token figures are the messages' stored counts under the session's
//! tokenizer, framing included.

use super::message_ref::resolve;
use super::{Runtime, RuntimeError};
use crate::config::ModelChoice;
use crate::domain::{Message, MessageId, MessageKind, Role, Session, SessionId};
use crate::pipeline::{ContextRow, exclusions, last_user};
use serde::Serialize;

/// What a control command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlAction {
    /// Keep the message whole in every request and every compression.
    Pin,
    /// Undo a pin.
    Unpin,
    /// Leave the message (or its tool call) out of every request.
    Exclude,
    /// Undo an exclusion.
    Include,
}

/// One message as a client names it back to the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ControlMessage {
    /// Position among the active messages, from 1.
    pub pos: usize,
    /// The message.
    pub message_id: MessageId,
    /// Its role.
    pub role: Role,
    /// For a call message its calls' names, for a tool result its tool's.
    pub tools: Vec<String>,
}

/// What a control command changed, for the client to word ("Excluded
/// message 7 (tool read_file, −1.2k tokens)"). Serialises with these field
/// names (`strata pin|unpin|exclude|include --json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ControlOutcome {
    /// What was asked.
    pub action: ControlAction,
    /// The session.
    pub session_id: SessionId,
    /// The message `MSG` named.
    pub target: ControlMessage,
    /// Every message whose flag was written; empty when nothing changed
    /// (the message already was as asked).
    pub changed: Vec<ControlMessage>,
    /// Exclude: tokens no longer sent; include: tokens sent again; pin:
    /// tokens newly kept whole; unpin: tokens no longer kept whole. Stored
    /// counts of the messages concerned, framing included.
    pub tokens: u64,
    /// Pin and unpin: what the pinned messages (with their tool call units)
    /// take now, tokens.
    pub pinned_tokens: Option<u64>,
    /// Pin and unpin: the most they may take (half the effective window).
    pub pinned_limit: Option<u64>,
}

/// Why a control command was refused; nothing was changed. Each is one
/// sentence saying why and what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// Excluding the last user message.
    #[error(
        "message {pos} is the last user message, which the next request answers, so it cannot be excluded; send a new message first or exclude an earlier one"
    )]
    LastUserMessage {
        /// Its position.
        pos: usize,
    },
    /// Excluding a compaction summary.
    #[error(
        "message {pos} is a compression's summary, which stands for the messages it replaced, so it cannot be excluded; undo the compression instead"
    )]
    Summary {
        /// Its position.
        pos: usize,
    },
    /// Excluding a pinned message (or one whose unit holds one).
    #[error("message {pinned} is pinned, so message {pos} cannot be excluded; unpin message {pinned} first")]
    Pinned {
        /// The message asked for.
        pos: usize,
        /// The pinned message it would leave out (may be `pos`).
        pinned: usize,
    },
    /// Pinning an excluded message.
    #[error(
        "message {pos} is excluded from requests, so pinning it would keep nothing; include it first, then pin it"
    )]
    Excluded {
        /// Its position.
        pos: usize,
    },
    /// A pin over the limit.
    #[error(
        "pinning message {pos} would make the pinned messages take {} tokens, more than half of the effective window ({} of {}, the window less max_tokens); unpin another message or pin a smaller one",
        crate::text::group_digits(*after),
        crate::text::group_digits(*limit),
        crate::text::group_digits(*effective)
    )]
    PinOverHalf {
        /// Its position.
        pos: usize,
        /// What the pinned messages would take, tokens.
        after: u64,
        /// Half the effective window, tokens.
        limit: u64,
        /// The effective window, tokens.
        effective: u64,
    },
}

/// The members of the tool call unit of message `i` (an assistant message
/// with calls and its result run), or `i` alone outside one.
fn unit_of(msgs: &[Message], i: usize) -> Vec<usize> {
    let owner = match msgs[i].role {
        Role::Assistant => Some(i),
        Role::Tool => (0..i)
            .rev()
            .find(|&j| msgs[j].role != Role::Tool)
            .filter(|&j| msgs[j].role == Role::Assistant),
        Role::User | Role::System => None,
    }
    .filter(|&o| !msgs[o].tool_calls.is_empty());
    match owner {
        Some(o) => {
            let end = (o + 1..msgs.len())
                .find(|&j| msgs[j].role != Role::Tool)
                .unwrap_or(msgs.len());
            (o..end).collect()
        }
        None => vec![i],
    }
}

/// The results in `i`'s unit that answer the same call as tool result `i`.
fn same_call(msgs: &[Message], i: usize) -> Vec<usize> {
    unit_of(msgs, i)
        .into_iter()
        .filter(|&r| msgs[r].role == Role::Tool && msgs[r].tool_call_id == msgs[i].tool_call_id)
        .collect()
}

fn count(m: &Message) -> u64 {
    m.tokens.as_ref().map_or(0, |t| u64::from(t.tokens))
}

/// Tokens the pinned messages of `msgs` keep whole: each pinned message
/// the exclusions do not leave out, with its tool call unit (members left
/// out excepted), each message counted once.
fn pinned_tokens(msgs: &[Message]) -> u64 {
    let out = exclusions(msgs).out;
    let mut kept = vec![false; msgs.len()];
    for i in (0..msgs.len()).filter(|&i| msgs[i].pinned && !out[i]) {
        for j in unit_of(msgs, i) {
            kept[j] = !out[j];
        }
    }
    (0..msgs.len())
        .filter(|&i| kept[i])
        .map(|i| count(&msgs[i]))
        .sum()
}

/// The flags to write for `action` on message `i` of the active `msgs`,
/// and the token figure of the outcome; pure. `limit` is half the
/// effective window (pins only).
///
/// # Errors
/// [`ControlError`] when the rules of the module doc refuse it.
fn plan(
    msgs: &[Message],
    i: usize,
    action: ControlAction,
    limit: u64,
) -> Result<(Vec<usize>, u64), ControlError> {
    let pos = i + 1;
    let m = &msgs[i];
    match action {
        ControlAction::Pin => {
            if m.pinned {
                return Ok((Vec::new(), 0));
            }
            if exclusions(msgs).out[i] {
                return Err(ControlError::Excluded { pos });
            }
            let before = pinned_tokens(msgs);
            let mut after_msgs = msgs.to_vec();
            after_msgs[i].pinned = true;
            let after = pinned_tokens(&after_msgs);
            if after > limit && after > before {
                return Err(ControlError::PinOverHalf {
                    pos,
                    after,
                    limit,
                    effective: limit * 2,
                });
            }
            Ok((vec![i], after - before))
        }
        ControlAction::Unpin => {
            let flags: Vec<usize> = unit_of(msgs, i).into_iter().filter(|&j| msgs[j].pinned).collect();
            let before = pinned_tokens(msgs);
            let mut after_msgs = msgs.to_vec();
            for &j in &flags {
                after_msgs[j].pinned = false;
            }
            Ok((flags, before.saturating_sub(pinned_tokens(&after_msgs))))
        }
        ControlAction::Exclude => {
            let before = exclusions(msgs).out;
            if last_user(msgs, &before) == Some(i) {
                return Err(ControlError::LastUserMessage { pos });
            }
            if m.kind == MessageKind::Summary {
                return Err(ControlError::Summary { pos });
            }
            let flags: Vec<usize> = if m.role == Role::Tool {
                same_call(msgs, i)
            } else {
                vec![i]
            };
            let flags: Vec<usize> = flags.into_iter().filter(|&j| !msgs[j].excluded).collect();
            let mut after_msgs = msgs.to_vec();
            for &j in &flags {
                after_msgs[j].excluded = true;
            }
            let after = exclusions(&after_msgs).out;
            let newly: Vec<usize> = (0..msgs.len()).filter(|&j| after[j] && !before[j]).collect();
            if let Some(&p) = newly.iter().find(|&&j| msgs[j].pinned) {
                return Err(ControlError::Pinned { pos, pinned: p + 1 });
            }
            Ok((flags, newly.iter().map(|&j| count(&msgs[j])).sum()))
        }
        ControlAction::Include => {
            let before = exclusions(msgs).out;
            let flags: Vec<usize> = match m.role {
                Role::Tool => {
                    let owner = unit_of(msgs, i).first().copied().filter(|&o| o != i);
                    same_call(msgs, i).into_iter().chain(owner).collect()
                }
                Role::Assistant if !m.tool_calls.is_empty() => unit_of(msgs, i),
                _ => vec![i],
            };
            let flags: Vec<usize> = flags.into_iter().filter(|&j| msgs[j].excluded).collect();
            let mut after_msgs = msgs.to_vec();
            for &j in &flags {
                after_msgs[j].excluded = false;
            }
            let after = exclusions(&after_msgs).out;
            let back = (0..msgs.len())
                .filter(|&j| before[j] && !after[j])
                .map(|j| count(&msgs[j]))
                .sum();
            Ok((flags, back))
        }
    }
}

/// `msgs[i]` as an outcome names it.
fn named(msgs: &[Message], i: usize) -> ControlMessage {
    let m = &msgs[i];
    let tools = match m.role {
        Role::Assistant => m.tool_calls.iter().map(|c| c.name.clone()).collect(),
        Role::Tool => m
            .tool
            .as_ref()
            .map(|t| t.name.clone())
            .or_else(|| {
                let id = m.tool_call_id.as_deref()?;
                msgs[..i]
                    .iter()
                    .rev()
                    .flat_map(|o| o.tool_calls.iter())
                    .find(|c| c.id == id)
                    .map(|c| c.name.clone())
            })
            .into_iter()
            .collect(),
        Role::User | Role::System => Vec::new(),
    };
    ControlMessage {
        pos: i + 1,
        message_id: m.id,
        role: m.role,
        tools,
    }
}

impl Runtime {
    /// Pins (`on`) or unpins the message `msg` names (see
    /// [`message_ref`](super::message_ref)) among `session`'s active
    /// messages; `choice` gives the window the half-window rule uses.
    ///
    /// # Errors
    /// [`RuntimeError::Message`] when `msg` names no single message;
    /// [`RuntimeError::Control`] for a refused pin;
    /// [`RuntimeError::Store`].
    pub fn set_pin(
        &mut self,
        session: &Session,
        choice: &ModelChoice,
        msg: &str,
        on: bool,
    ) -> Result<ControlOutcome, RuntimeError> {
        let action = if on {
            ControlAction::Pin
        } else {
            ControlAction::Unpin
        };
        let limit = choice.context_window.saturating_sub(choice.max_tokens) / 2;
        self.control(session, msg, action, limit)
    }

    /// Excludes (`on`) or includes the message `msg` names among
    /// `session`'s active messages.
    ///
    /// # Errors
    /// [`RuntimeError::Message`] when `msg` names no single message;
    /// [`RuntimeError::Control`] for a refused exclusion;
    /// [`RuntimeError::Store`].
    pub fn set_excluded(
        &mut self,
        session: &Session,
        msg: &str,
        on: bool,
    ) -> Result<ControlOutcome, RuntimeError> {
        let action = if on {
            ControlAction::Exclude
        } else {
            ControlAction::Include
        };
        self.control(session, msg, action, u64::MAX)
    }

    fn control(
        &mut self,
        session: &Session,
        msg: &str,
        action: ControlAction,
        limit: u64,
    ) -> Result<ControlOutcome, RuntimeError> {
        let mut msgs = self.counted_messages(session, false)?;
        let i = resolve(&msgs, msg)?;
        let (flags, tokens) = plan(&msgs, i, action, limit)?;
        let ids: Vec<MessageId> = flags.iter().map(|&j| msgs[j].id).collect();
        if !ids.is_empty() {
            match action {
                ControlAction::Pin | ControlAction::Unpin => {
                    self.store
                        .set_pinned(session.id, &ids, action == ControlAction::Pin)?;
                }
                ControlAction::Exclude | ControlAction::Include => {
                    self.store
                        .set_excluded(session.id, &ids, action == ControlAction::Exclude)?;
                }
            }
        }
        for &j in &flags {
            match action {
                ControlAction::Pin | ControlAction::Unpin => msgs[j].pinned = action == ControlAction::Pin,
                ControlAction::Exclude | ControlAction::Include => {
                    msgs[j].excluded = action == ControlAction::Exclude;
                }
            }
        }
        let pins = matches!(action, ControlAction::Pin | ControlAction::Unpin);
        Ok(ControlOutcome {
            action,
            session_id: session.id,
            target: named(&msgs, i),
            changed: flags.iter().map(|&j| named(&msgs, j)).collect(),
            tokens,
            pinned_tokens: pins.then(|| pinned_tokens(&msgs)),
            pinned_limit: pins.then_some(limit),
        })
    }

    /// The context list of `session` (every message, archived ones too,
    /// with its state in the next request; see [`crate::pipeline::rows`]):
    /// the report is the one [`Runtime::context_report`] makes under
    /// `choice` (with `mcp`'s tools when given), so both agree.
    ///
    /// # Errors
    /// As [`Runtime::context_report`].
    pub fn context_rows(
        &mut self,
        session: &Session,
        choice: &ModelChoice,
        mcp: Option<&super::McpSession>,
    ) -> Result<Vec<ContextRow>, RuntimeError> {
        let report = self.context_report(session, choice, mcp)?;
        let all = self.counted_messages(session, true)?;
        let compactions = self.store.compactions(session.id)?;
        let mut rows = crate::pipeline::context_rows(&all, &report.report, &compactions);
        // What toggling each row costs in cache: the blocks before it stay.
        let last = self.store.cache_prefix(session.id)?;
        let next = report.prepared_tokens.unwrap_or(report.input_tokens);
        for row in rows.iter_mut().filter(|r| r.pos.is_some()) {
            let after = if row.excluded {
                next + u64::from(row.tokens)
            } else {
                next.saturating_sub(u64::from(row.tokens_sent))
            };
            let at = row.message_id;
            row.uncached_if_toggled = Some(crate::prompt_cache::uncached_after(after, last.as_ref(), |id| {
                id >= at
            }));
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SessionId, TokenCount, ToolCall};

    fn msg(role: Role, tokens: u32) -> Message {
        let mut m = Message::new(SessionId::new(), role, "x", 0);
        m.tokens = Some(TokenCount {
            tokenizer: "t".into(),
            tokens,
        });
        m
    }

    /// user, a call message with calls a and b, their results, a reply, user.
    fn history() -> Vec<Message> {
        let mut call = msg(Role::Assistant, 10);
        call.tool_calls = ["a", "b"]
            .iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            })
            .collect();
        let result = |id: &str, n| {
            let mut r = msg(Role::Tool, n);
            r.tool_call_id = Some(id.into());
            r
        };
        vec![
            msg(Role::User, 5),
            call,
            result("a", 1_200),
            result("b", 300),
            msg(Role::Assistant, 40),
            msg(Role::User, 6),
        ]
    }

    #[test]
    fn excluding_a_result_flags_its_call_and_frees_its_tokens() {
        let h = history();
        assert_eq!(plan(&h, 2, ControlAction::Exclude, 0), Ok((vec![2], 1_200)));
        // The call message: it and both results leave.
        assert_eq!(plan(&h, 1, ControlAction::Exclude, 0), Ok((vec![1], 1_510)));
        let mut h = h;
        h[1].excluded = true;
        // Including a result brings back the whole unit.
        assert_eq!(plan(&h, 3, ControlAction::Include, 0), Ok((vec![1], 1_510)));
        assert_eq!(plan(&h, 1, ControlAction::Include, 0), Ok((vec![1], 1_510)));
        assert_eq!(plan(&h, 1, ControlAction::Exclude, 0), Ok((vec![], 0)));
    }

    #[test]
    fn refusals_say_why() {
        let mut h = history();
        assert_eq!(
            plan(&h, 5, ControlAction::Exclude, 0),
            Err(ControlError::LastUserMessage { pos: 6 })
        );
        h[3].pinned = true;
        assert_eq!(
            plan(&h, 1, ControlAction::Exclude, 0),
            Err(ControlError::Pinned { pos: 2, pinned: 4 })
        );
        // Result a leaves alone: the pinned result b stays.
        assert!(plan(&h, 2, ControlAction::Exclude, 0).is_ok());
        h[4].excluded = true;
        assert_eq!(
            plan(&h, 4, ControlAction::Pin, 1_000),
            Err(ControlError::Excluded { pos: 5 })
        );
        h[4].kind = MessageKind::Summary;
        h[4].excluded = false;
        assert_eq!(
            plan(&h, 4, ControlAction::Exclude, 0),
            Err(ControlError::Summary { pos: 5 })
        );
        let err = ControlError::Pinned { pos: 2, pinned: 4 }.to_string();
        assert_eq!(err.matches(';').count(), 1, "{err}");
    }

    #[test]
    fn a_pin_past_half_the_effective_window_is_refused() {
        let mut h = history();
        h[3].pinned = true; // the unit: 10 + 1,200 + 300
        assert_eq!(pinned_tokens(&h), 1_510);
        assert_eq!(plan(&h, 4, ControlAction::Pin, 1_550), Ok((vec![4], 40)));
        assert_eq!(
            plan(&h, 4, ControlAction::Pin, 1_520),
            Err(ControlError::PinOverHalf {
                pos: 5,
                after: 1_550,
                limit: 1_520,
                effective: 3_040
            })
        );
        // Unpinning a call message clears the pin of its result too.
        assert_eq!(plan(&h, 1, ControlAction::Unpin, 0), Ok((vec![3], 1_510)));
    }
}
