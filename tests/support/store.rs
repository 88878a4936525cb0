//! Builders shared by the store tests: a session with a realistic prompt
//! version, and messages with every optional field set.

#![allow(dead_code)]

use strata::domain::{
    Fingerprint, LayerInfo, LayerName, Message, MessageKind, MessageStatus, PromptId, PromptMode, Role,
    Session, SessionId, SourceInfo, SourceStatus, SystemPrompt, TokenCount, ToolCall,
};

/// A prompt version for `session` with two layers and a boundary.
pub fn prompt(session: SessionId, version: u32, model: &str) -> SystemPrompt {
    let text = format!("You are strata's assistant.\n\n<!-- cache boundary -->\n\nmodel {model}\n");
    let boundary = text.find("<!--").unwrap();
    SystemPrompt {
        id: PromptId::new(),
        session_id: session,
        version,
        layers: vec![
            LayerInfo {
                name: LayerName::Identity,
                tier: LayerName::Identity.tier(),
                start: 0,
                end: boundary,
                chars: boundary,
                tokens: 7,
                sources: vec![SourceInfo {
                    path: "builtin:identity.md".into(),
                    status: SourceStatus::Found,
                    original_chars: 27,
                    kept_chars: 27,
                }],
            },
            LayerInfo {
                name: LayerName::CacheBoundary,
                tier: LayerName::CacheBoundary.tier(),
                start: boundary,
                end: text.len(),
                chars: text.len() - boundary,
                tokens: 9,
                sources: vec![SourceInfo {
                    path: "/home/u/project/AGENTS.md".into(),
                    status: SourceStatus::Truncated,
                    original_chars: 300_000,
                    kept_chars: 120_000,
                }],
            },
        ],
        boundary_offset: Some(boundary),
        sha256: "ab".repeat(32),
        fingerprint: Fingerprint {
            provider: strata::domain::ProviderKind::OpenAi,
            model: model.into(),
            mode: PromptMode::Minimal,
            tool_set_hash: "tools-1".into(),
            template_version: 3,
        },
        created_at: 1_700_000_000_000 + i64::from(version),
        text,
    }
}

/// A session of `workspace` titled `title`, and its version-1 prompt.
pub fn session(workspace: &str, title: &str) -> (Session, SystemPrompt) {
    let id = SessionId::new();
    let p = prompt(id, 1, "gpt-4o");
    let s = Session {
        id,
        title: title.into(),
        workspace: workspace.into(),
        model: "gpt-4o".into(),
        provider: strata::domain::ProviderKind::OpenAi,
        current_prompt_id: Some(p.id),
        parent_id: None,
        created_at: 1_700_000_000_000,
        updated_at: 1_700_000_000_000,
    };
    (s, p)
}

/// A plain user message.
pub fn user(session: SessionId, text: &str) -> Message {
    Message::new(session, Role::User, text, 1_700_000_000_123)
}

/// An assistant message using every optional field.
pub fn rich_assistant(session: SessionId) -> Message {
    let mut m = Message::new(
        session,
        Role::Assistant,
        "Let me look — ünïcödé 日本 🎉",
        1_700_000_000_456,
    );
    m.tool_calls = vec![
        ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"src/main.rs"}"#.into(),
        },
        ToolCall {
            id: "call_2".into(),
            name: "grep".into(),
            arguments: "{\"pattern\": \"unterminated".into(),
        },
    ];
    m.pinned = true;
    m.excluded = true;
    m.interruption = Some(strata::domain::Interruption::CutOff);
    m.ephemeral_ttl = Some(3);
    m.kind = MessageKind::Synthetic;
    m.status = MessageStatus::Interrupted;
    m.tokens = Some(TokenCount {
        tokenizer: "o200k_base".into(),
        tokens: 42,
    });
    m
}

/// A tool result answering `call_1`.
pub fn tool_result(session: SessionId) -> Message {
    let mut m = Message::new(session, Role::Tool, "fn main() {}", 1_700_000_000_789);
    m.tool_call_id = Some("call_1".into());
    m.kind = MessageKind::Summary;
    m.status = MessageStatus::Error;
    m.tokens = Some(TokenCount {
        tokenizer: "cl100k_base".into(),
        tokens: 8,
    });
    m
}
