//! Long pastes in the app's update (no driver, no terminal): folded to a
//! label in the composer and the chat, counted, opened by the expand key,
//! sent whole; and the question before a message larger than the window.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui as tui_support;
use strata::runtime::Op;

use crossterm::event::KeyCode;
use strata::runtime::service::ServiceEvent;
use strata::tui::{App, AppEvent, Effect};
use tui_support::*;

fn log_lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("2026-12-01 12:00:{:02} worker-{i} processed batch {i}\n", i % 60))
        .collect()
}

/// The ticket and text of the one count `effects` ask for.
fn count(effects: &[Effect]) -> (u64, String) {
    match effects {
        [Effect::Op(Op::CountDraft { ticket, text })] => (*ticket, text.clone()),
        other => panic!("expected one count, got {other:?}"),
    }
}

/// The text of the one message `effects` send, kept in the history too
/// (long texts are compared with `assert!`, not printed).
fn sent(effects: &[Effect]) -> String {
    match effects {
        [
            Effect::Op(Op::RememberInput(kept)),
            Effect::Op(Op::Send { text, .. }),
        ] if kept == text => text.clone(),
        other => panic!(
            "expected a send and its history entry, got {} effects",
            other.len()
        ),
    }
}

/// Answers the one count `effects` ask for with `tokens`.
fn answer(app: &mut App, effects: &[Effect], tokens: u64) -> Vec<Effect> {
    let (ticket, _) = count(effects);
    app.handle(ServiceEvent::DraftTokens { ticket, tokens })
}

/// Pastes `text`, answers the fold's count with `tokens`, and returns the
/// ticket of the draft's count that follows.
fn paste_counted(app: &mut App, text: &str, tokens: u64) -> u64 {
    let (ticket, counted) = count(&app.handle(AppEvent::Paste(text.to_owned())));
    assert_eq!(counted, text, "the paste is counted on its own first");
    let (draft, _) = count(&app.handle(ServiceEvent::DraftTokens { ticket, tokens }));
    draft
}

#[test]
fn a_long_paste_folds_in_the_composer_and_its_count_joins_the_label() {
    let mut app = app_with(120, 36, Vec::new(), None);
    type_text(&mut app, "why does this fail? ");
    let paste = log_lines(3_000);
    let (ticket, _) = count(&app.handle(AppEvent::Paste(paste.clone())));
    assert_eq!(app.draft(), "why does this fail? [pasted 3,000 lines]");
    let effects = app.handle(ServiceEvent::DraftTokens {
        ticket,
        tokens: 105_000,
    });
    assert_eq!(
        app.draft(),
        "why does this fail? [pasted 3,000 lines · 105k tokens]"
    );
    let (_, whole) = count(&effects);
    assert!(
        whole == format!("why does this fail? {paste}"),
        "then the whole message"
    );
    answer(&mut app, &effects, 105_010);
    insta::assert_snapshot!("paste_in_composer_120x36", draw(&app, 120, 36));
    insta::assert_snapshot!("paste_in_composer_80x24", draw(&app, 80, 24));
    let text = sent(&app.handle(key(KeyCode::Enter)));
    assert!(
        text == format!("why does this fail? {paste}"),
        "the full text is sent"
    );
}

#[test]
fn the_chat_shows_a_sent_paste_folded_until_the_expand_key() {
    let mut app = app_with(120, 36, Vec::new(), None);
    let paste = log_lines(3_000);
    paste_counted(&mut app, &paste, 105_000);
    let typed = type_text(&mut app, "what failed?");
    answer(&mut app, &typed[typed.len() - 1..], 105_004);
    let text = sent(&app.handle(key(KeyCode::Enter)));
    assert!(text == format!("{paste}what failed?"));
    let screen = draw(&app, 120, 36);
    assert!(
        screen.contains("[pasted 3,000 lines · 105k tokens] (F4 expands)"),
        "{screen}"
    );
    assert!(!screen.contains("worker-2999"), "{screen}");
    // Stored, it folds the same way.
    app.handle(ServiceEvent::Message(Box::new(msg(
        strata::domain::Role::User,
        &format!("{paste}what failed?"),
        105_004,
    ))));
    insta::assert_snapshot!("paste_in_chat_120x36", draw(&app, 120, 36));
    insta::assert_snapshot!("paste_in_chat_80x24", draw(&app, 80, 24));
    app.handle(key(KeyCode::F(4)));
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("worker-2999"), "{screen}");
    assert!(screen.contains("what failed?"), "{screen}");
}

#[test]
fn a_long_message_from_an_earlier_run_folds_by_length() {
    let stored = msg(strata::domain::Role::User, &log_lines(40), 900);
    let app = app_with(80, 24, vec![stored], None);
    let screen = draw(&app, 80, 24);
    assert!(screen.contains("[+37 lines (F4 expands)]"), "{screen}");
    assert!(!screen.contains("worker-39"), "{screen}");
}

#[test]
fn the_expand_key_opens_a_folded_paste_in_the_composer() {
    let mut app = app_with(80, 24, Vec::new(), None);
    let paste = log_lines(25);
    app.handle(AppEvent::Paste(paste.clone()));
    assert!(app.has_folds());
    let effects = app.handle(key(KeyCode::F(4)));
    assert!(app.draft() == paste);
    assert!(!app.has_folds());
    assert!(count(&effects).1 == paste);
}

#[test]
fn backspace_after_a_label_deletes_the_whole_paste() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "see ");
    app.handle(AppEvent::Paste(log_lines(30)));
    app.handle(AppEvent::Paste(log_lines(30)));
    assert_eq!(app.draft(), "see [pasted 30 lines][pasted 30 lines #2]");
    app.handle(key(KeyCode::Backspace));
    assert_eq!(app.draft(), "see [pasted 30 lines]");
    app.handle(key(KeyCode::Backspace));
    assert_eq!(app.draft(), "see ");
    assert!(!app.has_folds());
    assert_eq!(app.message_text(), "see ");
}

#[test]
fn short_pastes_stay_text() {
    let mut app = app_with(80, 24, Vec::new(), None);
    let paste = log_lines(20);
    app.handle(AppEvent::Paste(paste.clone()));
    assert!(!app.has_folds());
    assert!(app.draft() == paste);
}

/// An app whose window takes 7,168 tokens of input (8,192 less 1,024
/// for the reply).
fn small_window() -> App {
    let ctx = context_in(&[], 8_192, 1_024);
    assert_eq!(ctx.budget.effective_window, 7_168);
    app_with(120, 36, Vec::new(), Some(ctx))
}

#[test]
fn a_message_larger_than_the_window_asks_before_it_goes() {
    let mut app = small_window();
    let paste = log_lines(3_000);
    let draft = paste_counted(&mut app, &paste, 30_000);
    assert!(app.handle(key(KeyCode::Enter)).is_empty(), "nothing is sent yet");
    assert!(
        app.question().unwrap().starts_with("counting"),
        "{:?}",
        app.question()
    );
    assert!(
        app.handle(ServiceEvent::DraftTokens {
            ticket: draft,
            tokens: 30_004,
        })
        .is_empty()
    );
    assert_eq!(
        app.question().as_deref(),
        Some("message 30k tokens, the window takes 7.2k: Enter sends it cut · Esc edits")
    );
    insta::assert_snapshot!("too_large_120x36", draw(&app, 120, 36));
    insta::assert_snapshot!("too_large_80x24", draw(&app, 80, 24));
    app.handle(key(KeyCode::Esc));
    assert_eq!(app.question(), None);
    assert!(app.has_folds(), "the draft is still there to edit");
    assert!(app.handle(key(KeyCode::Enter)).is_empty(), "asked again");
    assert!(app.question().is_some());
    let text = sent(&app.handle(key(KeyCode::Enter)));
    assert!(text == paste, "Enter sends it (the pipeline cuts it to fit)");
    assert_eq!(app.question(), None);
}

#[test]
fn a_large_message_that_fits_goes_once_its_count_arrives() {
    let mut app = small_window();
    // 9,000 bytes in 3,000 characters: more bytes than the window takes
    // tokens, too few characters to fold.
    let text = "語".repeat(3_000);
    let (ticket, _) = count(&type_text(&mut app, "x"));
    app.handle(ServiceEvent::DraftTokens { ticket, tokens: 1 });
    let (ticket, _) = count(&app.handle(AppEvent::Paste(text.clone())));
    assert!(app.handle(key(KeyCode::Enter)).is_empty());
    assert!(app.question().is_some());
    let effects = app.handle(ServiceEvent::DraftTokens {
        ticket,
        tokens: 3_001,
    });
    assert!(sent(&effects) == format!("x{text}"));
}

#[test]
fn a_short_message_never_asks() {
    let mut app = small_window();
    type_text(&mut app, "hello");
    assert_eq!(sent(&app.handle(key(KeyCode::Enter))), "hello");
}
