//! Context control in the full-screen app, driven by keys alone: selecting
//! messages in the chat (pin, exclude, edit and resend, compress up to
//! here), the context list (snapshots at 120×36 and 80×24, sorting,
//! filtering, acting on rows), the compression preview (snapshots, accept,
//! edit, a growing summary asked twice, cancel) and the commands `/pin`,
//! `/unpin`, `/exclude`, `/include`, `/context`, `/compress here N`. The
//! effects are asserted as the driver receives them; its answers
//! (`ServiceEvent::Message`, `ServiceEvent::ContextList`) change the badges.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui as tui_support;
use strata::runtime::Op;
use strata::runtime::service::Command;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use strata::domain::Summarizer;
use strata::domain::{CompactionId, Message, MessageId, MessageKind, Role, ToolStatus};
use strata::pipeline::{ContextRow, RowState};
use strata::runtime::service::ServiceEvent;
use strata::runtime::{CompressOutcome, KeptMessage};
use strata::tui::{App, AppEvent, CompressAsk, Effect, Overlay};
use tui_support::tools::{call, reply, result, shift_tab};
use tui_support::*;

/// A session of seven messages: a question, a reply reading a file (call
/// and result), a large pasted log, its answer, a question, its answer.
fn conversation() -> Vec<Message> {
    vec![
        msg(Role::User, "The parser fails on nested blocks; why?", 16),
        reply(
            "I'll read the parser first.",
            vec![call("call_1", "read_file", json!({"path": "src/parser.rs"}))],
        ),
        result(
            "call_1",
            "read_file",
            ToolStatus::Ok,
            "fn parse_block() { … }",
            1_200,
            Some(12),
        ),
        msg(
            Role::User,
            "Here is the failing log: thread main panicked at …",
            1_240,
        ),
        msg(
            Role::Assistant,
            "The nested case recurses without consuming the brace.",
            48,
        ),
        msg(Role::User, "Fix it with a loop, please.", 9),
        msg(Role::Assistant, "Done: the loop consumes the closing brace.", 30),
    ]
}

fn f(n: u8) -> AppEvent {
    key(KeyCode::F(n))
}

fn ch(c: char) -> AppEvent {
    key(KeyCode::Char(c))
}

/// The app at `w`×`h` showing [`conversation`].
fn app(w: u16, h: u16) -> App {
    app_with(w, h, conversation(), None)
}

/// The id of the message at `pos` (counting from 1) of the app.
fn id_at(app: &App, pos: usize) -> MessageId {
    app.messages()[pos - 1].id
}

/// The message with `id` as the driver sends it back after a change.
fn changed(app: &App, id: MessageId, change: impl FnOnce(&mut Message)) -> AppEvent {
    let mut m = app.messages().iter().find(|m| m.id == id).unwrap().clone();
    change(&mut m);
    ServiceEvent::Message(Box::new(m)).into()
}

/// The context list's rows for `messages`, one of each state, and two
/// archived messages before them.
fn rows_of(messages: &[Message]) -> Vec<ContextRow> {
    let summary = MessageId::new();
    let by = CompactionId::from(uuid::Uuid::from_u128(9));
    let mut out = vec![
        row(
            None,
            Role::User,
            420,
            RowState::Summarised {
                summary: Some(summary),
            },
            "Set up the project",
        ),
        row(
            None,
            Role::User,
            35,
            RowState::Archived { by },
            "An earlier draft of the question",
        ),
    ];
    let states = [
        RowState::Pinned,
        RowState::Kept,
        RowState::Truncated { from: 1_200, to: 300 },
        RowState::Excluded,
        RowState::Kept,
        RowState::Pruned,
        RowState::Kept,
    ];
    for (i, (m, state)) in messages.iter().zip(states).enumerate() {
        let tokens = m.tokens.as_ref().map_or(0, |t| t.tokens);
        let mut r = row(
            Some(i + 1),
            m.role,
            tokens,
            state,
            m.content.lines().next().unwrap(),
        );
        r.message_id = m.id;
        r.tools = m.tool_calls.iter().map(|c| c.name.clone()).collect();
        if let Some(meta) = &m.tool {
            r.tools = vec![meta.name.clone()];
        }
        out.push(r);
    }
    out
}

fn row(pos: Option<usize>, role: Role, tokens: u32, state: RowState, preview: &str) -> ContextRow {
    let sent = match state {
        RowState::Kept | RowState::Pinned => tokens,
        RowState::Truncated { to, .. } => to,
        _ => 0,
    };
    ContextRow {
        pos,
        seq: pos.map_or(0, |p| p as i64),
        excluded: state == RowState::Excluded,
        message_id: MessageId::new(),
        role,
        kind: MessageKind::Normal,
        state,
        tokens,
        tokens_sent: sent,
        pinned: state == RowState::Pinned,
        tools: Vec::new(),
        preview: preview.to_owned(),
        uncached_if_toggled: pos.map(|p| 1_000 + 100 * p as u64),
    }
}

/// The app with the context list open on [`rows`].
fn listing(w: u16, h: u16) -> App {
    let mut app = app(w, h);
    assert_eq!(app.handle(f(8)), vec![Effect::Op(Op::Run(Command::ContextList))]);
    let rows = rows_of(app.messages());
    app.handle(ServiceEvent::ContextList(rows));
    app
}

/// A previewed compression, as the service answers `/compress` with
/// `preview` (`grows`: the summary is larger than what it replaces).
fn preview(grows: bool) -> CompressOutcome {
    let kept = |pos: usize, role: Role, tokens: u32, preview: &str| KeptMessage {
        id: MessageId::new(),
        pos,
        role,
        tokens,
        tools: Vec::new(),
        preview: preview.into(),
    };
    CompressOutcome {
        noop: false,
        messages_before: 7,
        messages_after: 4,
        tokens_before: 2_543,
        tokens_after: if grows { 2_700 } else { 180 },
        summarizer: Some(Summarizer::Model("gpt-4o-mini".into())),
        topic: Some("the parser".into()),
        compaction_id: None,
        summary: Some("Goal: make the parser accept nested blocks.\n\nDone so far:\n- read src/parser.rs\n- found the recursion that skips the closing brace\n\nNext: replace it with a loop and run cargo test.".into()),
        warnings: vec!["The pinned message 1 stays verbatim after the summary.".into()],
        reason: None,
        exact: true,
        feedback: String::new(),
        dry_run: false,
        preview: true,
        edited: false,
        kept_verbatim: vec![
            kept(6, Role::User, 9, "Fix it with a loop, please."),
            kept(7, Role::Assistant, 30, "Done: the loop consumes the closing brace."),
        ],
        tail_from: Some(6),
        uncached_tokens_next_request: Some(if grows { 2_600 } else { 120 }),
    }
}

/// The app after `/compress the parser` with the preview open.
fn previewing(w: u16, h: u16, grows: bool) -> App {
    let mut app = app(w, h);
    let effects = entered(&mut app, "/compress the parser");
    assert_eq!(
        effects,
        vec![Effect::Op(Op::Run(Command::Compress(CompressAsk {
            topic: Some("the parser".into()),
            preview: true,
            ..CompressAsk::default()
        })))]
    );
    let status = draw(&app, w, h);
    assert!(
        status
            .lines()
            .last()
            .unwrap()
            .contains("compressing 0s · Esc stops"),
        "{status}"
    );
    app.handle(ServiceEvent::CompressPreview(Box::new(preview(grows))));
    app.handle(ServiceEvent::CommandDone);
    assert!(matches!(app.overlay(), Some(Overlay::Preview(_))));
    // Its keys answer once it could be read (Enter stores the summary).
    let read = read_the_question(&app);
    app.handle(read);
    app
}

/// A compression in progress shows as work with its time and stops with
/// Esc (or Ctrl-C); its preview, when the composer holds text, waits for
/// the composer to empty instead of taking Enter.
#[test]
fn a_compression_runs_visibly_stops_on_esc_and_its_preview_never_takes_a_typed_line() {
    let mut app = app(120, 36);
    entered(&mut app, "/compress");
    app.handle(AppEvent::Tick { now_ms: 3_000 });
    let status = draw(&app, 120, 36).lines().last().unwrap().to_owned();
    assert!(status.contains("compressing 3s · Esc stops"), "{status}");
    assert_eq!(app.handle(key(KeyCode::Esc)), vec![Effect::Op(Op::Cancel)]);
    app.handle(ServiceEvent::Notice(
        "compression cancelled; nothing was stored".into(),
    ));
    app.handle(ServiceEvent::CommandDone);
    let status = draw(&app, 120, 36).lines().last().unwrap().to_owned();
    assert!(status.contains("idle · compression cancelled"), "{status}");

    // Typing while it runs: the preview waits.
    entered(&mut app, "/compress the lexer");
    type_text(&mut app, "my next question");
    app.handle(ServiceEvent::CompressPreview(Box::new(preview(false))));
    app.handle(ServiceEvent::CommandDone);
    assert!(
        app.overlay().is_none(),
        "the preview does not take the composer's keys"
    );
    assert!(
        app.notice()
            .unwrap()
            .text
            .contains("opens when the composer is empty")
    );
    app.handle(key(KeyCode::Enter));
    assert!(
        app.overlay().is_none(),
        "Enter sent the line, it accepted nothing"
    );
    app.handle(ServiceEvent::TurnDone {
        status: strata::domain::MessageStatus::Complete,
    });
    assert!(
        matches!(app.overlay(), Some(Overlay::Preview(_))),
        "then it opens"
    );
}

#[test]
fn keys_alone_pin_exclude_and_compress_up_to_a_selected_message() {
    let mut app = app(120, 36);
    draw(&app, 120, 36);
    // F7 selects the newest message; Up moves to older ones.
    assert!(app.handle(f(7)).is_empty());
    assert_eq!(app.selected_message().unwrap().id, id_at(&app, 7));
    app.handle(ch('k'));
    let question = id_at(&app, 6);
    assert_eq!(app.selected_message().unwrap().id, question);
    assert_eq!(
        app.handle(ch('p')),
        vec![Effect::Op(Op::Run(Command::Pin {
            message: question,
            on: true
        }))]
    );
    let pinned = changed(&app, question, |m| m.pinned = true);
    app.handle(pinned);
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("you  pinned "), "{screen}");
    assert!(screen.contains("message 6 · ↑↓ move"), "{screen}");
    // Pinned now: p unpins.
    assert_eq!(
        app.handle(ch('p')),
        vec![Effect::Op(Op::Run(Command::Pin {
            message: question,
            on: false
        }))]
    );

    // Two up (the tool result is part of its call's message): the log.
    app.handle(key(KeyCode::Up));
    app.handle(key(KeyCode::Up));
    let log = id_at(&app, 4);
    assert_eq!(app.selected_message().unwrap().id, log);
    assert_eq!(
        app.handle(ch('x')),
        vec![Effect::Op(Op::Run(Command::Exclude {
            message: log,
            on: true
        }))]
    );
    let excluded = changed(&app, log, |m| m.excluded = true);
    app.handle(excluded);
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("you  excluded −1.2k "), "{screen}");
    assert_eq!(
        app.handle(ch('x')),
        vec![Effect::Op(Op::Run(Command::Exclude {
            message: log,
            on: false
        }))]
    );
    let included = changed(&app, log, |m| m.excluded = false);
    app.handle(included);
    assert!(!draw(&app, 120, 36).contains("excluded"));

    // The reply that read the file: excluding it is the call unit's
    // business; its result's block shows the badge.
    app.handle(ch('k'));
    let caller = id_at(&app, 2);
    assert_eq!(app.selected_message().unwrap().id, caller);
    assert_eq!(
        app.handle(ch('x')),
        vec![Effect::Op(Op::Run(Command::Exclude {
            message: caller,
            on: true
        }))]
    );
    let excluded = changed(&app, caller, |m| m.excluded = true);
    app.handle(excluded);
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("assistant  excluded −40 "), "{screen}");
    assert!(screen.contains("1.2k tok  excluded −1.2k"), "{screen}");

    // c compresses up to the selected message, with a preview first.
    assert_eq!(
        app.handle(ch('c')),
        vec![Effect::Op(Op::Run(Command::Compress(CompressAsk {
            up_to: Some(caller),
            preview: true,
            ..CompressAsk::default()
        })))]
    );
    assert!(!app.selecting(), "compressing leaves the selection mode");
    assert_eq!(app.notice().unwrap().text, "compressing up to message 2…");
    app.handle(ServiceEvent::CompressPreview(Box::new(preview(false))));
    let read = read_the_question(&app);
    app.handle(read);
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![Effect::Op(Op::Run(Command::ApplyPreview {
            summary: preview(false).summary.unwrap_or_default(),
            edited: false,
            force: false,
        }))]
    );
    assert!(app.overlay().is_none());
}

#[test]
fn selection_keys_open_a_message_leave_on_esc_and_give_shift_tab_back_to_the_tool_blocks() {
    let mut app = app(120, 36);
    draw(&app, 120, 36);
    app.handle(f(7));
    app.handle(key(KeyCode::Enter));
    let Some(Overlay::Message { head, text, .. }) = app.overlay() else {
        panic!("Enter opens the message");
    };
    assert_eq!(head, "message 7 · assistant · 30 tok");
    assert_eq!(text, "Done: the loop consumes the closing brace.");
    app.handle(key(KeyCode::Esc));
    assert!(app.overlay().is_none());
    assert!(app.selecting(), "closing the message keeps the selection");
    // Shift-Tab selects the tool blocks instead.
    app.handle(shift_tab());
    assert!(!app.selecting());
    assert!(app.selected_message().is_none());
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("↑↓ select · Enter expand · Esc back"), "{screen}");
    // F7 again, then Esc leaves.
    app.handle(f(7));
    assert!(app.selecting());
    app.handle(key(KeyCode::Esc));
    assert!(!app.selecting());
    assert!(app.selected_message().is_none());
    // Typing leaves the mode but keeps the selection for a command.
    app.handle(f(7));
    app.handle(ch('k'));
    let effects = entered(&mut app, "/exclude");
    assert_eq!(
        effects,
        vec![Effect::Op(Op::Run(Command::Exclude {
            message: id_at(&app, 6),
            on: true
        }))]
    );
}

#[test]
fn edit_and_resend_puts_the_message_in_the_composer_and_esc_restores_the_draft() {
    let mut app = app(120, 36);
    draw(&app, 120, 36);
    type_text(&mut app, "half a thought");
    app.handle(f(7));
    // The newest message is a reply: it cannot be edited.
    assert!(app.handle(ch('e')).is_empty());
    assert!(app.notice().unwrap().error);
    assert!(app.notice().unwrap().text.starts_with("only a message you wrote"));
    app.handle(ch('k'));
    let question = id_at(&app, 6);
    app.handle(ch('e'));
    assert_eq!(app.draft(), "Fix it with a loop, please.");
    assert_eq!(app.editing(), Some((question, 6)));
    assert_eq!(
        app.notice().unwrap().text,
        "editing message 6 — Enter resends, Esc cancels"
    );
    // Esc: the draft from before, nothing sent.
    assert!(
        app.handle(key(KeyCode::Esc))
            .iter()
            .all(|e| matches!(e, Effect::Op(Op::CountDraft { .. })))
    );
    assert_eq!(app.draft(), "half a thought");
    assert_eq!(app.editing(), None);

    app.handle(f(7));
    app.handle(ch('k'));
    app.handle(ch('e'));
    type_text(&mut app, " Keep the tests.");
    let effects = app.handle(key(KeyCode::Enter));
    assert_eq!(
        effects.last(),
        Some(&Effect::Op(Op::EditSend {
            message: question,
            text: "Fix it with a loop, please. Keep the tests.".into()
        }))
    );
    assert!(app.is_busy(), "a resend is a turn");
    assert_eq!(app.editing(), None);
    // While it streams nothing else changes the history.
    app.handle(f(7));
    assert!(app.handle(ch('p')).is_empty());
    assert!(app.notice().unwrap().text.starts_with("a reply is streaming"));
    app.handle(key(KeyCode::Esc));

    // Editing a second message keeps the draft from before the first.
    app.handle(ServiceEvent::TurnDone {
        status: strata::domain::MessageStatus::Complete,
    });
    type_text(&mut app, "a new draft");
    app.handle(f(7));
    app.handle(ch('k'));
    app.handle(ch('e'));
    app.handle(f(7));
    app.handle(ch('k'));
    app.handle(ch('k'));
    app.handle(ch('e'));
    assert_eq!(app.editing(), Some((id_at(&app, 4), 4)));
    app.handle(key(KeyCode::Esc));
    assert_eq!(app.draft(), "a new draft");
    // Another session forgets the selection and the edit.
    app.handle(f(7));
    app.handle(ch('k'));
    app.handle(ch('e'));
    let mut other = session("Another");
    other.id = session_id(2);
    app.handle(ServiceEvent::Loaded(Box::new(strata::tui::SessionView {
        session: Some(other),
        messages: vec![msg(Role::User, "hello", 2)],
        context: None,
    })));
    assert_eq!(app.editing(), None);
    assert!(app.selected_message().is_none());
}

#[test]
fn the_context_list_at_120x36_and_80x24() {
    for (w, h) in [(120, 36), (80, 24)] {
        let app = listing(w, h);
        let screen = draw(&app, w, h);
        insta::assert_snapshot!(format!("context_list_{w}x{h}"), screen);
        assert!(
            screen.contains("9 messages · sent 5 (434 tok) · not sent 2 (1.2k tok) · archived 2"),
            "{screen}"
        );
        for state in [
            "pinned",
            "truncated 1.2k→300",
            "excluded",
            "pruned",
            "summarised",
            "archived",
        ] {
            assert!(screen.contains(state), "{state}: {screen}");
        }
        assert!(
            screen.contains("read_file"),
            "a tool output shows its tool: {screen}"
        );
        assert!(
            screen.contains("preview"),
            "the preview column fits at {w}: {screen}"
        );
    }
}

#[test]
fn the_context_list_sorts_filters_and_acts_on_the_selected_row() {
    let mut app = listing(120, 36);
    draw(&app, 120, 36);
    let selected = |app: &App| match app.overlay() {
        Some(Overlay::ContextList(l)) => l.selected_row().cloned().unwrap(),
        _ => panic!("the list is open"),
    };
    // The first rows are archived: acting on them says why not.
    assert!(app.handle(ch('p')).is_empty());
    assert!(app.notice().unwrap().text.starts_with("that message is archived"));
    app.handle(key(KeyCode::Down));
    app.handle(key(KeyCode::Down));
    assert_eq!(selected(&app).pos, Some(1));
    // Pinned: p unpins, x excludes.
    let first = id_at(&app, 1);
    assert_eq!(
        app.handle(ch('p')),
        vec![Effect::Op(Op::Run(Command::Pin {
            message: first,
            on: false
        }))]
    );
    assert_eq!(
        app.handle(ch('x')),
        vec![Effect::Op(Op::Run(Command::Exclude {
            message: first,
            on: true
        }))]
    );
    // By cost: the largest first; the selection stays on its message.
    app.handle(ch('s'));
    assert_eq!(selected(&app).pos, Some(1));
    app.handle(key(KeyCode::Home));
    assert_eq!(selected(&app).pos, Some(4), "the 1.24k log costs most");
    // Excluded: x includes it.
    assert_eq!(
        app.handle(ch('x')),
        vec![Effect::Op(Op::Run(Command::Exclude {
            message: id_at(&app, 4),
            on: false
        }))]
    );
    // Tool outputs only.
    app.handle(ch('t'));
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("tool outputs only"), "{screen}");
    assert_eq!(selected(&app).pos, Some(3));
    // Enter opens it; Esc goes back to the list.
    app.handle(key(KeyCode::Enter));
    assert!(matches!(app.overlay(), Some(Overlay::Message { .. })));
    assert!(draw(&app, 120, 36).contains("fn parse_block()"));
    // The driver's answer while the message is open fills the list below.
    let rows = rows_of(app.messages());
    app.handle(ServiceEvent::ContextList(rows));
    app.handle(key(KeyCode::Esc));
    assert_eq!(selected(&app).pos, Some(3));
    // c compresses up to it and closes the list.
    let result = id_at(&app, 3);
    assert_eq!(
        app.handle(ch('c')),
        vec![Effect::Op(Op::Run(Command::Compress(CompressAsk {
            up_to: Some(result),
            preview: true,
            ..CompressAsk::default()
        })))]
    );
    assert!(app.overlay().is_none());
    // e on a tool output is refused and the list stays open.
    app.handle(f(8));
    let rows = rows_of(app.messages());
    app.handle(ServiceEvent::ContextList(rows));
    app.handle(ch('t'));
    assert!(app.handle(ch('e')).is_empty());
    assert!(matches!(app.overlay(), Some(Overlay::ContextList(_))));
    // e on a message of yours: its text in the composer, then Enter resends.
    app.handle(ch('t'));
    app.handle(key(KeyCode::End));
    app.handle(ch('k'));
    let question = id_at(&app, 6);
    assert_eq!(selected(&app).message_id, question);
    app.handle(ch('e'));
    assert!(app.overlay().is_none());
    assert_eq!(app.draft(), "Fix it with a loop, please.");
    assert_eq!(
        app.handle(key(KeyCode::Enter)).last(),
        Some(&Effect::Op(Op::EditSend {
            message: question,
            text: "Fix it with a loop, please.".into()
        }))
    );
}

#[test]
fn the_preview_at_120x36_and_80x24() {
    for (w, h) in [(120, 36), (80, 24)] {
        let app = previewing(w, h, false);
        let screen = draw(&app, w, h);
        insta::assert_snapshot!(format!("compress_preview_{w}x{h}"), screen);
        assert!(
            screen.contains("messages 7 → 4 · tokens 2.5k → 180 · by gpt-4o-mini"),
            "{screen}"
        );
        assert!(screen.contains("kept verbatim after the summary: 2"), "{screen}");
        assert!(screen.contains("Fix it with a loop"), "{screen}");
        assert!(screen.contains("── summary"), "{screen}");
        assert!(screen.contains("Next: replace it with a loop"), "{screen}");
        assert!(screen.contains("Esc cancels"), "{screen}");
    }
}

#[test]
fn the_preview_is_edited_in_the_overlay_and_the_edit_is_what_is_applied() {
    let mut app = previewing(120, 36, false);
    app.handle(ch('e'));
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("Compression preview · editing"), "{screen}");
    type_text(&mut app, " Keep cargo fmt clean.");
    app.handle(AppEvent::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    type_text(&mut app, "Done.");
    // A paste goes into the summary, not the composer behind it.
    app.handle(AppEvent::Paste(" See\r\nabove.".into()));
    assert_eq!(app.draft(), "");
    // Esc ends editing (it does not cancel); Enter then applies the edit.
    assert!(app.handle(key(KeyCode::Esc)).is_empty());
    assert!(draw(&app, 120, 36).contains("── summary (edited)"));
    let want = format!(
        "{} Keep cargo fmt clean.\nDone. See\nabove.",
        preview(false).summary.unwrap_or_default()
    );
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![Effect::Op(Op::Run(Command::ApplyPreview {
            summary: want,
            edited: true,
            force: false
        }))]
    );
}

/// Ctrl-C on the preview cancels it and is the first of the two that quit.
#[test]
fn ctrl_c_twice_on_a_preview_cancels_it_and_quits() {
    let mut app = previewing(120, 36, false);
    let effects = app.handle(ctrl('c'));
    assert!(
        effects.contains(&Effect::Op(Op::Run(Command::CancelPreview))),
        "{effects:?}"
    );
    assert!(app.overlay().is_none());
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Quit]);
}

/// Enter pressed as the preview appears (meant for the composer) stores
/// nothing: the preview's keys answer once it could be read.
#[test]
fn enter_pressed_as_the_preview_appears_stores_nothing() {
    let mut app = app(120, 36);
    entered(&mut app, "/compress");
    app.handle(ServiceEvent::CompressPreview(Box::new(preview(false))));
    app.handle(ServiceEvent::CommandDone);
    assert!(app.handle(key(KeyCode::Enter)).is_empty());
    assert!(matches!(app.overlay(), Some(Overlay::Preview(_))));
    let read = read_the_question(&app);
    app.handle(read);
    assert!(matches!(
        app.handle(key(KeyCode::Enter)).as_slice(),
        [Effect::Op(Op::Run(Command::ApplyPreview { .. }))]
    ));
}

#[test]
fn a_growing_summary_asks_twice_and_esc_cancels_a_preview() {
    let mut app = previewing(120, 36, true);
    let screen = draw(&app, 120, 36);
    assert!(
        screen.contains("This summary is larger than what it replaces"),
        "{screen}"
    );
    assert!(
        app.handle(key(KeyCode::Enter)).is_empty(),
        "the first Enter only asks"
    );
    assert!(draw(&app, 120, 36).contains("Enter again applies the larger summary"));
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![Effect::Op(Op::Run(Command::ApplyPreview {
            summary: preview(true).summary.unwrap_or_default(),
            edited: false,
            force: true
        }))]
    );

    let mut app = previewing(120, 36, false);
    assert_eq!(
        app.handle(key(KeyCode::Esc)),
        vec![Effect::Op(Op::Run(Command::CancelPreview))]
    );
    assert!(app.overlay().is_none());
    assert_eq!(
        app.notice().unwrap().text,
        "the compression was cancelled; nothing was stored"
    );

    // E hands the summary to $EDITOR; what comes back is applied.
    let mut app = previewing(120, 36, false);
    assert_eq!(
        app.handle(AppEvent::Key(KeyEvent::new(
            KeyCode::Char('E'),
            KeyModifiers::SHIFT
        ))),
        vec![Effect::EditInEditor(preview(false).summary.unwrap_or_default())]
    );
    app.handle(AppEvent::Edited(Some("Goal: loops, not recursion.\n".into())));
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![Effect::Op(Op::Run(Command::ApplyPreview {
            summary: "Goal: loops, not recursion.".into(),
            edited: true,
            force: false
        }))]
    );
}

#[test]
fn commands_pin_exclude_and_compress_here_say_what_they_need() {
    let mut app = app(120, 36);
    // Without a selection, /pin takes the last message.
    assert_eq!(
        entered(&mut app, "/pin"),
        vec![Effect::Op(Op::Run(Command::Pin {
            message: id_at(&app, 7),
            on: true
        }))]
    );
    assert_eq!(
        entered(&mut app, "/unpin 1"),
        vec![Effect::Op(Op::Run(Command::Pin {
            message: id_at(&app, 1),
            on: false
        }))]
    );
    assert!(entered(&mut app, "/exclude").is_empty());
    assert_eq!(
        app.notice().unwrap().text,
        "select a message first (F7), or give its position: /exclude 4"
    );
    assert_eq!(
        entered(&mut app, "/exclude 4"),
        vec![Effect::Op(Op::Run(Command::Exclude {
            message: id_at(&app, 4),
            on: true
        }))]
    );
    assert_eq!(
        entered(&mut app, "/include 4"),
        vec![Effect::Op(Op::Run(Command::Exclude {
            message: id_at(&app, 4),
            on: false
        }))]
    );
    assert!(entered(&mut app, "/include 40").is_empty());
    assert_eq!(
        app.notice().unwrap().text,
        "there is no message 40; positions count the active messages from 1"
    );
    assert!(entered(&mut app, "/pin last").is_empty());
    assert!(
        app.notice()
            .unwrap()
            .text
            .starts_with("/pin takes a message's position as a number")
    );
    assert_eq!(
        entered(&mut app, "/compress here 2"),
        vec![Effect::Op(Op::Run(Command::Compress(CompressAsk {
            keep_last: Some(2),
            preview: true,
            ..CompressAsk::default()
        })))]
    );
    assert!(entered(&mut app, "/compress here").is_empty());
    assert!(app.notice().unwrap().error);
    assert!(entered(&mut app, "/compress here two").is_empty());
    assert!(app.notice().unwrap().text.contains("not 'two'"));
    // With the preview off, /compress asks for none.
    app.set_compress_preview(false);
    assert_eq!(
        entered(&mut app, "/compress"),
        vec![Effect::Op(Op::Run(Command::Compress(CompressAsk::default())))]
    );
    assert_eq!(
        entered(&mut app, "/context"),
        vec![Effect::Op(Op::Run(Command::ContextList))]
    );
    assert!(matches!(app.overlay(), Some(Overlay::ContextList(_))));
    assert!(draw(&app, 120, 36).contains("loading the context list…"));
    app.handle(key(KeyCode::Esc));
    assert_eq!(
        entered(&mut app, "/undo-resend"),
        vec![Effect::Op(Op::Run(Command::UndoEditMessage))]
    );
}

#[test]
fn ten_thousand_rows_draw_only_the_window_and_follow_the_selection() {
    let mut app = app(120, 36);
    app.handle(f(8));
    let rows: Vec<ContextRow> = (0..10_000)
        .map(|i| {
            row(
                Some(i + 1),
                Role::Tool,
                (i as u32 * 7_919) % 50_000,
                RowState::Kept,
                &format!("output {i}"),
            )
        })
        .collect();
    app.handle(ServiceEvent::ContextList(rows));
    app.handle(key(KeyCode::End));
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("10000"), "the last row is drawn: {screen}");
    assert!(!screen.contains("output 0 "), "{screen}");
    app.handle(ch('s'));
    app.handle(key(KeyCode::Home));
    let screen = draw(&app, 120, 36);
    // 7,919·i mod 50,000 is largest (49,992) at i = 8,568.
    assert!(
        screen.contains("output 8568"),
        "the costliest row comes first: {screen}"
    );
    app.handle(key(KeyCode::PageDown));
    app.handle(key(KeyCode::PageDown));
    let Some(Overlay::ContextList(l)) = app.overlay() else {
        panic!()
    };
    let shown = draw(&app, 120, 36);
    let pos = l.selected_row().unwrap().pos.unwrap();
    assert!(
        shown.contains(&format!("output {} ", pos - 1)),
        "the selection stays on screen: {shown}"
    );
}
