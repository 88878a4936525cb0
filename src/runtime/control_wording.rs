//! How a pin, unpin, exclude or include is said: one sentence for the
//! command line and the app alike ("Excluded message 7 (tool read_file,
//! −1.2k tokens).").

use super::context_control::{ControlAction, ControlMessage, ControlOutcome};
use crate::domain::Role;

impl ControlOutcome {
    /// The outcome as one sentence.
    #[must_use]
    pub fn sentence(&self) -> String {
        line(self)
    }
}

/// `1.2k` for 1,234 tokens, `850` under a thousand.
fn short(tokens: u64) -> String {
    if tokens < 1_000 {
        tokens.to_string()
    } else {
        format!("{:.1}k", tokens as f64 / 1_000.0)
    }
}

/// `user`, `tool read_file`, `calls read_file, grep`.
fn what(m: &ControlMessage) -> String {
    match (m.role, m.tools.is_empty()) {
        (Role::Tool, false) => format!("tool {}", m.tools.join(", ")),
        (Role::Assistant, false) => format!("calls {}", m.tools.join(", ")),
        (role, _) => role.as_str().to_owned(),
    }
}

/// The outcome as one line: `Excluded message 7 (tool read_file, −1.2k tokens).`
fn line(o: &ControlOutcome) -> String {
    let pos = o.target.pos;
    let what = what(&o.target);
    let pinned = match (o.pinned_tokens, o.pinned_limit) {
        (Some(t), Some(l)) => format!(
            "; pinned messages take {} of at most {} tokens",
            short(t),
            short(l)
        ),
        _ => String::new(),
    };
    if o.changed.is_empty() {
        let state = match o.action {
            ControlAction::Pin => "already pinned",
            ControlAction::Unpin => "not pinned",
            ControlAction::Exclude => "already excluded",
            ControlAction::Include => "not excluded",
        };
        return format!("Message {pos} ({what}) is {state}; nothing changed.");
    }
    let others = o.changed.iter().filter(|c| c.pos != pos).count();
    let with = match others {
        0 => String::new(),
        1 => " with 1 other message of its tool call".to_owned(),
        n => format!(" with {n} other messages of its tool call"),
    };
    let tokens = short(o.tokens);
    match o.action {
        ControlAction::Exclude => format!("Excluded message {pos}{with} ({what}, −{tokens} tokens)."),
        ControlAction::Include => format!("Included message {pos}{with} ({what}, +{tokens} tokens)."),
        ControlAction::Pin => format!("Pinned message {pos} ({what}, {tokens} tokens){pinned}."),
        ControlAction::Unpin => format!("Unpinned message {pos}{with} ({what}){pinned}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{MessageId, SessionId};

    fn outcome(action: ControlAction, changed: usize) -> ControlOutcome {
        let target = ControlMessage {
            pos: 7,
            message_id: MessageId::new(),
            role: Role::Tool,
            tools: vec!["read_file".into()],
        };
        ControlOutcome {
            action,
            session_id: SessionId::new(),
            target: target.clone(),
            changed: vec![target; changed],
            tokens: 1_234,
            pinned_tokens: None,
            pinned_limit: None,
        }
    }

    #[test]
    fn outcomes_read_as_one_line() {
        assert_eq!(
            line(&outcome(ControlAction::Exclude, 1)),
            "Excluded message 7 (tool read_file, −1.2k tokens)."
        );
        assert_eq!(
            line(&outcome(ControlAction::Include, 1)),
            "Included message 7 (tool read_file, +1.2k tokens)."
        );
        assert_eq!(
            line(&outcome(ControlAction::Exclude, 0)),
            "Message 7 (tool read_file) is already excluded; nothing changed."
        );
        let mut pinned = outcome(ControlAction::Pin, 1);
        pinned.pinned_tokens = Some(3_400);
        pinned.pinned_limit = Some(64_000);
        assert_eq!(
            line(&pinned),
            "Pinned message 7 (tool read_file, 1.2k tokens); pinned messages take 3.4k of at most 64.0k tokens."
        );
    }
}
