//! Full-screen app benchmarks (DESIGN §12): key-to-frame with a
//! 10,000-message session loaded (one key through `App::handle`, then one
//! frame drawn at 120×36; target p95 ≤ 8 ms), scrolling a page up through
//! that history, and the first frame of a freshly loaded session (wrapped
//! lines not cached yet). Run: `cargo bench --bench tui`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use strata::domain::Role;
use strata::tui::AppEvent;

#[path = "../tests/tui_support/mod.rs"]
mod tui_support;

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

criterion_group!(benches, bench);
criterion_main!(benches);
