//! The app's update alone (no driver, no terminal): what keys and
//! background results do to its state and which effects they ask for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui as tui_support;
use strata::runtime::Op;
use strata::runtime::service::Command;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use strata::runtime::service::ServiceEvent;
use strata::tui::{AppEvent, Effect, ExportFormat, Overlay};
use tui_support::*;

#[test]
fn enter_sends_and_alt_enter_inserts_a_newline() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "first line");
    app.handle(AppEvent::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)));
    type_text(&mut app, "second");
    assert_eq!(app.draft(), "first line\nsecond");
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![
            Effect::Op(Op::RememberInput("first line\nsecond".into())),
            Effect::send("first line\nsecond".into())
        ]
    );
    assert!(app.is_busy());
    assert_eq!(app.draft(), "");
}

#[test]
fn up_and_down_recall_earlier_inputs() {
    let mut app = app_with(80, 24, Vec::new(), None);
    for text in ["one", "two"] {
        type_text(&mut app, text);
        app.handle(key(KeyCode::Enter));
        app.handle(ServiceEvent::TurnDone {
            status: strata::domain::MessageStatus::Complete,
        });
    }
    app.handle(key(KeyCode::Up));
    assert_eq!(app.draft(), "two");
    app.handle(key(KeyCode::Up));
    assert_eq!(app.draft(), "one");
    app.handle(key(KeyCode::Down));
    assert_eq!(app.draft(), "two");
    app.handle(key(KeyCode::Down));
    assert_eq!(app.draft(), "");
}

#[test]
fn tab_completes_commands_and_arguments_reach_the_effect() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "/exp");
    app.handle(key(KeyCode::Tab));
    assert_eq!(app.draft(), "/export ");
    type_text(&mut app, "json");
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![
            Effect::Op(Op::RememberInput("/export json".into())),
            Effect::Op(Op::Run(Command::Export(ExportFormat::Json)))
        ]
    );
    type_text(&mut app, "/compress the auth flow");
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![
            Effect::Op(Op::RememberInput("/compress the auth flow".into())),
            Effect::Op(Op::Run(Command::Compress(strata::tui::CompressAsk {
                topic: Some("the auth flow".into()),
                keep_last: None,
                up_to: None,
                preview: true,
            })))
        ]
    );
    type_text(&mut app, "/rename");
    assert!(app.handle(key(KeyCode::Enter)).is_empty());
    assert_eq!(app.notice().unwrap().text, "/rename needs <title>");
}

#[test]
fn draft_tokens_from_an_older_ticket_are_dropped() {
    let mut app = app_with(120, 36, Vec::new(), None);
    let first = type_text(&mut app, "a");
    let second = type_text(&mut app, "b");
    let ticket = |e: &[Effect]| match e.last() {
        Some(Effect::Op(Op::CountDraft { ticket, text })) => (*ticket, text.clone()),
        other => panic!("{other:?}"),
    };
    let (old, _) = ticket(&first);
    let (new, text) = ticket(&second);
    assert_eq!(text, "ab");
    app.handle(ServiceEvent::DraftTokens {
        ticket: new,
        tokens: 2,
    });
    app.handle(ServiceEvent::DraftTokens {
        ticket: old,
        tokens: 999,
    });
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("+ draft 2"), "{screen}");
    assert!(!screen.contains("999"));
}

#[test]
fn picker_answers_for_an_older_search_are_dropped_and_esc_closes() {
    let mut app = app_with(80, 24, Vec::new(), None);
    let open = app.handle(ctrl('o'));
    let Some(Effect::Op(Op::ListSessions { ticket: old, .. })) = open.first().cloned() else {
        panic!("{open:?}")
    };
    type_text(&mut app, "x");
    app.handle(ServiceEvent::Sessions {
        ticket: old,
        rows: vec![],
    });
    assert!(matches!(app.overlay(), Some(Overlay::Picker(p)) if !p.loaded));
    app.handle(key(KeyCode::Esc));
    assert!(app.overlay().is_none());
}

#[test]
fn the_context_pane_follows_the_width_and_its_toggle() {
    let mut app = app_with(120, 36, Vec::new(), None);
    assert!(app.context_visible());
    app.handle(AppEvent::Resize {
        width: 90,
        height: 30,
    });
    assert!(!app.context_visible());
    app.handle(ctrl('t'));
    assert!(app.context_visible());
    app.handle(ctrl('t'));
    assert!(!app.context_visible());
}

/// The code cells of the first drawn line containing `needle`: their
/// foreground colours.
fn colours_of_line(app: &strata::tui::App, needle: &str) -> Vec<ratatui::style::Color> {
    let mut buf = ratatui::buffer::Buffer::empty(ratatui::layout::Rect::new(0, 0, 80, 24));
    strata::tui::draw(app, buf.area, &mut buf);
    for y in 0..24 {
        let row: String = (0..80).map(|x| buf[(x, y)].symbol().to_owned()).collect();
        if let Some(at) = row.find(needle) {
            let start = u16::try_from(row[..at].chars().count()).unwrap();
            let len = u16::try_from(needle.chars().count()).unwrap();
            return (start..start + len).map(|x| buf[(x, y)].fg).collect();
        }
    }
    panic!("{needle:?} is not on screen");
}

#[test]
fn code_in_a_reply_is_plain_until_its_highlight_arrives_then_coloured() {
    use strata::domain::Role;
    use strata::render::{Highlighter, HighlighterOptions};
    let reply = msg(
        Role::Assistant,
        "Try **this**:\n\n```rust\nfn main() { let x = 1; }\n```\n",
        20,
    );
    let mut app = app_with(80, 24, vec![msg(Role::User, "how?", 2), reply], None);
    let plain = colours_of_line(&app, "fn main() { let x = 1; }");
    assert!(
        plain.iter().all(|c| *c == plain[0]),
        "no highlighter, no colours: {plain:?}"
    );
    let (tx, rx) = std::sync::mpsc::channel();
    app.set_highlighter(Highlighter::spawn_with(HighlighterOptions {
        theme: None,
        waker: Some(Box::new(move || {
            let _ = tx.send(());
        })),
    }));
    let mut coloured = colours_of_line(&app, "fn main() { let x = 1; }");
    for _ in 0..60 {
        if coloured.iter().any(|c| *c != coloured[0]) {
            break;
        }
        // The highlighter's waker stands in for the event loop's channel.
        let _ = rx.recv_timeout(std::time::Duration::from_secs(1));
        app.handle(AppEvent::Highlighted);
        coloured = colours_of_line(&app, "fn main() { let x = 1; }");
    }
    assert!(
        coloured.iter().any(|c| *c != coloured[0]),
        "the highlight never reached the screen: {coloured:?}"
    );
    // Markdown emphasis is rendered, not shown as asterisks.
    colours_of_line(&app, "Try this:");
}

#[test]
fn pasted_carriage_returns_become_newlines() {
    let mut app = app_with(80, 24, Vec::new(), None);
    app.handle(AppEvent::Paste("def f():\r    return 1\r\nprint(f())".into()));
    assert_eq!(app.draft(), "def f():\n    return 1\nprint(f())");
}

#[test]
fn ctrl_c_clears_a_draft_first_and_ctrl_u_deletes_to_the_line_start() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "abc def");
    app.handle(ctrl('u'));
    assert_eq!(app.draft(), "");
    type_text(&mut app, "half typed");
    assert!(app.handle(ctrl('c')).iter().all(|e| *e != Effect::Quit));
    assert_eq!(app.draft(), "", "the first Ctrl-C clears the draft");
    assert!(app.handle(ctrl('c')).is_empty());
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Quit]);
}

#[test]
fn a_cancelled_reply_says_it_was_kept_not_that_it_is_cancelling() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "hello");
    app.handle(key(KeyCode::Enter));
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Op(Op::Cancel)]);
    assert!(app.notice().unwrap().text.contains("cancelling"));
    // Cancelled before any reply (while the history was compressed, say):
    // no reply slot stays, and nothing is said to be kept but the message.
    app.handle(ServiceEvent::TurnDone {
        status: strata::domain::MessageStatus::Interrupted,
    });
    assert!(
        app.notice()
            .unwrap()
            .text
            .contains("before any of it came; your message is kept"),
        "{:?}",
        app.notice()
    );
    assert!(
        !draw(&app, 80, 24).contains("streaming"),
        "{}",
        draw(&app, 80, 24)
    );
    // With part of a reply: that part is kept.
    type_text(&mut app, "again");
    app.handle(key(KeyCode::Enter));
    app.handle(ctrl('c'));
    let mut partial = msg(strata::domain::Role::Assistant, "Half an ans", 3);
    partial.status = strata::domain::MessageStatus::Interrupted;
    app.handle(ServiceEvent::Message(Box::new(partial)));
    app.handle(ServiceEvent::TurnDone {
        status: strata::domain::MessageStatus::Interrupted,
    });
    assert!(app.notice().unwrap().text.contains("partial reply is kept"));
}

/// A cancel the service does not answer (a turn stuck, a service gone)
/// never holds the app: the second Ctrl-C quits.
#[test]
fn ctrl_c_twice_quits_even_while_a_cancel_is_unanswered() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "hello");
    app.handle(key(KeyCode::Enter));
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Op(Op::Cancel)]);
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Quit]);
}

/// A cancel that puts the message back in the composer (it was never
/// sent) still counts as the first Ctrl-C: the second quits.
#[test]
fn ctrl_c_twice_quits_when_the_cancel_gave_the_message_back() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "hello");
    app.handle(key(KeyCode::Enter));
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Op(Op::Cancel)]);
    app.handle(ServiceEvent::Unsent("hello".into()));
    app.handle(ServiceEvent::TurnDone {
        status: strata::domain::MessageStatus::Error,
    });
    assert_eq!(app.draft(), "hello");
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Quit]);
}

/// Ctrl-C on an open overlay closes it and is the first of the two that
/// quit; the draft is left alone.
#[test]
fn ctrl_c_on_an_overlay_closes_it_and_the_next_quits() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "half typed");
    app.handle(key(KeyCode::F(1)));
    assert!(app.overlay().is_some());
    assert!(app.handle(ctrl('c')).is_empty());
    assert!(app.overlay().is_none());
    assert_eq!(app.draft(), "half typed");
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Quit]);
}

/// The status bar names the turn's phase and how long it has lasted, from
/// the first frame after Enter to the reply.
#[test]
fn the_status_bar_follows_the_turns_phases() {
    use strata::compress::Trigger;
    use strata::conversation::Phase;
    let mut app = app_with(120, 20, Vec::new(), None);
    type_text(&mut app, "hello");
    app.handle(key(KeyCode::Enter));
    let status = |app: &strata::tui::App| draw(app, 120, 20).lines().last().unwrap_or("").to_owned();
    assert!(status(&app).contains("preparing"), "{}", status(&app));
    app.handle(ServiceEvent::Phase(Phase::StartingServers { ready: 1, total: 3 }));
    app.handle(AppEvent::Tick { now_ms: 500 });
    app.handle(ServiceEvent::Phase(Phase::StartingServers { ready: 2, total: 3 }));
    app.handle(AppEvent::Tick { now_ms: 2_500 });
    // Counting up keeps the wait's start; Esc sends without the rest.
    assert!(
        status(&app).contains("waiting for MCP servers 2/3 2s · Esc sends without them"),
        "{}",
        status(&app)
    );
    assert_eq!(
        app.handle(key(KeyCode::Esc)),
        vec![strata::tui::Effect::Op(Op::SkipServers)]
    );
    app.handle(AppEvent::Tick { now_ms: 1_000 });
    app.handle(ServiceEvent::Phase(Phase::Compressing(Trigger::Preflight)));
    app.handle(AppEvent::Tick { now_ms: 4_000 });
    assert!(status(&app).contains("compressing 3s"), "{}", status(&app));
    app.handle(ServiceEvent::Phase(Phase::Connecting));
    assert!(status(&app).contains("connecting 0s"), "{}", status(&app));
    app.handle(ServiceEvent::Phase(Phase::Retrying {
        attempt: 1,
        max: 3,
        reason: "the server is overloaded".into(),
    }));
    assert!(
        status(&app).contains("retry 1/3 0s · the server is overloaded"),
        "{}",
        status(&app)
    );
    app.handle(ServiceEvent::Phase(Phase::WaitingForFirstToken));
    app.handle(AppEvent::Tick { now_ms: 9_000 });
    assert!(
        status(&app).contains("waiting for the first token 5s"),
        "{}",
        status(&app)
    );
    // A provider that says how far it read: the wait keeps its start.
    app.handle(ServiceEvent::Phase(Phase::ReadingPrompt {
        done: 2_048,
        total: 5_600,
    }));
    app.handle(AppEvent::Tick { now_ms: 12_000 });
    assert!(
        status(&app).contains("reading the prompt 2k of 5.6k tokens 8s"),
        "{}",
        status(&app)
    );
    app.handle(ServiceEvent::Phase(Phase::Streaming));
    app.handle(ServiceEvent::Delta {
        text: "Hi".into(),
        now_ms: 9_100,
    });
    assert!(status(&app).contains("streaming"), "{}", status(&app));
    app.handle(ServiceEvent::TurnDone {
        status: strata::domain::MessageStatus::Complete,
    });
    assert!(status(&app).contains("idle"), "{}", status(&app));
}

/// The pane adds the pre-limit and stored figures only when the pipeline
/// cut, pruned or dropped something; framing alone does not show them.
#[test]
fn the_pre_limit_and_stored_figures_show_only_when_the_pipeline_reduced_something() {
    use strata::domain::Role;
    use strata::pipeline::{Action, ReportEntry};
    let messages = vec![msg(Role::User, "hello", 7), msg(Role::Assistant, "hi", 5)];
    let mut ctx = context(&messages);
    ctx.stored_tokens = ctx.prepared_tokens.unwrap() - 6;
    ctx.report = messages
        .iter()
        .map(|m| ReportEntry {
            message_id: m.id,
            action: Action::Kept,
            tokens_before: 7,
            tokens_after: 7,
        })
        .collect();
    let app = app_with(140, 30, messages.clone(), Some(ctx.clone()));
    assert!(!draw(&app, 140, 30).contains("stored"));
    ctx.report[0].action = Action::Truncated;
    ctx.stored_tokens = 40_000;
    let app = app_with(140, 30, messages, Some(ctx));
    assert!(draw(&app, 140, 30).contains("stored"));
}

/// A reply's header gives the provider's completion tokens once they are
/// known, live and from the session's requests; a user message keeps its
/// count.
#[test]
fn a_replys_header_shows_the_providers_completion_tokens() {
    use strata::domain::{Role, Usage};
    let messages = vec![msg(Role::User, "hello", 7), msg(Role::Assistant, "hi there", 75)];
    let reply = messages[1].id;
    let mut app = app_with(120, 36, messages.clone(), Some(context(&messages)));
    let screen = draw(&app, 120, 36);
    assert!(
        screen.contains("assistant  75 tok") && screen.contains("you  7 tok"),
        "{screen}"
    );
    let usage = Usage {
        session_id: session_id(1),
        message_id: Some(reply),
        model: "gpt-4o".into(),
        prompt_tokens: Some(300),
        completion_tokens: Some(71),
        cache_read_tokens: None,
        cache_write_tokens: None,
        reasoning_tokens: None,
        estimated_prompt_tokens: 290,
        ttft_ms: None,
        duration_ms: None,
        created_at: 0,
        tools_sha256: None,
        cache: None,
    };
    app.handle(ServiceEvent::Usage(usage.clone()));
    let screen = draw(&app, 120, 36);
    assert!(
        screen.contains("assistant  71 tok") && screen.contains("you  7 tok"),
        "{screen}"
    );
    assert!(
        screen.contains("completion 71"),
        "the status bar agrees: {screen}"
    );

    // Opened again: from the session's requests.
    let mut ctx = context(&messages);
    ctx.requests = strata::runtime::cache_report::request_points(&[usage], &[]);
    let app = app_with(120, 36, messages, Some(ctx));
    assert!(draw(&app, 120, 36).contains("assistant  71 tok"));
}

/// The status bar cuts a long notice; the notices log (F6, `/log`) shows
/// every one whole, newest first.
#[test]
fn the_notices_log_keeps_every_notice_whole_newest_first() {
    let mut app = app_with(80, 24, Vec::new(), None);
    let long = format!(
        "MCP server slow is unavailable: {}",
        "it said something long. ".repeat(12)
    );
    app.handle(ServiceEvent::Notice("first notice".into()));
    app.handle(ServiceEvent::Error(long.clone()));
    app.handle(ServiceEvent::Notice("the newest".into()));
    let status = draw(&app, 80, 24);
    assert!(!status.contains(&long), "the status bar cannot hold it");
    app.handle(key(KeyCode::F(6)));
    let screen = draw(&app, 80, 24);
    assert!(screen.contains("Notices"), "{screen}");
    let newest = screen.find("the newest").unwrap();
    let error = screen.find("error: MCP server slow").unwrap();
    let first = screen.find("first notice").unwrap();
    assert!(newest < error && error < first, "newest first:\n{screen}");
    // Whole: every sentence of the long one is there, wrapped.
    assert_eq!(screen.matches("long.").count(), 12, "{screen}");
    assert_eq!(app.notices_log().len(), 3);
    app.handle(key(KeyCode::Esc));
    type_text(&mut app, "/log");
    app.handle(key(KeyCode::Enter));
    assert!(draw(&app, 80, 24).contains("Notices"));
}

#[test]
fn a_bare_resume_opens_the_session_picker_and_one_with_an_id_resumes() {
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "/resume");
    let effects = app.handle(key(KeyCode::Enter));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Op(Op::ListSessions { .. }))),
        "{effects:?}"
    );
    assert!(matches!(app.overlay(), Some(Overlay::Picker(_))));
    app.handle(key(KeyCode::Esc));
    type_text(&mut app, "/resume 1a2b3c4d");
    let effects = app.handle(key(KeyCode::Enter));
    assert!(
        effects.contains(&Effect::Op(Op::Run(Command::Resume("1a2b3c4d".into())))),
        "{effects:?}"
    );
}

#[test]
fn a_bare_model_or_skill_opens_a_picker_that_picks_by_enter() {
    use strata::runtime::service::{Choice, ChoiceKind};
    for (command, kind) in [("/model", ChoiceKind::Model), ("/skill", ChoiceKind::Skill)] {
        let mut app = app_with(80, 24, Vec::new(), None);
        type_text(&mut app, command);
        let effects = app.handle(key(KeyCode::Enter));
        assert!(
            effects.contains(&Effect::Op(Op::Run(Command::ListChoices(kind)))),
            "{command}: {effects:?}"
        );
        let items = ["alpha", "beta", "gamma"]
            .iter()
            .map(|n| Choice {
                name: (*n).to_owned(),
                detail: String::new(),
            })
            .collect();
        app.handle(ServiceEvent::Choices { kind, items });
        let screen = draw(&app, 80, 24);
        assert!(screen.contains("beta") && screen.contains("search:"), "{screen}");
        type_text(&mut app, "am");
        let picked = app.handle(key(KeyCode::Enter));
        let want = match kind {
            ChoiceKind::Model => Effect::Op(Op::Run(Command::Model("gamma".into()))),
            ChoiceKind::Skill => Effect::Op(Op::Run(Command::Skill("gamma".into()))),
        };
        assert!(picked.contains(&want), "{command}: {picked:?}");
        assert!(app.overlay().is_none());
    }
}

/// Closing the model list while it loads stops the listing (Esc), or
/// stops it and arms the quit (Ctrl-C): nothing keeps counting behind.
#[test]
fn closing_the_loading_model_list_stops_the_listing() {
    for close in [key(KeyCode::Esc), ctrl('c')] {
        let mut app = app_with(80, 24, Vec::new(), None);
        type_text(&mut app, "/model");
        app.handle(key(KeyCode::Enter));
        assert!(app.overlay().is_some());
        let effects = app.handle(close.clone());
        assert!(app.overlay().is_none());
        assert!(
            effects.contains(&Effect::Op(Op::Cancel)),
            "{close:?}: {effects:?}"
        );
    }
    let mut app = app_with(80, 24, Vec::new(), None);
    type_text(&mut app, "/model");
    app.handle(key(KeyCode::Enter));
    app.handle(ctrl('c'));
    assert_eq!(
        app.handle(ctrl('c')),
        vec![Effect::Quit],
        "the second Ctrl-C quits"
    );
}

/// A model switch shows as work with its time and stops on Esc, leaving
/// the session on its model.
#[test]
fn a_model_switch_runs_visibly_and_stops_on_esc() {
    let mut app = app_with(120, 36, Vec::new(), None);
    type_text(&mut app, "/model gpt-4.1");
    let mut effects = app.handle(key(KeyCode::Enter));
    if app.rewrite_question().is_some() {
        effects = app.handle(key(KeyCode::Enter));
    }
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Op(Op::Run(strata::runtime::service::Command::Model(m))) if m == "gpt-4.1")),
        "{effects:?}"
    );
    app.handle(AppEvent::Tick { now_ms: 2_000 });
    let status = draw(&app, 120, 36).lines().last().unwrap().to_owned();
    assert!(status.contains("switching to gpt-4.1 2s · Esc stops"), "{status}");
    assert_eq!(app.handle(key(KeyCode::Esc)), vec![Effect::Op(Op::Cancel)]);
    app.handle(ServiceEvent::Notice(
        "the switch to gpt-4.1 was stopped; the session stays on its model".into(),
    ));
    app.handle(ServiceEvent::CommandDone);
    let status = draw(&app, 120, 36).lines().last().unwrap().to_owned();
    assert!(
        status.contains("idle · the switch to gpt-4.1 was stopped"),
        "{status}"
    );
}
