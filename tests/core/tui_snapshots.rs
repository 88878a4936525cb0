//! Snapshots of every surface of the full-screen app (ratatui's test
//! backend): the main screen at 120×36 and 80×24 and down to 1, 2 and 3
//! rows at 40 columns; wide characters; a streaming reply; summaries;
//! each badge; the picker; both inspectors; help; a stale layer and a
//! blocked-compression reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui as tui_support;
use strata::runtime::Op;
use strata::runtime::service::Command;

use crossterm::event::KeyCode;
use strata::domain::{LayerName, MessageStatus, Role, SessionSummary};
use strata::pipeline::{Action, ReportEntry};
use strata::runtime::service::ServiceEvent;
use strata::tui::{AppEvent, RequestView};
use tui_support::*;

fn conversation() -> Vec<strata::domain::Message> {
    vec![
        msg(
            Role::User,
            "こんにちは! Can you explain 上下文窗口 (context window)? 🙂",
            24,
        ),
        msg(
            Role::Assistant,
            "Sure 👍 A context window is the number of tokens a model reads at once: 系统提示, history and your message. 한국어도 됩니다. 👨‍👩‍👧",
            48,
        ),
    ]
}

#[test]
fn empty_session_at_every_size() {
    for (w, h) in [(120, 36), (80, 24), (40, 3), (40, 2), (40, 1)] {
        let app = app_with(w, h, Vec::new(), None);
        insta::assert_snapshot!(format!("empty_{w}x{h}"), draw(&app, w, h));
    }
}

#[test]
fn conversation_with_cjk_and_emoji() {
    for (w, h) in [(120, 36), (80, 24), (40, 3)] {
        let app = app_with(w, h, conversation(), None);
        insta::assert_snapshot!(format!("cjk_emoji_{w}x{h}"), draw(&app, w, h));
    }
}

#[test]
fn streaming_reply_shows_spinner_rate_and_live_tokens() {
    let mut app = app_with(120, 36, conversation(), None);
    app.handle(AppEvent::Tick { now_ms: 1_000 });
    type_text(&mut app, "And tokens?");
    app.handle(key(KeyCode::Enter));
    app.handle(ServiceEvent::Delta {
        text: "Tokens are pieces of words; ".into(),
        now_ms: 1_200,
    });
    app.handle(ServiceEvent::Delta {
        text: "about four characters each in English.".into(),
        now_ms: 2_200,
    });
    app.handle(AppEvent::Tick { now_ms: 2_200 });
    insta::assert_snapshot!("streaming_120x36", draw(&app, 120, 36));
    insta::assert_snapshot!("streaming_40x2", draw(&app, 40, 2));
}

#[test]
fn summary_collapsed_then_expanded() {
    let mut messages = vec![summary(
        "Summary of the earlier conversation:\n- the parser is recursive descent\n- tests live in tests/parser.rs\n- the user prefers small commits",
    )];
    messages.extend(conversation());
    let mut app = app_with(80, 24, messages, None);
    insta::assert_snapshot!("summary_collapsed_80x24", draw(&app, 80, 24));
    app.handle(key(KeyCode::F(4)));
    insta::assert_snapshot!("summary_expanded_80x24", draw(&app, 80, 24));
}

#[test]
fn a_summary_merged_into_a_question_keeps_the_question_visible() {
    let block = strata::compress::assemble::summary_block("The parser is recursive descent.");
    let messages = vec![
        summary(&format!("{block}\n\nand what does the lexer do with tabs?")),
        msg(Role::Assistant, "It expands them to four spaces.", 9),
    ];
    let app = app_with(80, 24, messages, None);
    let screen = draw(&app, 80, 24);
    assert!(
        screen.contains("and what does the lexer do with tabs?"),
        "{screen}"
    );
    insta::assert_snapshot!("summary_merged_80x24", screen);
}

#[test]
fn every_badge() {
    let mut messages = vec![
        msg(Role::User, "a long log pasted here", 8_123),
        msg(Role::Tool, "old tool output", 300),
        msg(Role::User, "an early question", 40),
        msg(Role::Assistant, "an answer with a call", 30),
        msg(Role::User, "merged into the one before", 10),
        msg(Role::User, "always keep this", 12),
        msg(Role::Assistant, "a reply cut short", 9),
    ];
    messages[5].pinned = true;
    messages[6].status = MessageStatus::Interrupted;
    let actions = [
        (Action::Truncated, 1_200),
        (Action::Pruned, 0),
        (Action::Dropped, 0),
        (Action::Repaired, 25),
        (Action::Merged, 8),
        (Action::Kept, 12),
        (Action::Kept, 9),
    ];
    let mut ctx = context(&messages);
    ctx.report = messages
        .iter()
        .zip(actions)
        .map(|(m, (action, after))| ReportEntry {
            message_id: m.id,
            action,
            tokens_before: m.tokens.as_ref().unwrap().tokens,
            tokens_after: after,
        })
        .collect();
    let app = app_with(120, 36, messages, Some(ctx));
    insta::assert_snapshot!("badges_120x36", draw(&app, 120, 36));
}

#[test]
fn picker_with_search_results() {
    for (w, h) in [(120, 36), (80, 24)] {
        let mut app = app_with(w, h, conversation(), None);
        let effects = app.handle(ctrl('o'));
        let ticket = match &effects[..] {
            [strata::tui::Effect::Op(Op::ListSessions { ticket, .. })] => *ticket,
            other => panic!("{other:?}"),
        };
        let effects = type_text(&mut app, "pars");
        let ticket = match effects.last() {
            Some(strata::tui::Effect::Op(Op::ListSessions {
                ticket: t, search, ..
            })) => {
                assert_eq!(search, "pars");
                assert!(*t > ticket);
                *t
            }
            other => panic!("{other:?}"),
        };
        let row = |n: u128, title: &str, msgs: u64, tokens: u64| SessionSummary {
            id: session_id(n),
            title: title.into(),
            workspace: "/home/ada/strata".into(),
            model: "gpt-4o".into(),
            provider: strata::domain::ProviderKind::OpenAi,
            messages: msgs,
            tokens,
            created_at: 1_764_400_000_000,
            updated_at: 1_764_400_000_000 + (n as i64) * 3_600_000,
        };
        app.handle(ServiceEvent::Sessions {
            ticket,
            rows: vec![
                row(2, "Refactor the parser", 42, 18_300),
                row(3, "Parser error messages 日本語", 7, 2_100),
            ],
        });
        insta::assert_snapshot!(format!("picker_{w}x{h}"), draw(&app, w, h));
    }
}

#[test]
fn prompt_inspector() {
    for (w, h) in [(120, 36), (80, 24)] {
        let mut app = app_with(w, h, conversation(), None);
        type_text(&mut app, "/prompt");
        app.handle(key(KeyCode::Enter));
        insta::assert_snapshot!(format!("prompt_inspector_{w}x{h}"), draw(&app, w, h));
    }
}

#[test]
fn request_inspector() {
    for (w, h) in [(120, 36), (80, 24)] {
        let mut app = app_with(w, h, conversation(), None);
        type_text(&mut app, "/inspect");
        let effects = app.handle(key(KeyCode::Enter));
        assert_eq!(
            effects,
            vec![
                strata::tui::Effect::Op(Op::RememberInput("/inspect".into())),
                strata::tui::Effect::Op(Op::Run(Command::InspectRequest))
            ]
        );
        app.handle(ServiceEvent::Request(Box::new(RequestView {
            json: "{\n  \"model\": \"gpt-4o\",\n  \"messages\": [\n    {\"role\": \"user\", \"content\": \"こんにちは\"}\n  ],\n  \"max_tokens\": 16384\n}".into(),
            report: Vec::new(),
            prepared_tokens: 117,
        })));
        insta::assert_snapshot!(format!("request_inspector_{w}x{h}"), draw(&app, w, h));
    }
}

#[test]
fn help() {
    for (w, h) in [(120, 36), (80, 24)] {
        let mut app = app_with(w, h, Vec::new(), None);
        app.handle(AppEvent::Key(crossterm::event::KeyEvent::new(
            KeyCode::F(1),
            crossterm::event::KeyModifiers::NONE,
        )));
        insta::assert_snapshot!(format!("help_{w}x{h}"), draw(&app, w, h));
    }
}

#[test]
fn the_pane_in_words_and_its_legend() {
    for (w, h) in [(120, 36), (80, 24)] {
        // An 8k window: the threshold in force is not what the config asks.
        let messages = conversation();
        let ctx = context_in(&messages, 8_192, 2_048);
        let mut app = app_with(w, h, messages, Some(ctx));
        if !app.context_visible() {
            app.handle(key(KeyCode::F(2)));
        }
        let screen = draw(&app, w, h);
        for label in [
            "system",
            "workspace",
            "session",
            "messages",
            "reply",
            "asked 4.6k (75 %)",
        ] {
            assert!(screen.contains(label), "{label}: {screen}");
        }
        let pane: String = screen
            .lines()
            .filter_map(|l| l.rsplit_once('│').map(|(_, p)| format!("{p}\n")))
            .collect();
        for insider in ["stable", "volatile", "history", "reserved", " req ", " eff"] {
            assert!(!pane.contains(insider), "{insider}: {pane}");
        }
        insta::assert_snapshot!(format!("pane_words_{w}x{h}"), screen);
        app.handle(key(KeyCode::Char('?')));
        assert!(matches!(
            app.overlay(),
            Some(strata::tui::Overlay::Help { legend: true, .. })
        ));
        insta::assert_snapshot!(format!("pane_legend_{w}x{h}"), draw(&app, w, h));
        app.handle(key(KeyCode::Esc));
        assert!(app.overlay().is_none());
    }
    // With text in the composer, `?` is text.
    let mut app = app_with(120, 36, conversation(), None);
    type_text(&mut app, "why?");
    assert!(app.overlay().is_none());
    assert_eq!(app.draft(), "why?");
}

#[test]
fn stale_layer_and_blocked_reason_in_the_detailed_pane() {
    let messages = conversation();
    let mut ctx = context(&messages);
    ctx.blocked_reason = Some("two compressions in a row saved too little".into());
    let mut app = app_with(120, 36, messages, Some(ctx));
    app.handle(ServiceEvent::Stale(vec![LayerName::Project]));
    app.handle(key(KeyCode::F(3)));
    insta::assert_snapshot!("stale_blocked_120x36", draw(&app, 120, 36));
}

#[test]
fn long_code_block_scrolls() {
    let code: String = (1..=1_000).map(|i| format!("    let x{i} = {i};\n")).collect();
    let mut app = app_with(
        80,
        24,
        vec![msg(Role::Assistant, &format!("```rust\n{code}```"), 9_000)],
        None,
    );
    insta::assert_snapshot!("code_block_bottom_80x24", draw(&app, 80, 24));
    app.handle(AppEvent::Wheel(30));
    insta::assert_snapshot!("code_block_scrolled_80x24", draw(&app, 80, 24));
}

#[test]
fn archived_originals_shown_on_request() {
    let compaction = strata::domain::CompactionId::from(uuid::Uuid::from_u128(9));
    let mut old = msg(Role::User, "the original question about the lexer", 30);
    old.archived_by = Some(compaction);
    let mut answer = msg(Role::Assistant, "the original long answer", 400);
    answer.archived_by = Some(compaction);
    let mut messages = vec![old, answer, summary("Summary: the lexer is hand-written.")];
    messages.extend(conversation());
    let mut app = app_with(80, 24, messages, None);
    insta::assert_snapshot!("archived_hidden_80x24", draw(&app, 80, 24));
    app.handle(key(KeyCode::F(5)));
    insta::assert_snapshot!("archived_shown_80x24", draw(&app, 80, 24));
}

#[test]
fn embedded_model_pull_progress_in_the_status_bar() {
    let mut app = strata::tui::App::new(strata::tui::KeyMap::default(), 80, 24);
    app.handle(ServiceEvent::Progress(
        "the embedded model is not on this machine yet; downloading it (about 98 MB) ...".into(),
    ));
    insta::assert_snapshot!("pulling_80x24", draw(&app, 80, 24));
    app.handle(ServiceEvent::Connected {
        provider: "local".into(),
        model: "SmolLM2-135M-Instruct".into(),
        embedded: true,
    });
    insta::assert_snapshot!("embedded_header_80x24", draw(&app, 80, 3));
}

#[test]
fn no_size_panics_with_any_surface_open() {
    let mut messages = vec![summary("Summary: short.")];
    messages.extend(conversation());
    for (w, h) in (1..=130).step_by(7).flat_map(|w| (1..=12).map(move |h| (w, h))) {
        for surface in 0..5 {
            let mut app = app_with(w, h, messages.clone(), None);
            match surface {
                0 => {}
                1 => {
                    app.handle(ctrl('o'));
                }
                2 => {
                    type_text(&mut app, "/prompt");
                    app.handle(key(KeyCode::Enter));
                }
                3 => {
                    app.handle(AppEvent::Key(crossterm::event::KeyEvent::new(
                        KeyCode::F(1),
                        crossterm::event::KeyModifiers::NONE,
                    )));
                }
                _ => {
                    type_text(&mut app, "a draft over\nseveral\nlines\nof\ntext\nhere");
                    app.handle(AppEvent::Wheel(100));
                }
            }
            let _ = draw(&app, w, h);
        }
    }
}

#[test]
fn scrolling_stops_at_the_oldest_line() {
    let code: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    let code = format!("```\n{code}```");
    let mut app = app_with(80, 24, vec![msg(Role::Assistant, &code, 900)], None);
    let bottom = draw(&app, 80, 24);
    assert!(bottom.contains("line 200"));
    app.handle(AppEvent::Wheel(1_000_000));
    let top = draw(&app, 80, 24);
    assert!(top.contains("assistant") && top.contains("line 1 "), "{top}");
    // One notch down from the top moves the view at once.
    app.handle(AppEvent::Wheel(-3));
    let below = draw(&app, 80, 24);
    assert!(
        !below.contains("assistant") && below.contains("line 3 "),
        "{below}"
    );
}
