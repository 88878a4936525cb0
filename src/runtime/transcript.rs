//! Exporting a session: Markdown for people (also what `strata show`
//! prints, with token counts), JSON that `strata import` reads back.

use crate::domain::{Message, Role, Session, SystemPrompt};
use crate::text::group_digits;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// One message in the OpenAI chat-completions shape (`role`, `content`,
/// `tool_calls[].function.{name, arguments}`, `tool_call_id`), plus strata's
/// own `"pinned": true` and `"excluded": true` when the message has them
/// (absent otherwise; `strata import` reads them back, other readers of the
/// OpenAI shape ignore them).
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
    if m.pinned {
        v["pinned"] = Value::Bool(true);
    }
    if m.excluded {
        v["excluded"] = Value::Bool(true);
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
/// longer than any backtick run inside them, so content never breaks out,
/// and a fence a message leaves open is closed at its end, so it never
/// swallows the messages after it.
#[must_use]
pub fn export_markdown(session: &Session, prompt: Option<&SystemPrompt>, messages: &[Message]) -> String {
    markdown(session, prompt, messages, false)
}

/// What `strata show` prints: [`export_markdown`] with each active
/// message's position (`pos`, counting from 1 among the active messages,
/// what `strata pin|exclude ID MSG` take) and token count in its heading
/// (`## 3 · User · pinned · 24 tokens`, the count from [`Message::tokens`];
/// none for a message without one), `archived` instead of a position for
/// an archived one, `pinned` and `excluded` when set, and the counts' sum
/// in the header.
#[must_use]
pub fn show_markdown(session: &Session, prompt: Option<&SystemPrompt>, messages: &[Message]) -> String {
    markdown(session, prompt, messages, true)
}

fn markdown(session: &Session, prompt: Option<&SystemPrompt>, messages: &[Message], tokens: bool) -> String {
    let mut out = String::new();
    let title = if session.title.is_empty() {
        "Untitled session"
    } else {
        &session.title
    };
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(
        out,
        "- session: `{}` (short id `{}`)",
        session.id,
        session.id.short()
    );
    let _ = writeln!(out, "- model: {} ({})", session.model, session.provider);
    let _ = writeln!(out, "- workspace: `{}`", session.workspace);
    let _ = write!(out, "- messages: {}", messages.len());
    if tokens {
        let total: u64 = messages
            .iter()
            .filter_map(|m| m.tokens.as_ref())
            .map(|t| u64::from(t.tokens))
            .sum();
        let _ = write!(out, " · {} tokens", group_digits(total));
    }
    out.push_str("\n\n");
    if let Some(p) = prompt {
        let _ = writeln!(
            out,
            "<details><summary>System prompt (version {}, sha256 {})</summary>\n\n{}\n\n</details>\n",
            p.version,
            &p.sha256[..p.sha256.len().min(12)],
            fenced("text", &p.text)
        );
    }
    let mut pos = 0;
    for m in messages {
        let heading = match m.role {
            Role::System => "System",
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::Tool => "Tool result",
        };
        out.push_str("## ");
        if tokens {
            if m.archived_by.is_some() {
                out.push_str("archived · ");
            } else {
                pos += 1;
                let _ = write!(out, "{pos} · ");
            }
        }
        out.push_str(heading);
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
        if let Some(words) = m.status_words() {
            let _ = write!(out, " · {words}");
        }
        if tokens && m.pinned {
            out.push_str(" · pinned");
        }
        if tokens && m.excluded {
            out.push_str(" · excluded");
        }
        if let Some(count) = m.tokens.as_ref().filter(|_| tokens) {
            let unit = if count.tokens == 1 { "token" } else { "tokens" };
            let _ = write!(out, " · {} {unit}", group_digits(u64::from(count.tokens)));
        }
        out.push_str("\n\n");
        if m.role == Role::Tool {
            let _ = writeln!(out, "{}\n", fenced("", &m.content));
        } else if !m.content.is_empty() {
            out.push_str(&m.content);
            if let Some(fence) = open_fence(&m.content) {
                out.push('\n');
                out.push_str(&fence);
            }
            out.push_str("\n\n");
        }
        if let Some(error) = &m.error {
            let _ = writeln!(out, "> Failed: {}\n", error.replace('\n', " "));
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

/// The line that closes the fenced code block `text` leaves open at its
/// end (the opening fence's character, as many times), `None` when it
/// leaves none open. Only a block outside lists and quotes can stay open
/// past the text: those close with their container at the next heading.
fn open_fence(text: &str) -> Option<String> {
    if !text.contains("```") && !text.contains("~~~") {
        return None;
    }
    let mut depth = 0usize;
    let mut last = None;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) if depth == 0 => last = Some(range),
            Event::End(TagEnd::CodeBlock) if depth == 0 => {}
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let range = last?;
    if range.end < text.trim_end().len() {
        return None; // something follows the block, so it was closed
    }
    let block = text.get(range)?;
    let mut lines = block.lines();
    let opening = lines.next()?.trim_start();
    let ch = opening.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = opening.chars().take_while(|c| *c == ch).count();
    let closed = lines.rfind(|l| !l.trim().is_empty()).is_some_and(|l| {
        let l = l.trim();
        l.chars().all(|c| c == ch) && l.chars().count() >= len
    });
    (!closed).then(|| ch.to_string().repeat(len))
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
    fn a_fence_left_open_is_found_with_its_character_and_length() {
        assert_eq!(open_fence("see:\n```rust\nfn main() {}"), Some("```".into()));
        assert_eq!(open_fence("~~~~\ncode\n```\n"), Some("~~~~".into()));
        assert_eq!(open_fence("````\nx\n```"), Some("````".into()));
        assert_eq!(open_fence("```"), Some("```".into()));
        assert_eq!(open_fence("```\ncode\n```\n\n"), None);
        assert_eq!(open_fence("```\na\n```\ntext after"), None);
        assert_eq!(open_fence("no code, only `inline` ticks"), None);
        // Inside a list or a quote the block closes with its container.
        assert_eq!(open_fence("- item\n\n  ```\n  code"), None);
        assert_eq!(open_fence("> ```\n> code"), None);
    }

    #[test]
    fn an_open_fence_does_not_swallow_the_next_message() {
        let session = Session {
            id: "0190c3a0-1b2c-7d3e-8f40-5e6f1a2b3c4d".parse().unwrap(),
            title: "t".into(),
            workspace: "/w".into(),
            model: "m".into(),
            provider: crate::domain::ProviderKind::OpenAi,
            current_prompt_id: None,
            parent_id: None,
            created_at: 0,
            updated_at: 0,
        };
        let messages = [
            Message::new(session.id, Role::Assistant, "Here:\n```python\nprint(1)", 0),
            Message::new(session.id, Role::User, "thanks", 0),
        ];
        let md = export_markdown(&session, None, &messages);
        assert!(
            md.contains("```python\nprint(1)\n```\n\n## User\n\nthanks\n"),
            "{md}"
        );
        // A CommonMark reader sees the second heading as a heading.
        let headings = Parser::new(&md)
            .filter(|e| matches!(e, Event::Start(Tag::Heading { .. })))
            .count();
        assert_eq!(headings, 3, "{md}");
        assert!(md.contains("- session: `0190c3a0-1b2c-7d3e-8f40-5e6f1a2b3c4d` (short id `1a2b3c4d`)"));
    }

    #[test]
    fn show_puts_each_message_s_tokens_in_its_heading() {
        let session_id = SessionId::new();
        let session = Session {
            id: session_id,
            title: String::new(),
            workspace: "/w".into(),
            model: "m".into(),
            provider: crate::domain::ProviderKind::OpenAi,
            current_prompt_id: None,
            parent_id: None,
            created_at: 0,
            updated_at: 0,
        };
        let counted = |role, text: &str, n| {
            let mut m = Message::new(session_id, role, text, 0);
            m.tokens = Some(crate::domain::TokenCount {
                tokenizer: "o200k_base".into(),
                tokens: n,
            });
            m
        };
        let mut archived = counted(Role::User, "old", 3);
        archived.archived_by = Some(crate::domain::CompactionId::new());
        let mut pinned = counted(Role::User, "hi", 1);
        pinned.pinned = true;
        let messages = [archived, pinned, counted(Role::Assistant, "hello there", 1_204)];
        let md = show_markdown(&session, None, &messages);
        assert!(md.contains("## archived · User · 3 tokens\n"), "{md}");
        assert!(md.contains("## 1 · User · pinned · 1 token\n"), "{md}");
        let messages = &messages[1..];
        let md = show_markdown(&session, None, messages);
        assert!(md.contains("- messages: 2 · 1,205 tokens\n"), "{md}");
        assert!(md.contains("## 1 · User · pinned · 1 token\n"), "{md}");
        assert!(md.contains("## 2 · Assistant · 1,204 tokens\n"), "{md}");
        let export = export_markdown(&session, None, messages);
        assert!(
            !export.contains("tokens") && !export.contains("pinned"),
            "{export}"
        );

        // A reply that stopped early says how, in show and export alike.
        let mut failed = counted(Role::Assistant, "half of it", 3);
        failed.status = crate::domain::MessageStatus::Interrupted;
        failed.interruption = Some(crate::domain::Interruption::Failed);
        failed.error = Some("the connection broke during the reply".into());
        let mut cancelled = counted(Role::Assistant, "stopped", 1);
        cancelled.status = crate::domain::MessageStatus::Interrupted;
        let messages = [failed, cancelled];
        let md = show_markdown(&session, None, &messages);
        assert!(
            md.contains("## 1 · Assistant · failed mid-reply · 3 tokens\n"),
            "{md}"
        );
        assert!(md.contains("## 2 · Assistant · interrupted · 1 token\n"), "{md}");
        let export = export_markdown(&session, None, &messages);
        assert!(export.contains("## Assistant · failed mid-reply\n"), "{export}");
        assert!(
            md.contains("half of it\n\n> Failed: the connection broke during the reply\n"),
            "{md}"
        );
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
        assert!(v.get("pinned").is_none() && v.get("excluded").is_none());
        m.pinned = true;
        m.excluded = true;
        let v = openai_message(&m);
        assert_eq!((&v["pinned"], &v["excluded"]), (&json!(true), &json!(true)));
    }
}
