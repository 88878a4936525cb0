//! Full-screen app benchmarks (DESIGN §12): key-to-frame with a
//! 10,000-message session loaded (one key through `App::handle`, then one
//! frame drawn at 120×36; target p95 ≤ 8 ms), scrolling a page up through
//! that history, the first frame of a freshly loaded session (wrapped
//! lines not cached yet), key-to-frame with the request inspector open on
//! a 2M-token request (10,000 messages, 8 MB of JSON; same target), and a
//! frame of a 20,000-line reply streaming in (one delta, then the frame),
//! and tool blocks: moving the selection through a session of 5,000 tool
//! calls and expanding a block with a 2,000-line result (key, then frame),
//! and the context list over a 10,000-message session: opening it (the
//! key, the rows arriving, the first frame) and re-sorting it by cost
//! (key, then frame); target ≤ 30 ms each.
//! Run: `cargo bench --bench tui`; `benches/tui_process.rs` gives the
//! same key-to-frame figures as distributions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use strata::domain::Role;
use strata::runtime::service::ServiceEvent;
use strata::tui::AppEvent;

#[path = "../tests/support/mod.rs"]
mod support;
use support::tui as tui_support;

const MESSAGES: usize = 10_000;

fn history() -> Vec<strata::domain::Message> {
    (0..MESSAGES)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            let body = format!(
                "Message {i}: the parser keeps a stack of open scopes; 日本語 text and emoji 🙂 mixed in. {}",
                "More words to wrap across several rows of the chat pane. ".repeat(1 + i % 7)
            );
            tui_support::msg(role, &body, 40 + (i % 50) as u32)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let (w, h) = (120, 36);
    let messages = history();
    let mut app = tui_support::app_with(w, h, messages.clone(), None);
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
        .unwrap();
    let mut n = 0u32;
    c.bench_function("key_to_frame_10k_messages", |b| {
        b.iter(|| {
            n += 1;
            let c = if n.is_multiple_of(20) {
                KeyCode::Backspace
            } else {
                KeyCode::Char('a')
            };
            black_box(app.handle(tui_support::key(c)));
            terminal
                .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
                .unwrap();
        });
    });
    c.bench_function("page_up_frame_10k_messages", |b| {
        b.iter(|| {
            black_box(app.handle(AppEvent::Wheel(30)));
            terminal
                .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
                .unwrap();
        });
    });
    c.bench_function("first_frame_after_load_10k_messages", |b| {
        b.iter_batched(
            || tui_support::app_with(w, h, messages.clone(), None),
            |app| {
                terminal
                    .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
                    .unwrap();
                app
            },
            criterion::BatchSize::LargeInput,
        );
    });
}

fn inspector(c: &mut Criterion) {
    let (w, h) = (120, 36);
    let mut app = tui_support::inspecting(w, h, tui_support::request_json(10_000));
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
        .unwrap();
    let mut n = 0u32;
    c.bench_function("key_to_frame_request_inspector_2m_tokens", |b| {
        b.iter(|| {
            n += 1;
            black_box(app.handle(tui_support::key(tui_support::inspector_key(n))));
            terminal
                .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
                .unwrap();
        });
    });
}

fn streaming(c: &mut Criterion) {
    let (w, h) = (120, 36);
    let mut app = tui_support::app_with(w, h, Vec::new(), None);
    app.handle(ServiceEvent::Delta {
        text: tui_support::long_reply(20_000),
        now_ms: 0,
    });
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
        .unwrap();
    let mut n = 0usize;
    c.bench_function("streaming_frame_20k_line_reply", |b| {
        b.iter(|| {
            n += 1;
            black_box(app.handle(ServiceEvent::Delta {
                text: tui_support::stream_delta(n).to_owned(),
                now_ms: n as i64,
            }));
            terminal
                .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
                .unwrap();
        });
    });
}

/// 2,500 rounds of a question and a reply calling `read_file` twice, each
/// result 40 lines (the last one 2,000): 10,000 messages, 5,000 blocks.
fn tool_history() -> Vec<strata::domain::Message> {
    let mut out = Vec::with_capacity(MESSAGES);
    for round in 0..MESSAGES / 4 {
        out.push(tui_support::msg(
            Role::User,
            &format!("Question {round}: read both files."),
            12,
        ));
        let ids = [format!("call_{round}_a"), format!("call_{round}_b")];
        let mut reply = tui_support::msg(Role::Assistant, "Reading them.", 30);
        reply.tool_calls = ids
            .iter()
            .map(|id| strata::domain::ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: format!("{{\"path\":\"src/module_{round}.rs\"}}"),
            })
            .collect();
        out.push(reply);
        let lines = if round == MESSAGES / 4 - 1 { 2_000 } else { 40 };
        for id in ids {
            let body: String = (1..=lines)
                .map(|l| format!("{l}\tlet v{l} = {l} * 2; // 日本語\n"))
                .collect();
            let mut result = tui_support::msg(Role::Tool, &body, 400);
            result.tool_call_id = Some(id);
            result.tool = Some(strata::domain::ToolResultMeta {
                name: "read_file".into(),
                status: strata::domain::ToolStatus::Ok,
                truncated: false,
                previewed: false,
                spilled_to: None,
                output_chars: body.len() as u64,
                duration_ms: Some(3),
                sandbox: None,
                network: false,
            });
            out.push(result);
        }
    }
    out
}

fn tools(c: &mut Criterion) {
    let (w, h) = (120, 36);
    let mut app = tui_support::app_with(w, h, tool_history(), None);
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let frame = |app: &strata::tui::App, terminal: &mut Terminal<TestBackend>| {
        terminal
            .draw(|f| strata::tui::draw(app, f.area(), f.buffer_mut()))
            .unwrap();
    };
    frame(&app, &mut terminal);
    let select = || {
        AppEvent::Key(crossterm::event::KeyEvent::new(
            KeyCode::BackTab,
            crossterm::event::KeyModifiers::SHIFT,
        ))
    };
    app.handle(select());
    let mut n = 0u32;
    c.bench_function("key_to_frame_select_tool_5k_blocks", |b| {
        b.iter(|| {
            n += 1;
            if n.is_multiple_of(200) {
                // Back to the newest block.
                app.handle(select());
                black_box(app.handle(select()));
            } else {
                black_box(app.handle(tui_support::key(KeyCode::Up)));
            }
            frame(&app, &mut terminal);
        });
    });
    app.handle(select());
    app.handle(select());
    c.bench_function("key_to_frame_expand_2000_line_result", |b| {
        b.iter(|| {
            black_box(app.handle(tui_support::key(KeyCode::Enter)));
            frame(&app, &mut terminal);
        });
    });
}

/// The context list's rows of a 10,000-message session: questions,
/// replies and tool outputs of scattered sizes, some truncated, excluded or
/// pinned.
fn context_rows() -> Vec<strata::pipeline::ContextRow> {
    use strata::pipeline::{ContextRow, RowState};
    (0..MESSAGES)
        .map(|i| {
            let role = [Role::User, Role::Assistant, Role::Tool][i % 3];
            let tokens = u32::try_from((i * 7_919) % 50_000).unwrap();
            let state = match i % 17 {
                0 => RowState::Truncated {
                    from: tokens,
                    to: tokens / 4,
                },
                5 => RowState::Excluded,
                9 => RowState::Pinned,
                _ => RowState::Kept,
            };
            ContextRow {
                pos: Some(i + 1),
                seq: i as i64 + 1,
                excluded: state == RowState::Excluded,
                message_id: strata::domain::MessageId::new(),
                role,
                kind: strata::domain::MessageKind::Normal,
                state,
                tokens,
                tokens_sent: if state == RowState::Excluded { 0 } else { tokens },
                pinned: state == RowState::Pinned,
                tools: if role == Role::Tool {
                    vec!["read_file".into()]
                } else {
                    Vec::new()
                },
                preview: format!("Message {i}: the parser keeps a stack of open scopes 日本語 🙂"),
                uncached_if_toggled: None,
            }
        })
        .collect()
}

fn context_list(c: &mut Criterion) {
    let (w, h) = (120, 36);
    let rows = context_rows();
    let mut app = tui_support::app_with(w, h, Vec::new(), None);
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let frame = |app: &strata::tui::App, terminal: &mut Terminal<TestBackend>| {
        terminal
            .draw(|f| strata::tui::draw(app, f.area(), f.buffer_mut()))
            .unwrap();
    };
    c.bench_function("context_list_open_10k_messages", |b| {
        b.iter_batched(
            || rows.clone(),
            |rows| {
                app.handle(tui_support::key(KeyCode::Esc));
                black_box(app.handle(tui_support::key(KeyCode::F(8))));
                app.handle(ServiceEvent::ContextList(rows));
                frame(&app, &mut terminal);
            },
            criterion::BatchSize::LargeInput,
        );
    });
    c.bench_function("context_list_resort_10k_messages", |b| {
        b.iter(|| {
            black_box(app.handle(tui_support::key(KeyCode::Char('s'))));
            frame(&app, &mut terminal);
        });
    });
}

criterion_group!(benches, bench, inspector, streaming, tools, context_list);
criterion_main!(benches);
