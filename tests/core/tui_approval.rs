//! The approval overlay on small screens: the command or the diff keeps
//! its rows before the optional parts (snapshots at 40×12 and 20×6), a
//! `↓ more` hint when it does not fit, and no approval on a screen too
//! small to show it; the heading of an edit names its path and the diff
//! starts under it; a call that would fail says so in the error style.
//! And what the app shows of a turn cancelled with Ctrl-C: the status bar
//! once it ends, the duration of the call it cut short.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tui as tui_support;
use strata::runtime::Op;

use crossterm::event::KeyCode;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use serde_json::json;
use strata::conversation::Approval;
use strata::domain::{MessageStatus, ToolStatus};
use strata::runtime::service::ApprovalRequest;
use strata::runtime::service::ServiceEvent;
use strata::tooling::Access;
use strata::tui::{AppEvent, Effect, Overlay};
use tui_support::tools::*;
use tui_support::*;

/// A command a little longer than a 40-column overlay is wide.
const COMMAND: &str = "cargo test --locked && echo second part";

fn long_shell_request() -> ApprovalRequest {
    ApprovalRequest {
        call: call("run_3", "shell", json!({ "command": COMMAND })),
        summary: COMMAND.into(),
        detail: COMMAND.into(),
        access: Access::Run,
        grant: "shell:cargo test".into(),
        why: String::new(),
        sandbox: None,
        leaves_sandbox: false,
        grant_risky: false,
    }
}

/// The screen of `w`×`h` with `request` waiting for approval.
fn screen_of(w: u16, h: u16, request: ApprovalRequest) -> String {
    draw(&asking(w, h, request), w, h)
}

/// A key typed for the composer just as the approval appears (the `a` of
/// "also") answers nothing: `a` would allow the command until exit unseen.
#[test]
fn a_key_pressed_as_the_approval_appears_answers_nothing() {
    let (mut app, _) = running_app(80, 24);
    let opened = app.now_ms();
    app.handle(ServiceEvent::Tool(
        strata::runtime::service::ToolEvent::ApprovalNeeded(Box::new(shell_request())),
    ));
    app.handle(AppEvent::Clock {
        now_ms: opened + strata::tui::ANSWER_GUARD_MS - 1,
    });
    for typed in ['a', 'y', 'n'] {
        assert!(app.handle(key(KeyCode::Char(typed))).is_empty(), "{typed}");
        assert!(matches!(app.overlay(), Some(Overlay::Approval(_))));
    }
    assert!(
        app.notice().is_some_and(|n| n.text.contains("answers nothing")),
        "{:?}",
        app.notice()
    );
    app.handle(AppEvent::Clock {
        now_ms: opened + strata::tui::ANSWER_GUARD_MS,
    });
    assert_eq!(
        app.handle(key(KeyCode::Char('y'))),
        answer("run_3", Approval::Once)
    );
}

#[test]
fn at_40x12_the_whole_command_shows_before_the_extras() {
    let screen = screen_of(40, 12, long_shell_request());
    insta::assert_snapshot!("approval_shell_40x12", screen);
    assert!(screen.contains("── command"), "{screen}");
    assert!(screen.contains("echo second"), "{screen}");
    assert!(screen.contains("│part"), "the end of the command shows: {screen}");
    assert!(!screen.contains("↓ more"), "{screen}");
    // The choices went to one line; the warning stays.
    assert!(screen.contains("y once · a"), "{screen}");
    assert!(screen.contains("strata does not confine"), "{screen}");
}

#[test]
fn at_40x12_an_edit_shows_its_diff_with_a_hint_when_it_does_not_fit() {
    let mut app = asking(40, 12, edit_request());
    let screen = draw(&app, 40, 12);
    insta::assert_snapshot!("approval_edit_40x12", screen);
    assert!(screen.contains("--- a/src/parser.rs"), "{screen}");
    assert!(screen.contains("↓ more ("), "{screen}");
    app.handle(key(KeyCode::End));
    let screen = draw(&app, 40, 12);
    assert!(screen.contains("self.expect(Token::RBrace)?;"), "{screen}");
    assert!(screen.contains("above"), "{screen}");
    assert!(!screen.contains("↓ more"), "{screen}");
}

#[test]
fn at_20x6_a_line_of_the_detail_and_a_hint_show() {
    let mut app = asking(20, 6, edit_request());
    let screen = draw(&app, 20, 6);
    insta::assert_snapshot!("approval_edit_20x6", screen);
    // The diff's first row (`--- a/src/parser.rs` wraps at its space).
    assert!(screen.contains("│---  "), "{screen}");
    assert!(screen.contains("↓ more ("), "{screen}");
    // Down brings the next row of the diff.
    app.handle(key(KeyCode::Down));
    let screen = draw(&app, 20, 6);
    assert!(screen.contains("│a/src/parser.rs"), "{screen}");
    assert!(screen.contains("↓ more (27 lines)"), "{screen}");
    app.handle(key(KeyCode::End));
    let screen = draw(&app, 20, 6);
    assert!(screen.contains("↑ 28 lines above"), "{screen}");

    let screen = screen_of(20, 6, long_shell_request());
    insta::assert_snapshot!("approval_shell_20x6", screen);
    assert!(screen.contains("cargo test"), "{screen}");
    assert!(screen.contains("↓ more (2 lines)"), "{screen}");
    assert!(screen.contains("unconfined"), "{screen}");
    // Seen in part, with the hint: the call can be allowed.
    let mut app = asking(20, 6, long_shell_request());
    assert_eq!(
        app.handle(key(KeyCode::Char('y'))),
        answer("run_3", Approval::Once)
    );
}

#[test]
fn too_small_to_show_the_command_it_says_so_and_y_does_not_allow() {
    insta::assert_snapshot!("approval_too_small_20x4", screen_of(20, 4, long_shell_request()));
    for (w, h) in [(20, 4), (40, 5), (2, 2)] {
        let mut app = asking(w, h, long_shell_request());
        let screen = draw(&app, w, h);
        if h >= 4 {
            assert!(screen.contains("Enlarge "), "{w}x{h}: {screen}");
            assert!(!screen.contains("y once"), "{w}x{h}: {screen}");
        }
        for k in ['y', 'a', 'Y'] {
            assert!(app.handle(key(KeyCode::Char(k))).is_empty(), "{w}x{h}: {k}");
        }
        assert!(matches!(app.overlay(), Some(Overlay::Approval(_))));
        let notice = app.notice().unwrap();
        assert!(notice.error && notice.text.contains("too small"), "{notice:?}");
        // Enlarged, the same key allows; the notice goes.
        app.handle(AppEvent::Resize {
            width: 80,
            height: 24,
        });
        assert_eq!(
            app.handle(key(KeyCode::Char('a'))),
            answer("run_3", Approval::UntilExit)
        );
        assert!(app.notice().is_none_or(|n| !n.text.contains("too small")));
    }
    // Denying needs no detail.
    let mut app = asking(20, 4, long_shell_request());
    assert_eq!(
        app.handle(key(KeyCode::Esc)),
        answer("run_3", Approval::Deny { reason: None })
    );
    let mut app = asking(20, 4, long_shell_request());
    app.handle(key(KeyCode::Char('n')));
    type_text(&mut app, "no");
    let screen = draw(&app, 20, 4);
    assert!(screen.contains("Enter denies"), "{screen}");
    assert!(screen.contains("reason: no"), "{screen}");
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        answer(
            "run_3",
            Approval::Deny {
                reason: Some("no".into())
            }
        )
    );
}

#[test]
fn an_edit_is_headed_by_its_path_and_the_diff_starts_under_it() {
    let screen = screen_of(80, 24, edit_request());
    assert!(screen.contains("── edit of src/parser.rs ──"), "{screen}");
    assert!(screen.contains("│--- a/src/parser.rs"), "{screen}");
    assert!(!screen.contains("edit of ---"), "{screen}");
    let mut write = edit_request();
    write.call = call(
        "run_3",
        "write_file",
        json!({"path": "NOTES.md", "content": "# Notes\n"}),
    );
    write.summary = "NOTES.md".into();
    write.detail = "--- a/NOTES.md\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+# Notes\n".into();
    let screen = screen_of(80, 24, write);
    assert!(screen.contains("── write of NOTES.md ──"), "{screen}");
    assert!(screen.contains("│+# Notes"), "{screen}");
}

#[test]
fn an_edit_that_would_fail_says_why_in_the_error_style() {
    let sentence = "This call would fail: src/parser.rs changed since it was read; read it again first.";
    let mut request = edit_request();
    request.detail = sentence.into();
    let app = asking(80, 24, request);
    let area = Rect::new(0, 0, 80, 24);
    let mut buf = Buffer::empty(area);
    strata::tui::draw(&app, area, &mut buf);
    let rows: Vec<String> = (0..24)
        .map(|y| (0..80).map(|x| buf[(x, y)].symbol()).collect())
        .collect();
    let heading = rows
        .iter()
        .position(|r| r.contains("── edit of src/parser.rs ──"));
    let at = rows.iter().position(|r| r.contains("This call would fail:"));
    assert!(heading.is_some() && at > heading, "{rows:#?}");
    let y = at.unwrap();
    let x = rows[y]
        .find("This")
        .map(|b| rows[y][..b].chars().count())
        .unwrap();
    let cell = &buf[(u16::try_from(x).unwrap(), u16::try_from(y).unwrap())];
    assert_eq!(cell.fg, Color::Red, "{rows:#?}");
    assert!(
        rows.iter().any(|r| r.contains("read it again first.")),
        "{rows:#?}"
    );
}

#[test]
fn the_cancelling_notice_ends_with_the_turn() {
    // Ctrl-C while a command runs, then while an approval is open.
    let (mut app, _) = running_app(80, 24);
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Op(Op::Cancel)]);
    assert!(draw(&app, 80, 24).contains("cancelling the reply"));
    app.handle(ServiceEvent::TurnDone {
        status: MessageStatus::Complete,
    });
    let screen = draw(&app, 80, 24);
    assert!(!screen.contains("cancelling"), "{screen}");
    assert!(screen.contains("idle · cancelled"), "{screen}");

    let mut app = asking(80, 24, long_shell_request());
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Op(Op::Cancel)]);
    app.handle(ServiceEvent::TurnDone {
        status: MessageStatus::Complete,
    });
    assert!(!draw(&app, 80, 24).contains("cancelling"));

    // A cancelled reply says the partial reply is kept.
    let (mut app, _) = running_app(80, 24);
    app.handle(ctrl('c'));
    app.handle(ServiceEvent::TurnDone {
        status: MessageStatus::Interrupted,
    });
    assert!(app.notice().unwrap().text.contains("partial reply is kept"));
}

#[test]
fn a_cancelled_call_shows_the_time_it_was_seen_running() {
    // The shell call started at 100 s and was seen running until 112.4 s,
    // when it is cancelled; its result carries no duration of its own.
    let (mut app, _) = running_app(120, 36);
    let cancelled = |ms| {
        result(
            "run_1",
            "shell",
            ToolStatus::Interrupted,
            "Interrupted: the turn was cancelled while this call ran.",
            12,
            ms,
        )
    };
    app.handle(ServiceEvent::Message(Box::new(cancelled(Some(0)))));
    app.handle(AppEvent::Tick { now_ms: 130_000 });
    app.handle(ServiceEvent::TurnDone {
        status: MessageStatus::Complete,
    });
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("! interrupted · 12s"), "{screen}");
    assert!(!screen.contains("0ms"), "{screen}");

    // Read back without having been seen running: no duration at all.
    let app = app_with(
        120,
        36,
        vec![
            reply("", vec![call("run_1", "shell", json!({"command": "sleep 9"}))]),
            cancelled(Some(0)),
        ],
        None,
    );
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("! interrupted · 12 tok"), "{screen}");
}

#[test]
fn an_mcp_tool_is_described_as_running_in_its_server_not_as_a_shell_command() {
    let request = ApprovalRequest {
        call: call(
            "run_4",
            "filesystem__write_file",
            json!({"path": "/tmp/x", "content": "y"}),
        ),
        summary: r#"{"content":"y","path":"/tmp/x"}"#.into(),
        detail: "{\n  \"content\": \"y\",\n  \"path\": \"/tmp/x\"\n}".into(),
        access: Access::Run,
        grant: "filesystem__write_file".into(),
        why: String::new(),
        sandbox: None,
        leaves_sandbox: false,
        grant_risky: false,
    };
    let screen = screen_of(120, 36, request);
    assert!(screen.contains("runs in its MCP server"), "{screen}");
    assert!(!screen.contains("does not confine this command"), "{screen}");
}

#[test]
fn a_call_leaving_the_sandbox_says_so_and_can_be_allowed_once_only() {
    let request = ApprovalRequest {
        call: call(
            "run_9",
            "shell",
            json!({ "command": "docker ps", "sandbox": "off", "reason": "needs docker" }),
        ),
        summary: "docker ps".into(),
        detail: "docker ps".into(),
        access: Access::Run,
        grant: "shell:docker ps".into(),
        why: String::new(),
        sandbox: Some("runs outside the sandbox: needs docker".into()),
        leaves_sandbox: true,
        grant_risky: false,
    };
    let mut app = asking(80, 20, request);
    let screen = draw(&app, 80, 20);
    insta::assert_snapshot!("approval_shell_leaving_sandbox_80x20", screen);
    assert!(
        screen.contains("runs outside the sandbox: needs docker"),
        "{screen}"
    );
    assert!(screen.contains("allow once, outside the sandbox"), "{screen}");
    assert!(!screen.contains("until strata exits"), "{screen}");
    // `a` grants nothing here: the call still waits.
    let effects = app.handle(key(KeyCode::Char('a')));
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Op(Op::Approve(_)))),
        "{effects:?}"
    );
    assert!(app.overlay().is_some());
}

/// A call that asks only for the network still runs in the sandbox, and
/// its one choice says so.
#[test]
fn a_call_asking_for_the_network_is_allowed_once_with_the_network() {
    let request = ApprovalRequest {
        call: call(
            "run_10",
            "shell",
            json!({ "command": "cargo fetch", "network": true, "reason": "fetch crates" }),
        ),
        summary: "cargo fetch".into(),
        detail: "cargo fetch".into(),
        access: Access::Run,
        grant: "shell:cargo fetch".into(),
        why: String::new(),
        sandbox: Some("uses the network (outside the sandbox's network rule): fetch crates".into()),
        leaves_sandbox: true,
        grant_risky: false,
    };
    let screen = draw(&asking(80, 20, request), 80, 20);
    assert!(screen.contains("allow once, with the network"), "{screen}");
    assert!(!screen.contains("outside the sandbox ·"), "{screen}");
}

#[test]
fn a_command_holding_escapes_and_a_carriage_return_shows_them_as_carets() {
    let command = "echo ok\u{1b}[8m hidden\rrm -rf ~ \u{202e}txt.sh";
    let request = ApprovalRequest {
        call: call("run_9", "shell", json!({ "command": command })),
        summary: command.into(),
        detail: command.into(),
        grant: String::new(),
        ..long_shell_request()
    };
    let screen = screen_of(60, 16, request);
    assert!(screen.contains("echo ok^[[8m hidden^Mrm -rf ~"), "{screen}");
    assert!(screen.contains("\\u{202e}txt.sh"), "{screen}");
}

/// A shell request for `command` with the grant the service offers.
fn offered(command: &str) -> ApprovalRequest {
    use strata::tooling::approval::{GrantOffer, grant_offer};
    let args = json!({ "command": command });
    let offer = grant_offer("shell", &args);
    ApprovalRequest {
        call: call("run_5", "shell", args),
        summary: command.into(),
        detail: command.into(),
        grant: match &offer {
            GrantOffer::None => String::new(),
            GrantOffer::Plain(r) | GrantOffer::Risky(r) => r.to_string(),
        },
        grant_risky: matches!(offer, GrantOffer::Risky(_)),
        ..long_shell_request()
    }
}

fn approved(effects: &[Effect]) -> bool {
    effects.iter().any(|e| matches!(e, Effect::Op(Op::Approve(_))))
}

#[test]
fn a_loop_is_offered_no_prefix_rule_and_a_deleting_prefix_takes_a_second_key() {
    let mut app = asking(80, 20, offered("for i in 1 2 3; do echo $i; done"));
    let screen = draw(&app, 80, 20);
    assert!(!screen.contains("until strata exits"), "{screen}");
    assert!(screen.contains("no lasting rule"), "{screen}");
    assert!(!approved(&app.handle(key(KeyCode::Char('a')))));
    assert!(app.overlay().is_some());

    let mut app = asking(80, 20, offered("rm -rf build"));
    let screen = draw(&app, 80, 20);
    assert!(
        screen.contains("allow shell:rm -rf until strata exits (asks twice)"),
        "{screen}"
    );
    assert!(
        !approved(&app.handle(key(KeyCode::Char('a')))),
        "the first `a` only warns"
    );
    let screen = draw(&app, 80, 20);
    assert!(screen.contains("may delete or rewrite files"), "{screen}");
    assert!(
        approved(&app.handle(key(KeyCode::Char('a')))),
        "the second allows"
    );

    let mut app = asking(80, 20, offered("git status --short"));
    assert!(
        approved(&app.handle(key(KeyCode::Char('a')))),
        "a plain prefix takes one key"
    );
}
