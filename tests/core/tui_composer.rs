//! The composer driven with key events (no driver, no terminal): readline's
//! editing keys, deletion by grapheme, the pane toggles on F-keys, and the
//! `/` menu.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui as tui_support;
use strata::runtime::Op;
use strata::runtime::service::Command;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use strata::runtime::service::ServiceEvent;
use strata::tui::{App, AppEvent, Effect};
use tui_support::*;

fn alt(c: char) -> AppEvent {
    AppEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT))
}

/// The composer's text with `|` at the cursor, found by typing a marker
/// (then deleting it again).
fn with_cursor(app: &mut App) -> String {
    type_text(app, "|");
    let shown = app.draft();
    app.handle(key(KeyCode::Backspace));
    shown
}

#[test]
fn ctrl_a_and_ctrl_e_go_to_the_line_start_and_end_and_toggle_no_pane() {
    let mut app = app_with(120, 36, Vec::new(), None);
    type_text(&mut app, "hello world");
    let pane = app.context_visible();
    app.handle(ctrl('a'));
    assert_eq!(with_cursor(&mut app), "|hello world");
    app.handle(ctrl('e'));
    assert_eq!(with_cursor(&mut app), "hello world|");
    assert_eq!(app.context_visible(), pane);
    let screen = draw(&app, 120, 36);
    assert!(!screen.contains("▸ "), "no pane opened:\n{screen}");
}

#[test]
fn alt_b_and_alt_f_move_by_words() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "cargo test --lib");
    app.handle(alt('b'));
    assert_eq!(with_cursor(&mut app), "cargo test --|lib");
    app.handle(alt('b'));
    app.handle(alt('b'));
    assert_eq!(with_cursor(&mut app), "|cargo test --lib");
    app.handle(alt('f'));
    assert_eq!(with_cursor(&mut app), "cargo| test --lib");
    app.handle(alt('f'));
    assert_eq!(with_cursor(&mut app), "cargo test| --lib");
}

#[test]
fn ctrl_w_ctrl_k_and_ctrl_d_delete_and_ctrl_y_brings_back_the_kill() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "git commit -m wip");
    let effects = app.handle(ctrl('w'));
    assert_eq!(app.draft(), "git commit -m ");
    assert!(
        matches!(effects.as_slice(), [Effect::Op(Op::CountDraft { text, .. })] if text == "git commit -m "),
        "the draft is counted again: {effects:?}"
    );
    app.handle(ctrl('w'));
    assert_eq!(app.draft(), "git commit ");
    app.handle(ctrl('a'));
    app.handle(alt('f'));
    app.handle(ctrl('k'));
    assert_eq!(app.draft(), "git");
    app.handle(ctrl('y'));
    assert_eq!(app.draft(), "git commit ");
    app.handle(ctrl('a'));
    app.handle(ctrl('d'));
    assert_eq!(app.draft(), "it commit ");
    app.handle(alt('d'));
    assert_eq!(app.draft(), " commit ");
}

#[test]
fn ctrl_d_on_an_empty_composer_toggles_no_pane() {
    let mut app = app_with(120, 36, Vec::new(), None);
    let before = draw(&app, 120, 36);
    assert!(app.handle(ctrl('d')).is_empty());
    assert_eq!(app.draft(), "");
    assert_eq!(draw(&app, 120, 36), before, "the detail rows did not open");
}

#[test]
fn backspace_and_delete_remove_a_whole_grapheme() {
    let mut app = app_with(80, 24, Vec::new(), None);
    app.handle(AppEvent::Paste("hi 👨‍👩‍👧".into()));
    app.handle(key(KeyCode::Backspace));
    assert_eq!(app.draft(), "hi ", "the family goes in one press");
    app.handle(AppEvent::Paste("e\u{301}x".into()));
    app.handle(key(KeyCode::Left));
    app.handle(key(KeyCode::Left));
    assert_eq!(
        with_cursor(&mut app),
        "hi |e\u{301}x",
        "Left steps over the accent"
    );
    app.handle(key(KeyCode::Delete));
    assert_eq!(app.draft(), "hi x");
}

#[test]
fn the_panes_toggle_on_f_keys() {
    let mut app = app_with(120, 36, Vec::new(), None);
    assert!(app.context_visible());
    app.handle(key(KeyCode::F(2)));
    assert!(!app.context_visible());
    app.handle(key(KeyCode::F(2)));
    let plain = draw(&app, 120, 36);
    app.handle(key(KeyCode::F(3)));
    let detailed = draw(&app, 120, 36);
    assert_ne!(plain, detailed, "F3 shows the layer rows");
    assert!(app.context_visible());
}

#[test]
fn help_lists_the_composer_keys_and_the_f_keys() {
    let mut app = app_with(120, 36, Vec::new(), None);
    app.handle(key(KeyCode::F(1)));
    let mut screen = draw(&app, 120, 36);
    app.handle(key(KeyCode::PageDown));
    screen.push_str(&draw(&app, 120, 36));
    for needle in [
        "F2",
        "F3",
        "F4",
        "F5",
        "Ctrl-A / Ctrl-E",
        "Alt-B / Alt-F",
        "Ctrl-W",
    ] {
        assert!(screen.contains(needle), "{needle} in help:\n{screen}");
    }
    assert!(!screen.contains("Ctrl-A       show"), "{screen}");
}

#[test]
fn typing_a_slash_lists_the_matching_commands_with_their_descriptions() {
    let mut app = app_with(120, 36, Vec::new(), None);
    type_text(&mut app, "/");
    let (all, selected) = app.slash_menu().unwrap();
    assert_eq!(all.len(), 28, "every command");
    assert_eq!(selected, 0);
    insta::assert_snapshot!("slash_menu_120x36", draw(&app, 120, 36));
    type_text(&mut app, "re");
    let screen = draw(&app, 80, 24);
    for line in [
        "/resume [id]",
        "resume a session by id",
        "/rename <title>",
        "/reload",
    ] {
        assert!(screen.contains(line), "{line}:\n{screen}");
    }
    insta::assert_snapshot!("slash_menu_80x24", screen);
}

#[test]
fn up_down_and_tab_pick_a_command_and_enter_runs_it() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "/re");
    app.handle(key(KeyCode::Down));
    app.handle(key(KeyCode::Down));
    app.handle(key(KeyCode::Up));
    let (commands, selected) = app.slash_menu().unwrap();
    assert_eq!(commands[selected].name(), "rename");
    app.handle(key(KeyCode::Tab));
    assert_eq!(app.draft(), "/rename ");
    assert!(app.slash_menu().is_none(), "a space ends the name");

    app.handle(ctrl('u'));
    type_text(&mut app, "/comp");
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![
            Effect::Op(Op::RememberInput("/compress".into())),
            Effect::Op(Op::Run(Command::Compress(strata::tui::CompressAsk {
                preview: true,
                ..Default::default()
            })))
        ],
        "Enter runs the selected command"
    );
    type_text(&mut app, "/ren");
    assert!(app.handle(key(KeyCode::Enter)).is_empty());
    assert_eq!(app.draft(), "/rename ", "one that needs an argument is completed");
}

#[test]
fn the_menu_scrolls_to_keep_the_selection_in_view() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "/");
    for _ in 0..9 {
        app.handle(key(KeyCode::Down));
    }
    let (commands, selected) = app.slash_menu().unwrap();
    assert_eq!(commands[selected].name(), "reload");
    let screen = draw(&app, 80, 24);
    assert!(screen.contains(" /reload "), "{screen}");
    assert!(!screen.contains(" /new "), "{screen}");
}

#[test]
fn esc_hides_the_menu_until_the_draft_changes() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "/m");
    assert!(app.slash_menu().is_some());
    app.handle(key(KeyCode::Esc));
    assert!(app.slash_menu().is_none());
    assert!(!draw(&app, 80, 24).contains("commands 2"));
    assert_eq!(app.draft(), "/m", "the draft stays");
    type_text(&mut app, "c");
    assert_eq!(app.slash_menu().unwrap().0.len(), 1);
}

#[test]
fn a_recalled_command_does_not_take_up_and_down() {
    let mut app = app_with(80, 24, Vec::new(), None);
    for line in ["first message", "/help"] {
        type_text(&mut app, line);
        app.handle(key(KeyCode::Enter));
        app.handle(key(KeyCode::Esc));
        app.handle(ServiceEvent::TurnDone {
            status: strata::domain::MessageStatus::Complete,
        });
    }
    app.handle(key(KeyCode::Up));
    assert_eq!(app.draft(), "/help");
    assert!(app.slash_menu().is_none());
    app.handle(key(KeyCode::Up));
    assert_eq!(app.draft(), "first message");
}

#[test]
fn the_menu_draws_at_any_size() {
    for (w, h) in [(120, 36), (80, 24), (40, 5), (20, 4), (8, 3), (3, 2), (1, 1)] {
        let mut app = app_with(w, h, Vec::new(), None);
        type_text(&mut app, "/");
        let screen = draw(&app, w, h);
        if h >= 6 {
            assert!(screen.contains("/new"), "{w}x{h}:\n{screen}");
        }
    }
}
