//! Tool calls left without a result: a process killed while a tool ran
//! stored the call but not its result. When the session is opened again,
//! the runtime stores an `interrupted` result for each (the way a reply
//! that died streaming is marked interrupted), so the next request pairs
//! every call with a real result.

use crate::domain::{Message, Role, ToolCall};

/// The calls of the session's last reply with tool calls that have no
/// result, when nothing but its results follows it (`messages` are the
/// active messages, oldest first). Empty otherwise: a later user message
/// means the turn moved on and the pipeline's repair applies.
#[must_use]
pub fn unanswered_calls(messages: &[Message]) -> Vec<ToolCall> {
    let Some(at) = messages
        .iter()
        .rposition(|m| m.role != Role::Tool && m.archived_by.is_none())
    else {
        return Vec::new();
    };
    let reply = &messages[at];
    if reply.role != Role::Assistant || reply.tool_calls.is_empty() {
        return Vec::new();
    }
    let answered: std::collections::HashSet<&str> = messages[at + 1..]
        .iter()
        .filter(|m| m.archived_by.is_none())
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    reply
        .tool_calls
        .iter()
        .filter(|c| !answered.contains(c.id.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::SessionId;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "shell".into(),
            arguments: "{}".into(),
        }
    }

    fn reply(session: SessionId, calls: &[&str]) -> Message {
        let mut m = Message::new(session, Role::Assistant, "", 0);
        m.tool_calls = calls.iter().map(|c| call(c)).collect();
        m
    }

    fn result(session: SessionId, id: &str) -> Message {
        let mut m = Message::new(session, Role::Tool, "ok", 0);
        m.tool_call_id = Some(id.into());
        m
    }

    #[test]
    fn a_call_without_its_result_at_the_end_is_unanswered() {
        let s = SessionId::new();
        let history = vec![
            Message::new(s, Role::User, "run it", 0),
            reply(s, &["a", "b"]),
            result(s, "a"),
        ];
        let ids: Vec<String> = unanswered_calls(&history).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["b"]);
    }

    #[test]
    fn answered_calls_and_moved_on_turns_are_left_alone() {
        let s = SessionId::new();
        let answered = vec![reply(s, &["a"]), result(s, "a")];
        assert!(unanswered_calls(&answered).is_empty());
        let moved_on = vec![reply(s, &["a"]), Message::new(s, Role::User, "next", 0)];
        assert!(unanswered_calls(&moved_on).is_empty());
        let plain = vec![Message::new(s, Role::Assistant, "hi", 0)];
        assert!(unanswered_calls(&plain).is_empty());
    }
}
