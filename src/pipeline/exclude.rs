//! What the user's exclusions leave out of a request (DESIGN §17). The
//! `excluded` flag is stored on what the user chose; the unit it stands
//! for is derived here, the same way for the pipeline, compression and the
//! context list:
//!
//! - an excluded assistant message with `tool_calls` leaves out its calls
//!   and every result of them (the run of `tool` messages after it that
//!   answer one of its calls);
//! - an excluded `tool` result leaves out its call only: every result of
//!   that call, and the call itself from its assistant message, which is
//!   sent with its other calls and their results; when it keeps no call
//!   and has no text, it is left out too;
//! - any other excluded message (a user or system message, an assistant
//!   reply without calls, a result whose call is gone) is left out alone.
//!
//! Pure; O(n) in the history, with nothing allocated per message beyond the
//! two vectors when no message is excluded.

use super::work::result_run;
use crate::domain::{Message, Role};

/// How the exclusions of a history apply, per message of it (same order
/// and length).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exclusions {
    /// Left out of the request because of an exclusion.
    pub out: Vec<bool>,
    /// For an assistant message that is sent without some of its calls
    /// (their results are excluded): one flag per call of `tool_calls`,
    /// `true` for a call that is sent. `None` for every other message.
    pub calls: Vec<Option<Vec<bool>>>,
}

impl Exclusions {
    /// Whether any message is affected.
    #[must_use]
    pub fn any(&self) -> bool {
        self.out.iter().any(|&o| o) || self.calls.iter().any(Option::is_some)
    }
}

/// The exclusions of `msgs` (see the module doc for the units).
#[must_use]
pub fn exclusions(msgs: &[Message]) -> Exclusions {
    let n = msgs.len();
    let mut ex = Exclusions {
        out: vec![false; n],
        calls: vec![None; n],
    };
    if !msgs.iter().any(|m| m.excluded) {
        return ex;
    }
    for (i, m) in msgs.iter().enumerate() {
        if m.excluded {
            ex.out[i] = true;
        }
        if m.role != Role::Assistant || m.tool_calls.is_empty() {
            continue;
        }
        let run = result_run(msgs, i);
        let answers = |r: usize, ids: &[&str]| {
            msgs[r]
                .tool_call_id
                .as_deref()
                .is_some_and(|id| ids.contains(&id))
        };
        if m.excluded {
            let ids: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
            for r in run.filter(|&r| answers(r, &ids)) {
                ex.out[r] = true;
            }
            continue;
        }
        let excluded_ids: Vec<&str> = run
            .clone()
            .filter(|&r| msgs[r].excluded)
            .filter_map(|r| msgs[r].tool_call_id.as_deref())
            .filter(|id| m.tool_calls.iter().any(|c| c.id == *id))
            .collect();
        if excluded_ids.is_empty() {
            continue;
        }
        for r in run.filter(|&r| answers(r, &excluded_ids)) {
            ex.out[r] = true;
        }
        let mask: Vec<bool> = m
            .tool_calls
            .iter()
            .map(|c| !excluded_ids.contains(&c.id.as_str()))
            .collect();
        if !mask.iter().any(|&k| k) && m.content.is_empty() {
            ex.out[i] = true;
        } else {
            ex.calls[i] = Some(mask);
        }
    }
    ex
}

/// Per message of `msgs`: excluded, or in a tool call unit (an assistant
/// message with calls and its result run) that holds an excluded message.
/// What compression never summarises, archives or rewrites: the unit stays
/// in the active history, in its place, so that including the message
/// brings back exactly what was there.
#[must_use]
pub fn excluded_units(msgs: &[Message]) -> Vec<bool> {
    let n = msgs.len();
    let mut held: Vec<bool> = msgs.iter().map(|m| m.excluded).collect();
    if !held.iter().any(|&h| h) {
        return held;
    }
    let mut i = 0;
    while i < n {
        let m = &msgs[i];
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            let run = result_run(msgs, i);
            if m.excluded || run.clone().any(|r| msgs[r].excluded) {
                held[i] = true;
                for r in run.clone() {
                    held[r] = true;
                }
            }
            i = run.end.max(i + 1);
        } else {
            i += 1;
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SessionId, ToolCall};

    fn msg(role: Role, text: &str) -> Message {
        Message::new(SessionId::new(), role, text, 0)
    }

    fn calls(text: &str, ids: &[&str]) -> Message {
        let mut m = msg(Role::Assistant, text);
        m.tool_calls = ids
            .iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            })
            .collect();
        m
    }

    fn result(id: &str) -> Message {
        let mut m = msg(Role::Tool, "out");
        m.tool_call_id = Some(id.into());
        m
    }

    fn history() -> Vec<Message> {
        vec![
            msg(Role::User, "go"),
            calls("", &["a", "b"]),
            result("a"),
            result("b"),
            msg(Role::Assistant, "done"),
            msg(Role::User, "next"),
        ]
    }

    #[test]
    fn nothing_excluded_affects_nothing() {
        let h = history();
        let ex = exclusions(&h);
        assert!(!ex.any());
        assert_eq!(ex.out.len(), h.len());
        assert!(excluded_units(&h).iter().all(|&x| !x));
    }

    #[test]
    fn an_excluded_call_message_takes_its_results_with_it() {
        let mut h = history();
        h[1].excluded = true;
        let ex = exclusions(&h);
        assert_eq!(ex.out, [false, true, true, true, false, false]);
        assert!(ex.calls.iter().all(Option::is_none));
    }

    #[test]
    fn an_excluded_result_takes_only_its_call() {
        let mut h = history();
        h[2].excluded = true;
        let ex = exclusions(&h);
        assert_eq!(ex.out, [false, false, true, false, false, false]);
        assert_eq!(ex.calls[1], Some(vec![false, true]));
        // The whole unit stays together for compression.
        assert_eq!(excluded_units(&h), [false, true, true, true, false, false]);
    }

    #[test]
    fn a_call_message_left_with_nothing_is_left_out_but_one_with_text_is_sent() {
        let mut h = history();
        h[2].excluded = true;
        h[3].excluded = true;
        assert_eq!(exclusions(&h).out, [false, true, true, true, false, false]);
        h[1].content = "Reading both files.".into();
        let ex = exclusions(&h);
        assert_eq!(ex.out, [false, false, true, true, false, false]);
        assert_eq!(ex.calls[1], Some(vec![false, false]));
    }

    #[test]
    fn every_result_of_an_excluded_call_goes_and_other_messages_go_alone() {
        let mut h = history();
        h.insert(3, result("a"));
        h[2].excluded = true;
        h[0].excluded = true;
        let ex = exclusions(&h);
        assert_eq!(ex.out, [true, false, true, true, false, false, false]);
        assert!(excluded_units(&h)[0]);
        assert!(!excluded_units(&h)[5]);
    }
}
