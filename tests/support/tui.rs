//! Fixtures for the full-screen app's tests: a frozen prompt with layers,
//! messages, context snapshots, and drawing an app into a test terminal.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod harness;
pub mod tools;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use strata::domain::{
    Fingerprint, LayerInfo, LayerName, Message, MessageKind, PromptId, PromptMode, Role, SessionId,
    SourceInfo, SourceStatus, SystemPrompt, TokenCount,
};
use strata::runtime::Op;
use strata::runtime::service::ServiceEvent;
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
    context_in(messages, 128_000, 16_384)
}

/// [`context`] for a model of `window` tokens reserving `reserved` for
/// the reply.
pub fn context_in(messages: &[Message], window: u64, reserved: u64) -> ContextSnapshot {
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
        window,
        reserved_output: reserved,
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
        compression_helps: true,
        stored_tokens: counts.iter().map(|c| u64::from(*c)).sum::<u64>() + 45,
        prepare_error: None,
        last_usage: None,
        last_compaction: None,
        requests: Vec::new(),
        blocked_reason: None,
        tools_off: None,
        sandbox_note: None,
        tool_servers: None,
        prompt_warnings: Vec::new(),
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
    app.handle(ServiceEvent::Connected {
        provider: "openai".into(),
        model: "gpt-4o".into(),
        embedded: false,
    });
    let context = ctx.or_else(|| Some(context(&messages)));
    let s = (!messages.is_empty()).then(|| session("Refactor the parser"));
    app.handle(ServiceEvent::Loaded(Box::new(SessionView {
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

/// The time a person takes to read a question that just appeared: the
/// app's clock moves on by [`strata::tui::ANSWER_GUARD_MS`], after which
/// keys answer it.
pub fn read_the_question(app: &App) -> AppEvent {
    AppEvent::Clock {
        now_ms: app.now_ms() + strata::tui::ANSWER_GUARD_MS,
    }
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

/// Types `line`, presses Enter and returns the effects, less the
/// history entry the input makes (checked to be `line`).
pub fn entered(app: &mut App, line: &str) -> Vec<strata::tui::Effect> {
    type_text(app, line);
    let mut effects = app.handle(key(KeyCode::Enter));
    assert_eq!(
        effects.first(),
        Some(&strata::tui::Effect::Op(Op::RememberInput(line.to_owned()))),
        "{line} goes to the history first"
    );
    effects.remove(0);
    effects
}

/// A realistic OpenAI wire body of `messages` messages, pretty-printed as
/// the request inspector shows it: a long system prompt, then user turns,
/// Markdown replies with code, tool calls and tool results, about 200
/// tokens a message (10,000 messages: some 2M tokens, 8 MB of text).
pub fn request_json(messages: usize) -> String {
    use strata::domain::{ChatRequest, RequestMessage, RequestSystem, ToolCall};
    const WORDS: [&str; 24] = [
        "the",
        "parser",
        "keeps",
        "a",
        "stack",
        "of",
        "open",
        "scopes",
        "and",
        "token",
        "budget",
        "layer",
        "prompt",
        "cache",
        "boundary",
        "history",
        "compression",
        "summary",
        "message",
        "request",
        "session",
        "store",
        "日本語",
        "🙂",
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut prose = |words: usize| {
        let mut s = String::new();
        for i in 0..words {
            s.push_str(WORDS[next(WORDS.len())]);
            s.push(if i % 17 == 16 { '.' } else { ' ' });
        }
        s
    };
    let msg = |role, content: String| RequestMessage {
        role,
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
    };
    let mut list = Vec::with_capacity(messages);
    for i in 0..messages {
        let m = match i % 4 {
            0 => msg(
                Role::User,
                format!("Request {i}: {}\nRun `cargo test` after.", prose(150)),
            ),
            1 => msg(
                Role::Assistant,
                format!(
                    "## Step {i}\n\n{}\n\n```rust\nfn step_{i}(x: u64) -> u64 {{\n    x * {i}\n}}\n```\n\n- {}\n- {}",
                    prose(140),
                    prose(16),
                    prose(16)
                ),
            ),
            2 => RequestMessage {
                tool_calls: vec![ToolCall {
                    id: format!("call_{i}"),
                    name: "read_file".into(),
                    arguments: format!("{{\"path\":\"src/module_{i}.rs\"}}"),
                }],
                ..msg(Role::Assistant, prose(30))
            },
            _ => RequestMessage {
                tool_call_id: Some(format!("call_{}", i - 1)),
                ..msg(
                    Role::Tool,
                    (0..12)
                        .map(|l| format!("    let v{l} = {}; // {}\n", l * i, prose(6)))
                        .collect(),
                )
            },
        };
        list.push(m);
    }
    let request = ChatRequest {
        model: "gpt-4o".into(),
        system: RequestSystem {
            text: format!("You are strata's assistant.\n\n# AGENTS.md\n{}", prose(2_000)),
            boundary_offset: None,
        },
        messages: list,
        max_tokens: 16_384,
        tools: Vec::new(),
        temperature: None,
    };
    serde_json::to_string_pretty(&strata::provider::openai::request_body(&request)).unwrap()
}

/// A Markdown reply of at least `lines` lines, as a model writes one:
/// headings, prose, lists, fenced code, tables and quotes in turn.
pub fn long_reply(lines: usize) -> String {
    let mut t = String::new();
    let mut i = 0;
    while t.lines().count() < lines {
        t.push_str(&format!(
            "## Step {i}\n\nThe **pipeline** keeps the prompt byte-stable so the provider's cache hits; \
             see `prepare()` and [the design](https://example.com/{i}). Long sentences like this wrap \
             across rows of the chat pane. 日本語も少し。\n\n"
        ));
        match i % 4 {
            0 => {
                t.push_str("```rust\n");
                for j in 0..12 {
                    t.push_str(&format!("let total_{j} = items.iter().map(|x| x.cost * {j}).sum::<u64>();\n"));
                }
                t.push_str("```\n\n");
            }
            1 => t.push_str("- first point about tokens\n- second, with `code`\n  - nested detail\n1. ordered\n2. list\n\n"),
            2 => t.push_str("| layer | tokens | status |\n|---|---:|---|\n| project | 1204 | found |\n| memory | 88 | cut |\n\n"),
            _ => t.push_str("> A quoted remark\n> over two lines.\n\n"),
        }
        i += 1;
    }
    t
}

/// The keys of the inspector benchmarks, in turn: mostly paging and line
/// steps down, some back up, and a jump to each end.
pub fn inspector_key(n: u32) -> KeyCode {
    match n % 100 {
        0..40 => KeyCode::PageDown,
        40..70 => KeyCode::Down,
        70 => KeyCode::End,
        71..90 => KeyCode::PageUp,
        90 => KeyCode::Home,
        _ => KeyCode::Up,
    }
}

/// The deltas of the streaming benchmarks, in turn: words of a paragraph,
/// then the blank line that ends it.
pub fn stream_delta(n: usize) -> &'static str {
    const WORDS: [&str; 8] = [
        "The ", "reply ", "keeps ", "growing ", "word ", "by ", "word, ", "`code` ",
    ];
    if n % 60 == 59 {
        "\n\n"
    } else {
        WORDS[n % WORDS.len()]
    }
}

/// An app of `w`×`h` with the request inspector open on `json`.
pub fn inspecting(w: u16, h: u16, json: String) -> App {
    let mut app = app_with(w, h, Vec::new(), None);
    type_text(&mut app, "/inspect");
    app.handle(key(KeyCode::Enter));
    app.handle(ServiceEvent::Request(Box::new(strata::tui::RequestView {
        prepared_tokens: (json.len() / 4) as u64,
        json,
        report: Vec::new(),
    })));
    app
}

/// Does what the terminal loop does with one of the app's effects: an op
/// goes to the session, quitting cancels the turn (the tests have no
/// editor).
pub fn apply(handle: &strata::runtime::SessionHandle, effect: strata::tui::Effect) {
    match effect {
        strata::tui::Effect::Op(op) => handle.send(op),
        strata::tui::Effect::Quit => handle.send(strata::runtime::Op::Cancel),
        strata::tui::Effect::EditInEditor(_) => {}
    }
}
