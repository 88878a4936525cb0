//! Exporting a session: Markdown for people, JSON that `strata import` reads back.

use crate::domain::{Message, Role, Session, SystemPrompt};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// One message in the OpenAI chat-completions shape (`role`, `content`,
/// `tool_calls[].function.{name, arguments}`, `tool_call_id`).
#[must_use]
pub fn openai_message(m: &Message) -> Value {
    let mut v = json!({ "role": m.role.as_str() });
    let content = if m.content.is_empty() && !m.tool_calls.is_empty() {
        Value::Null
    } else {
        Value::String(m.content.clone())
    };
    v["content"] = content;
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = Value::String(id.clone());
    }
    v
}

/// `{session, system_prompt: {version, sha256, text}, messages: [...]}` with
/// OpenAI-shaped messages; `strata import` accepts it as is.
#[must_use]
pub fn export_json(session: &Session, prompt: Option<&SystemPrompt>, messages: &[Message]) -> Value {
    json!({
        "session": session,
        "system_prompt": prompt.map(|p| json!({"version": p.version, "sha256": p.sha256, "text": p.text})),
        "messages": messages.iter().map(openai_message).collect::<Vec<_>>(),
    })
}

/// A readable Markdown transcript: a header, the system prompt in a
/// collapsed block, then one section per message. Code fences are made
/// longer than any backtick run inside them, so content never breaks out.
#[must_use]
pub fn export_markdown(session: &Session, prompt: Option<&SystemPrompt>, messages: &[Message]) -> String {
    let mut out = String::new();
    let title = if session.title.is_empty() {
        "Untitled session"
    } else {
        &session.title
    };
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(out, "- session: `{}`", session.id);
    let _ = writeln!(out, "- model: {} ({})", session.model, session.provider);
    let _ = writeln!(out, "- workspace: `{}`", session.workspace);
    let _ = writeln!(out, "- messages: {}\n", messages.len());
    if let Some(p) = prompt {
        let _ = writeln!(
            out,
            "<details><summary>System prompt (version {}, sha256 {})</summary>\n\n{}\n\n</details>\n",
            p.version,
            &p.sha256[..p.sha256.len().min(12)],
            fenced("text", &p.text)
        );
    }
    for m in messages {
        let heading = match m.role {
            Role::System => "System",
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::Tool => "Tool result",
        };
        let _ = write!(out, "## {heading}");
        if let Some(id) = &m.tool_call_id {
            let _ = write!(out, " (`{id}`)");
        }
        if let Some(t) = &m.tool {
            let _ = write!(out, " · {} · {}", t.name, t.status.as_str());
            if t.truncated {
                out.push_str(" · truncated");
            }
            if let Some(path) = &t.spilled_to {
                let _ = write!(out, " · whole output in `{path}`");
            }
        }
        out.push_str("\n\n");
        if m.role == Role::Tool {
            let _ = writeln!(out, "{}\n", fenced("", &m.content));
        } else if !m.content.is_empty() {
            let _ = writeln!(out, "{}\n", m.content);
        }
        for c in &m.tool_calls {
            let _ = writeln!(
                out,
                "Tool call `{}` (`{}`):\n\n{}\n",
                c.name,
                c.id,
                fenced("json", &c.arguments)
            );
        }
    }
    out
}

fn fenced(lang: &str, body: &str) -> String {
    let fence = crate::text::fence_for(body);
    format!("{fence}{lang}\n{body}\n{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SessionId, ToolCall};

    #[test]
    fn fences_wrap_the_body_with_its_language() {
        assert_eq!(fenced("", "a ```` b"), "`````\na ```` b\n`````");
        assert_eq!(fenced("rs", "x"), "```rs\nx\n```");
    }

    #[test]
    fn assistant_tool_call_without_text_has_null_content() {
        let mut m = Message::new(SessionId::new(), Role::Assistant, "", 0);
        m.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "ls".into(),
            arguments: "{}".into(),
        });
        let v = openai_message(&m);
        assert!(v["content"].is_null());
        assert_eq!(v["tool_calls"][0]["function"]["name"], "ls");
    }
}
