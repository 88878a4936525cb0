//! Stage 6: the provider rules every prepared request must satisfy. A
//! violation means an earlier stage has a bug; the request is refused with
//! [`PrepareError::Invalid`] rather than sent.
//!
//! Rules: at least one message; the first message that is not a system
//! message is a user message; no system message when the provider takes a
//! single system prompt; no two consecutive messages of one role other than
//! tool results; only assistant messages carry tool calls and only tool
//! messages a `tool_call_id`; every call is answered exactly once by the run
//! of tool messages right after its message, and every tool message answers
//! a call of the message before its run; call ids are unique in a message;
//! the request (with tool schemas and output reserve) fits the window.

use super::{PrepareError, PrepareInput, Prepared};
use crate::domain::{RequestMessage, Role};

/// Checks `prepared` against the rules of the module doc.
///
/// # Errors
///
/// [`PrepareError::Invalid`] naming the first rule broken.
pub(crate) fn validate(prepared: &Prepared, input: &PrepareInput<'_>) -> Result<(), PrepareError> {
    check_messages(&prepared.request.messages, input.single_system).map_err(PrepareError::Invalid)?;
    let total = prepared.prepared_tokens + input.tool_tokens + input.reserved_output;
    if total > input.window {
        return Err(PrepareError::Invalid(format!(
            "{total} tokens with tools and output reserve exceed the window of {}",
            input.window
        )));
    }
    Ok(())
}

/// The message rules; `Err` says which one broke and where.
pub(crate) fn check_messages(msgs: &[RequestMessage], single_system: bool) -> Result<(), String> {
    match msgs.iter().find(|m| m.role != Role::System) {
        None => return Err("no user message to send".into()),
        Some(m) if m.role != Role::User => {
            return Err(format!("the first message has the role {}", m.role.as_str()));
        }
        Some(_) => {}
    }
    let mut k = 0;
    while k < msgs.len() {
        let m = &msgs[k];
        let role = m.role.as_str();
        if single_system && m.role == Role::System {
            return Err(format!(
                "message {k} is a system message but the provider takes one system prompt"
            ));
        }
        if m.role != Role::Assistant && !m.tool_calls.is_empty() {
            return Err(format!("{role} message {k} carries tool calls"));
        }
        if m.role != Role::Tool && m.tool_call_id.is_some() {
            return Err(format!("{role} message {k} carries a tool_call_id"));
        }
        if k > 0 && msgs[k - 1].role == m.role {
            return Err(format!("messages {} and {k} are both {role} messages", k - 1));
        }
        match m.role {
            Role::Tool => return Err(format!("tool message {k} answers no call before it")),
            Role::Assistant if !m.tool_calls.is_empty() => k = check_results(msgs, k)?,
            _ => k += 1,
        }
    }
    Ok(())
}

/// Checks the result run after the assistant message `k`; returns the index
/// after the run.
fn check_results(msgs: &[RequestMessage], k: usize) -> Result<usize, String> {
    let mut open: Vec<&str> = Vec::with_capacity(msgs[k].tool_calls.len());
    for call in &msgs[k].tool_calls {
        if open.contains(&call.id.as_str()) {
            return Err(format!("message {k} has two calls with id {}", call.id));
        }
        open.push(&call.id);
    }
    let mut j = k + 1;
    while let Some(r) = msgs.get(j).filter(|r| r.role == Role::Tool) {
        if !r.tool_calls.is_empty() {
            return Err(format!("tool message {j} carries tool calls"));
        }
        let id = r.tool_call_id.as_deref().unwrap_or("");
        let Some(pos) = open.iter().position(|o| *o == id) else {
            return Err(format!("tool message {j} answers no open call of message {k}"));
        };
        open.swap_remove(pos);
        j += 1;
    }
    match open.first() {
        Some(id) => Err(format!("call {id} of message {k} has no result")),
        None => Ok(j),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ToolCall;

    fn m(role: Role) -> RequestMessage {
        RequestMessage {
            role,
            content: "x".into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    fn calls(ids: &[&str]) -> RequestMessage {
        let mut a = m(Role::Assistant);
        a.tool_calls = ids
            .iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                name: "f".into(),
                arguments: "{}".into(),
            })
            .collect();
        a
    }

    fn result(id: &str) -> RequestMessage {
        let mut r = m(Role::Tool);
        r.tool_call_id = Some(id.into());
        r
    }

    #[test]
    fn a_well_formed_exchange_passes() {
        let msgs = [
            m(Role::User),
            calls(&["a", "b"]),
            result("b"),
            result("a"),
            m(Role::Assistant),
        ];
        assert_eq!(check_messages(&msgs, true), Ok(()));
        let with_system = [m(Role::System), m(Role::User), m(Role::System), m(Role::User)];
        assert_eq!(check_messages(&with_system, false), Ok(()));
    }

    #[test]
    fn each_rule_is_enforced() {
        use Role::*;
        let cases: Vec<(Vec<RequestMessage>, &str)> = vec![
            (vec![], "no user message"),
            (vec![m(Assistant)], "first message has the role assistant"),
            (vec![m(System), m(User)], "provider takes one system prompt"),
            (vec![m(User), m(User)], "both user"),
            (vec![m(User), calls(&["a"])], "call a of message 1 has no result"),
            (vec![m(User), calls(&["a"]), result("b")], "answers no open call"),
            (
                vec![m(User), calls(&["a", "a"]), result("a"), result("a")],
                "two calls with id a",
            ),
            (vec![m(User), result("a")], "tool message 1 answers no call"),
            (
                vec![m(User), calls(&["a"]), result("a"), result("a")],
                "answers no open call",
            ),
        ];
        for (msgs, want) in cases {
            let err = check_messages(&msgs, true).unwrap_err();
            assert!(err.contains(want), "{err:?} should mention {want:?}");
        }
    }
}
