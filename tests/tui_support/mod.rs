//! Fixtures for the full-screen app's tests: a frozen prompt with layers,
//! messages, context snapshots, and drawing an app into a test terminal.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use strata::domain::{
    Fingerprint, LayerInfo, LayerName, Message, MessageKind, PromptId, PromptMode, Role, SessionId,
    SourceInfo, SourceStatus, SystemPrompt, TokenCount,
};
use strata::tokens::{Budget, BudgetInput, ThresholdSettings};
use strata::tui::{App, AppEvent, ContextSnapshot, KeyMap, SessionView};

pub fn session_id(n: u128) -> SessionId {
    SessionId::from(uuid::Uuid::from_u128(
        0x0193_0000_0000_7000_8000_0000_0000_0000 + n,
    ))
}

/// A prompt of four layers with the cache boundary before `session`.
pub fn prompt() -> SystemPrompt {
    let parts: [(LayerName, &str, usize, Option<&str>); 4] = [
        (LayerName::Identity, "You are strata's assistant.\n\n", 7, None),
        (
            LayerName::Project,
            "# AGENTS.md\nUse cargo test before committing.\n\n",
            12,
            Some("/repo/AGENTS.md"),
        ),
        (LayerName::CacheBoundary, "<!-- cache boundary -->\n\n", 6, None),
        (LayerName::Session, "Date: 2026-11-29. Model: gpt-4o.\n", 14, None),
    ];
    let mut text = String::new();
    let mut layers = Vec::new();
    let mut boundary = None;
    for (name, body, tokens, source) in parts {
        let start = text.len();
        if name == LayerName::CacheBoundary {
            boundary = Some(start);
        }
        text.push_str(body);
        layers.push(LayerInfo {
            name,
            tier: name.tier(),
            start,
            end: text.len(),
            chars: body.chars().count(),
            tokens,
            sources: source
                .map(|p| SourceInfo {
                    path: p.to_owned(),
                    status: SourceStatus::Found,
                    original_chars: body.chars().count() as u64,
                    kept_chars: body.chars().count() as u64,
                })
                .into_iter()
                .collect(),
        });
    }
    SystemPrompt {
        id: PromptId::from(uuid::Uuid::from_u128(7)),
        session_id: session_id(1),
        version: 1,
        text,
        layers,
        boundary_offset: boundary,
        sha256: "ab12cd34ef56ab12cd34ef56".to_owned(),
        fingerprint: Fingerprint {
            provider: strata::domain::ProviderKind::OpenAi,
            model: "gpt-4o".into(),
            mode: PromptMode::Full,
            tool_set_hash: String::new(),
            template_version: 1,
        },
        created_at: 1_764_400_000_000,
    }
}

pub fn msg(role: Role, text: &str, tokens: u32) -> Message {
    let mut m = Message::new(session_id(1), role, text, 1_764_400_000_000);
    m.tokens = Some(TokenCount {
        tokenizer: "o200k_base".into(),
        tokens,
    });
    m
}

pub fn summary(text: &str) -> Message {
    let mut m = msg(Role::User, text, 120);
    m.kind = MessageKind::Summary;
    m
}

pub fn context(messages: &[Message]) -> ContextSnapshot {
    let prompt = prompt();
    let counts: Vec<u32> = messages
        .iter()
        .map(|m| m.tokens.as_ref().map_or(0, |t| t.tokens))
        .collect();
    let budget = Budget::compute(BudgetInput {
        layers: &prompt.layers,
        boundary_offset: prompt.boundary_offset,
        history: messages,
        history_tokens: &counts,
        tools: &[],
        window: 128_000,
        reserved_output: 16_384,
        threshold: ThresholdSettings::default(),
        tokenizer: "o200k_base",
        exact: false,
    });
    ContextSnapshot {
        prompt,
        budget,
        report: Vec::new(),
        prepared_tokens: Some(counts.iter().map(|c| u64::from(*c)).sum::<u64>() + 45),
        prelimit_tokens: Some(counts.iter().map(|c| u64::from(*c)).sum::<u64>() + 45),
        stored_tokens: counts.iter().map(|c| u64::from(*c)).sum::<u64>() + 45,
        prepare_error: None,
        last_usage: None,
        last_compaction: None,
        blocked_reason: None,
    }
}

pub fn session(title: &str) -> strata::domain::Session {
    strata::domain::Session {
        id: session_id(1),
        title: title.into(),
        workspace: "/home/ada/strata".into(),
        model: "gpt-4o".into(),
        provider: strata::domain::ProviderKind::OpenAi,
        current_prompt_id: None,
        parent_id: None,
        created_at: 1_764_400_000_000,
        updated_at: 1_764_400_000_000,
    }
}

/// An app of `w`×`h`, connected to gpt-4o, showing `messages`.
pub fn app_with(w: u16, h: u16, messages: Vec<Message>, ctx: Option<ContextSnapshot>) -> App {
    let mut app = App::new(KeyMap::default(), w, h);
    app.handle(AppEvent::Connected {
        provider: "openai".into(),
        model: "gpt-4o".into(),
        embedded: false,
    });
    let context = ctx.or_else(|| Some(context(&messages)));
    let s = (!messages.is_empty()).then(|| session("Refactor the parser"));
    app.handle(AppEvent::Loaded(Box::new(SessionView {
        session: s,
        messages,
        context,
    })));
    app
}

pub fn draw(app: &App, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| strata::tui::draw(app, f.area(), f.buffer_mut()))
        .unwrap();
    format!("{}", terminal.backend())
}

pub fn key(code: KeyCode) -> AppEvent {
    AppEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> AppEvent {
    AppEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

/// Types `text` into the app, returning every effect.
pub fn type_text(app: &mut App, text: &str) -> Vec<strata::tui::Effect> {
    let mut out = Vec::new();
    for c in text.chars() {
        out.extend(app.handle(key(KeyCode::Char(c))));
    }
    out
}
