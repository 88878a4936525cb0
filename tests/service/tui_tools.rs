//! Tool calls in the full-screen app: the tool blocks under a reply
//! (collapsed and expanded, every status, the `truncated`, `preview` and
//! `spilled → path` badges, the live state of a round that runs) and the
//! approval overlay, as snapshots at 120×36 and 80×24; the keys that
//! select, expand and collapse a block and that answer an approval; the
//! `/tools` and `/undo-edit` commands. One test runs the real session handle
//! against a scripted server: the model calls `shell`, the user denies it
//! with a reason, and the reason reaches the model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::server;
use crate::support::tui as tui_support;
use strata::runtime::Op;
use strata::runtime::service::Command;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use strata::conversation::Approval;
use strata::domain::{Message, MessageStatus, Role, ToolCall, ToolStatus};
use strata::pipeline::{Action, ReportEntry};
use strata::runtime::service::Listing;
use strata::runtime::service::ServiceEvent;
use strata::runtime::service::ToolEvent;
use strata::tui::{App, AppEvent, Effect, Overlay};
use tui_support::tools::*;
use tui_support::*;

const SIZES: [(u16, u16); 2] = [(120, 36), (80, 24)];

/// The summaries the service sent when the calls started (so the blocks
/// read the same whatever `schema::summary` makes of the arguments).
fn summaries(app: &mut App, calls: &[(&ToolCall, &str)]) {
    for (c, summary) in calls {
        app.handle(ServiceEvent::Tool(ToolEvent::Started {
            call: (*c).clone(),
            summary: (*summary).into(),
            now_ms: 0,
        }));
    }
}

const SPILL: &str = "/home/ada/.local/share/strata/spill/01930000-0000-7000-8000-000000000001/call_2.txt";

/// Two rounds that ended every way a call can end.
fn history() -> (Vec<Message>, Vec<(ToolCall, &'static str)>) {
    let c1 = call("call_1", "read_file", json!({"path": "src/parser.rs"}));
    let c2 = call(
        "call_2",
        "grep",
        json!({"pattern": "fn parse_block", "path": "src"}),
    );
    let c3 = call("call_3", "shell", json!({"command": "cargo test parser"}));
    let c4 = call(
        "call_4",
        "edit_file",
        json!({"path": "src/parser.rs", "old_string": "a", "new_string": "b"}),
    );
    let c5 = call("call_5", "shell", json!({"command": "cargo test"}));
    let c6 = call(
        "call_6",
        "write_file",
        json!({"path": "NOTES.md", "content": "x"}),
    );
    let mut grep = result(
        "call_2",
        "grep",
        ToolStatus::Ok,
        "src/parser.rs:42:fn parse_block(&mut self) -> Result<Block> {\nsrc/parser.rs:97:    let inner = self.parse_block()?;\nsrc/lexer.rs:12:// parse_block is called per brace\n[… 12,480 lines cut; the whole output is in the spill file]",
        12_480,
        Some(240),
    );
    if let Some(meta) = grep.tool.as_mut() {
        meta.truncated = true;
        meta.previewed = true;
        meta.spilled_to = Some(SPILL.into());
        meta.output_chars = 312_480;
    }
    let messages = vec![
        msg(
            Role::User,
            "The parser fails on nested blocks; find out why and fix it.",
            16,
        ),
        reply(
            "I'll read the parser, search for the block rule and run its tests.",
            vec![c1.clone(), c2.clone(), c3.clone()],
        ),
        result(
            "call_1",
            "read_file",
            ToolStatus::Ok,
            "1\tuse crate::lexer::Token;\n2\t\n3\tpub struct Parser {",
            1_204,
            Some(12),
        ),
        grep,
        result(
            "call_3",
            "shell",
            ToolStatus::Error,
            "exit code 101\n---- parser::tests::nested stdout ----\nthread 'parser::tests::nested' panicked at src/parser.rs:98",
            310,
            Some(8_400),
        ),
        reply(
            "The nested case recurses without consuming the closing brace.",
            vec![c4.clone(), c5.clone(), c6.clone()],
        ),
        result(
            "call_4",
            "edit_file",
            ToolStatus::Denied,
            "Denied by the user: use a loop instead of recursion. To allow edit_file, answer the approval with a or add it to [tools] allow.",
            38,
            None,
        ),
        result(
            "call_5",
            "shell",
            ToolStatus::Interrupted,
            "Interrupted: the turn was cancelled while this call ran.",
            12,
            Some(125_000),
        ),
        result(
            "call_6",
            "write_file",
            ToolStatus::NotRun,
            "Not run: the turn reached its limit of 50 tool rounds.",
            14,
            None,
        ),
    ];
    let summaries = vec![
        (c1, "src/parser.rs"),
        (c2, "/fn parse_block/ in src"),
        (c3, "cargo test parser"),
        (c4, "src/parser.rs"),
        (c5, "cargo test"),
        (c6, "NOTES.md"),
    ];
    (messages, summaries)
}

/// An app showing [`history`], the first result pruned by the pipeline.
fn history_app(w: u16, h: u16) -> App {
    let (messages, calls) = history();
    let mut ctx = context(&messages);
    ctx.report = vec![ReportEntry {
        message_id: messages[2].id,
        action: Action::Pruned,
        tokens_before: 1_204,
        tokens_after: 0,
    }];
    let mut app = app_with(w, h, messages, Some(ctx));
    let calls: Vec<(&ToolCall, &str)> = calls.iter().map(|(c, s)| (c, *s)).collect();
    summaries(&mut app, &calls);
    app
}

#[test]
fn tool_blocks_collapsed_with_every_status_and_badge() {
    for (w, h) in SIZES {
        let app = history_app(w, h);
        let screen = draw(&app, w, h);
        insta::assert_snapshot!(format!("tools_collapsed_{w}x{h}"), screen);
        // Results fill their blocks and are not messages of their own.
        assert!(!screen.contains("tool  "), "{screen}");
    }
}

/// A `shell` block says where its command ran: in the sandbox, with or
/// without the network, or outside it.
#[test]
fn shell_blocks_say_where_the_command_ran() {
    let runs = [
        (
            "call_1",
            "workspace-write",
            false,
            "sandboxed (workspace, no network)",
        ),
        (
            "call_2",
            "workspace-write",
            true,
            "sandboxed (workspace, network on)",
        ),
        ("call_3", "off", false, "outside the sandbox"),
        ("call_4", "read-only", false, "sandboxed (read-only, no network)"),
    ];
    let calls: Vec<ToolCall> = runs
        .iter()
        .map(|(id, ..)| call(id, "shell", json!({"command": "ls"})))
        .collect();
    let mut messages = vec![
        msg(Role::User, "list the files", 4),
        reply("Listing.", calls.clone()),
    ];
    for (id, label, network, _) in runs {
        let mut m = result(id, "shell", ToolStatus::Ok, "a.txt", 3, Some(5));
        if let Some(meta) = m.tool.as_mut() {
            meta.sandbox = Some(label.into());
            meta.network = network;
        }
        messages.push(m);
    }
    let ctx = context(&messages);
    let app = app_with(120, 36, messages, Some(ctx));
    let screen = draw(&app, 120, 36);
    for (.., words) in runs {
        assert_eq!(screen.matches(words).count(), 1, "{words}:\n{screen}");
    }
}

#[test]
fn a_selected_block_expands_to_its_result_and_collapses() {
    for (w, h) in SIZES {
        let mut app = history_app(w, h);
        let collapsed = draw(&app, w, h);
        assert!(!collapsed.contains("src/lexer.rs:12"));
        app.handle(shift_tab());
        // Newest first: not run, interrupted, denied, error, then the grep.
        for _ in 0..4 {
            app.handle(key(KeyCode::Up));
        }
        app.handle(key(KeyCode::Enter));
        let screen = draw(&app, w, h);
        assert!(screen.contains("src/lexer.rs:12"), "{screen}");
        assert!(screen.contains("312,480 characters"), "{screen}");
        insta::assert_snapshot!(format!("tools_expanded_{w}x{h}"), screen);
        app.handle(key(KeyCode::Enter));
        assert!(!draw(&app, w, h).contains("src/lexer.rs:12"));
    }
}

#[test]
fn selection_moves_between_blocks_and_gives_the_keys_back() {
    let mut app = history_app(120, 36);
    draw(&app, 120, 36);
    assert!(app.handle(shift_tab()).is_empty());
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("(Enter expands)"), "{screen}");
    assert!(screen.contains("↑↓ select"), "{screen}");
    // Up stops at the oldest block; Enter expands rather than sends.
    for _ in 0..10 {
        app.handle(key(KeyCode::Up));
    }
    assert!(app.handle(key(KeyCode::Enter)).is_empty());
    assert!(draw(&app, 120, 36).contains("pub struct Parser {"));
    // Esc gives the keys back; Enter then sends as always.
    app.handle(key(KeyCode::Esc));
    assert!(!draw(&app, 120, 36).contains("(Enter "));
    type_text(&mut app, "thanks");
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        vec![
            Effect::Op(Op::RememberInput("thanks".into())),
            Effect::send("thanks".into())
        ]
    );
    // Typing while the blocks are selected goes to the composer.
    app.handle(ServiceEvent::TurnDone {
        status: MessageStatus::Complete,
    });
    app.handle(shift_tab());
    type_text(&mut app, "ok");
    assert_eq!(app.draft(), "ok");
    assert!(!draw(&app, 120, 36).contains("(Enter "));
}

#[test]
fn selecting_an_old_block_scrolls_it_into_view() {
    let mut messages = vec![msg(Role::User, "read them all", 4)];
    for i in 0..30 {
        let id = format!("call_{i}");
        let c = call(&id, "read_file", json!({"path": format!("src/file_{i}.rs")}));
        messages.push(reply(&format!("Reading file {i}."), vec![c]));
        messages.push(result(
            &id,
            "read_file",
            ToolStatus::Ok,
            "1\tfn main() {}",
            20,
            Some(3),
        ));
    }
    let mut app = app_with(80, 24, messages, None);
    assert!(!draw(&app, 80, 24).contains("Reading file 0."));
    app.handle(shift_tab());
    for _ in 0..29 {
        app.handle(key(KeyCode::Up));
    }
    let screen = draw(&app, 80, 24);
    let first = screen.lines().nth(1).unwrap();
    assert!(
        first.contains("(Enter expands)"),
        "the selected block is the top row: {screen}"
    );
    assert!(screen.contains("Reading file 1."), "{screen}");
    assert!(!screen.contains("Reading file 29."), "{screen}");
    // Back down to the newest: the view follows.
    for _ in 0..29 {
        app.handle(key(KeyCode::Down));
    }
    assert!(draw(&app, 80, 24).contains("Reading file 29."));
}

#[test]
fn without_tool_calls_the_select_key_says_so() {
    let mut app = app_with(80, 24, vec![msg(Role::User, "hi", 1)], None);
    app.handle(shift_tab());
    assert!(app.notice().unwrap().text.contains("no tool calls"));
    type_text(&mut app, "x");
    assert_eq!(app.draft(), "x");
}

#[test]
fn a_running_round_shows_elapsed_time_and_the_live_tail() {
    for (w, h) in SIZES {
        let (mut app, _) = running_app(w, h);
        let screen = draw(&app, w, h);
        assert!(screen.contains("running 12s"), "{screen}");
        assert!(screen.contains("test lexer::tests::unicode ..."), "{screen}");
        insta::assert_snapshot!(format!("tools_running_{w}x{h}"), screen);
        // Expanded, the block shows the whole tail.
        app.handle(shift_tab());
        app.handle(key(KeyCode::Up));
        app.handle(key(KeyCode::Up));
        app.handle(key(KeyCode::Enter));
        let screen = draw(&app, w, h);
        assert!(screen.contains("test parser::tests::flat ... ok"), "{screen}");
    }
}

#[test]
fn approval_overlay_for_a_command_and_for_an_edit() {
    for (w, h) in SIZES {
        let app = asking(w, h, shell_request());
        let screen = draw(&app, w, h);
        assert!(
            screen.contains("strata does not confine this command"),
            "{screen}"
        );
        assert!(screen.contains("shell:cargo test"), "{screen}");
        insta::assert_snapshot!(format!("approval_shell_{w}x{h}"), screen);
        let app = asking(w, h, edit_request());
        let screen = draw(&app, w, h);
        assert!(
            screen.contains("+        let mut inner = Vec::new();"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("approval_edit_{w}x{h}"), screen);
    }
}

#[test]
fn approval_reason_is_typed_on_one_line() {
    let mut app = asking(80, 24, shell_request());
    app.handle(key(KeyCode::Char('n')));
    type_text(&mut app, "use cargo nextest");
    insta::assert_snapshot!("approval_reason_80x24", draw(&app, 80, 24));
}

#[test]
fn keys_answer_the_approval() {
    let mut app = asking(80, 24, shell_request());
    assert_eq!(
        app.handle(key(KeyCode::Char('y'))),
        answer("run_3", Approval::Once)
    );
    assert!(app.overlay().is_none());

    let mut app = asking(80, 24, shell_request());
    assert_eq!(
        app.handle(key(KeyCode::Char('a'))),
        answer("run_3", Approval::UntilExit)
    );

    let mut app = asking(80, 24, shell_request());
    assert!(app.handle(key(KeyCode::Char('n'))).is_empty());
    assert!(
        type_text(&mut app, "use a loop").is_empty(),
        "letters type the reason"
    );
    app.handle(key(KeyCode::Backspace));
    app.handle(AppEvent::Paste("p\ninstead".into()));
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        answer(
            "run_3",
            Approval::Deny {
                reason: Some("use a loop instead".into())
            }
        )
    );

    // An empty reason denies without one; Esc in the reason goes back.
    let mut app = asking(80, 24, shell_request());
    app.handle(key(KeyCode::Char('n')));
    app.handle(key(KeyCode::Esc));
    assert!(matches!(app.overlay(), Some(Overlay::Approval(a)) if a.reason.is_none()));
    app.handle(key(KeyCode::Char('n')));
    assert_eq!(
        app.handle(key(KeyCode::Enter)),
        answer("run_3", Approval::Deny { reason: None })
    );

    let mut app = asking(80, 24, shell_request());
    assert_eq!(
        app.handle(key(KeyCode::Esc)),
        answer("run_3", Approval::Deny { reason: None })
    );
    // Other keys do nothing; the overlay waits.
    let mut app = asking(80, 24, shell_request());
    assert!(app.handle(key(KeyCode::Enter)).is_empty());
    assert!(app.handle(key(KeyCode::Char('x'))).is_empty());
    assert!(matches!(app.overlay(), Some(Overlay::Approval(_))));
}

#[test]
fn a_denied_call_reads_denied_before_its_result_arrives() {
    let mut app = asking(120, 36, edit_request());
    assert!(draw(&app, 120, 36).contains("waiting for approval"));
    app.handle(key(KeyCode::Esc));
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("⊘ denied"), "{screen}");
}

#[test]
fn ctrl_c_closes_the_approval_and_cancels_the_turn() {
    let mut app = asking(80, 24, shell_request());
    assert_eq!(app.handle(ctrl('c')), vec![Effect::Op(Op::Cancel)]);
    assert!(app.overlay().is_none());
}

#[test]
fn the_end_of_the_turn_closes_an_open_approval() {
    let mut app = asking(80, 24, shell_request());
    app.handle(ServiceEvent::TurnDone {
        status: MessageStatus::Interrupted,
    });
    assert!(app.overlay().is_none());
}

#[test]
fn approvals_come_one_at_a_time_and_replace_other_overlays() {
    let (mut app, _) = running_app(80, 24);
    app.handle(AppEvent::Key(KeyEvent::new(KeyCode::F(1), KeyModifiers::NONE)));
    assert!(matches!(app.overlay(), Some(Overlay::Help { .. })));
    app.handle(ServiceEvent::Tool(ToolEvent::ApprovalNeeded(Box::new(
        shell_request(),
    ))));
    let mut second = edit_request();
    second.call.id = "run_4".into();
    app.handle(ServiceEvent::Tool(ToolEvent::ApprovalNeeded(Box::new(second))));
    app.handle(read_the_question(&app));
    assert_eq!(
        app.handle(key(KeyCode::Char('y'))),
        answer("run_3", Approval::Once)
    );
    assert!(
        matches!(app.overlay(), Some(Overlay::Approval(a)) if a.request.call.id == "run_4"),
        "the second request shows next"
    );
    // The next question is new: a key at once answers nothing.
    assert!(app.handle(key(KeyCode::Char('a'))).is_empty());
    app.handle(read_the_question(&app));
    assert_eq!(
        app.handle(key(KeyCode::Char('a'))),
        answer("run_4", Approval::UntilExit)
    );
    assert!(app.overlay().is_none());
}

#[test]
fn tools_and_undo_edit_commands() {
    let mut app = app_with(80, 24, Vec::new(), None);
    assert_eq!(
        entered(&mut app, "/tools"),
        vec![Effect::Op(Op::Run(Command::Tools))]
    );
    app.handle(ServiceEvent::ToolList(Listing {
        head: "tools (schema tokens)".into(),
        rows: "read_file 118 · list_dir 52 · glob 64 · grep 131 · write_file 77 · edit_file 142 · shell 156 · memory 58 · skill_view 49 · current_time 31"
            .split(" · ")
            .map(str::to_owned)
            .collect(),
    }));
    let screen = draw(&app, 80, 24);
    assert!(matches!(app.overlay(), Some(Overlay::Tools { .. })));
    insta::assert_snapshot!("tools_list_80x24", screen);
    app.handle(key(KeyCode::Esc));
    // Later notices go to the status bar again.
    app.handle(ServiceEvent::Notice("shell is off for this session".into()));
    assert!(app.overlay().is_none());

    assert_eq!(
        entered(&mut app, "/tools off shell"),
        vec![Effect::Op(Op::Run(Command::ToggleTool {
            name: "shell".into(),
            on: false
        }))]
    );
    assert_eq!(
        entered(&mut app, "/tools on shell"),
        vec![Effect::Op(Op::Run(Command::ToggleTool {
            name: "shell".into(),
            on: true
        }))]
    );
    assert!(entered(&mut app, "/tools shell").is_empty());
    assert!(app.notice().unwrap().error);
    assert_eq!(
        entered(&mut app, "/undo-edit"),
        vec![Effect::Op(Op::Run(Command::UndoEdit))]
    );
}

#[test]
fn the_mcp_command_lists_switches_and_accepts() {
    use strata::runtime::service::McpAction;
    let mut app = app_with(80, 24, Vec::new(), None);
    assert_eq!(
        entered(&mut app, "/mcp"),
        vec![Effect::Op(Op::Run(Command::Mcp(McpAction::List)))]
    );
    app.handle(ServiceEvent::McpList(Listing {
        head: "MCP servers (tokens per request)".into(),
        rows: [
            "builtin  builtin  13 tools  1890 tokens",
            "time  ready  2 tools  420 tokens, 2 deferred",
            "    time__convert_time  260  deferred",
            "    time__get_current_time  160  deferred",
            "deferral saves 2313 tokens per request",
        ]
        .map(str::to_owned)
        .to_vec(),
    }));
    let screen = draw(&app, 80, 24);
    assert!(matches!(app.overlay(), Some(Overlay::Tools { .. })));
    insta::assert_snapshot!("mcp_list_80x24", screen);
    app.handle(key(KeyCode::Esc));
    for (typed, action) in [
        (
            "/mcp off time",
            McpAction::Switch {
                server: "time".into(),
                on: false,
            },
        ),
        (
            "/mcp on time",
            McpAction::Switch {
                server: "time".into(),
                on: true,
            },
        ),
        ("/mcp accept", McpAction::Accept),
        ("/mcp decline", McpAction::Decline),
    ] {
        assert_eq!(
            entered(&mut app, typed),
            vec![Effect::Op(Op::Run(Command::Mcp(action)))],
            "{typed}"
        );
        // Their answers are status-bar notices, not the list overlay.
        app.handle(ServiceEvent::Notice("done".into()));
        assert!(app.overlay().is_none(), "{typed}");
    }
    assert!(entered(&mut app, "/mcp time").is_empty());
    assert!(app.notice().unwrap().text.contains("/mcp takes nothing"));
}

#[test]
fn a_block_from_history_summarises_its_arguments() {
    let arguments = json!({"path": "src/lib.rs", "offset": 10, "limit": 20});
    let c = call("old_1", "read_file", arguments.clone());
    let app = app_with(
        120,
        36,
        vec![
            reply("", vec![c]),
            result("old_1", "read_file", ToolStatus::Ok, "10\tfn x() {}", 9, Some(4)),
        ],
        None,
    );
    let summary = strata::tooling::schema::summary("read_file", &arguments);
    assert_eq!(summary, "src/lib.rs:10+20", "path, offset and limit");
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("read_file src/lib.rs:10+20"), "{screen}");
    assert!(screen.contains("✓ ok · 4ms · 9 tok"), "{screen}");
}

#[test]
fn no_size_panics_with_tool_blocks_and_the_approval_open() {
    for (w, h) in (1..=130)
        .step_by(9)
        .flat_map(|w| (1..=14).step_by(3).map(move |h| (w, h)))
    {
        let mut app = history_app(w, h);
        app.handle(shift_tab());
        app.handle(key(KeyCode::Enter));
        let _ = draw(&app, w, h);
        let app = asking(w, h, edit_request());
        let _ = draw(&app, w, h);
    }
}

/// An OpenAI event stream whose reply is one call of `name`.
fn sse_call(id: &str, name: &str, arguments: &str) -> String {
    let head = json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [
        {"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}, "finish_reason": null}]});
    let args = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": arguments}}]}, "finish_reason": null}]});
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    format!("data: {head}\n\ndata: {args}\n\ndata: {end}\n\ndata: [DONE]\n\n")
}

/// An OpenAI event stream whose reply is `text`.
fn sse_text(text: &str) -> String {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    format!("data: {chunk}\n\ndata: {end}\n\ndata: [DONE]\n\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handle_answers_an_approval_while_the_turn_waits() {
    use server::{Reply, Server};
    use std::time::Duration;
    // Runs once the built-in tool set offers `shell` (until then the call
    // is answered as an unknown tool and nothing asks).
    if strata::tooling::schema::builtin()
        .iter()
        .all(|t| t.name != "shell")
    {
        return;
    }
    let server = Server::start(vec![
        Reply::sse(sse_call("call_1", "shell", r#"{"command":"rm -rf target"}"#)),
        Reply::sse(sse_text("Understood, I will not delete it.")),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let config = strata::config::Config::parse(&format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n[tools]\nenabled = true\napproval = \"ask\"\n",
        server.base_url()
    ))
    .unwrap()
    .config;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let handle = strata::tui::open_session(
        strata::tui::Launch {
            paths: strata::config::Paths::under(home.path()),
            config,
            provider: None,
            model: None,
            prompt_mode: None,
            opening: strata::tui::Opening::New,
            cwd: ws.path().to_path_buf(),
            env: std::sync::Arc::new(|_: &str| None),
            interactive: true,
        },
        tx,
    );
    let mut app = App::new(strata::tui::KeyMap::default(), 120, 36);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut until = async |app: &mut App, what: &str, done: &dyn Fn(&App) -> bool| {
        while !done(app) {
            let e = tokio::time::timeout_at(deadline, rx.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "timed out waiting for {what}; notice: {:?}; last message: {:?}",
                        app.notice(),
                        app.messages().last()
                    )
                })
                .unwrap();
            for effect in app.handle(e) {
                crate::support::tui::apply(&handle, effect);
            }
        }
    };
    until(&mut app, "the connection", &|a| a.context().is_some()).await;
    for effect in type_text(&mut app, "clean the build") {
        crate::support::tui::apply(&handle, effect);
    }
    for effect in app.handle(key(KeyCode::Enter)) {
        crate::support::tui::apply(&handle, effect);
    }
    until(&mut app, "the approval", &|a| {
        matches!(a.overlay(), Some(Overlay::Approval(_)))
    })
    .await;
    app.handle(read_the_question(&app));
    assert!(draw(&app, 120, 36).contains("rm -rf target"));
    let mut effects = app.handle(key(KeyCode::Char('n')));
    effects.extend(type_text(&mut app, "keep the cache"));
    effects.extend(app.handle(key(KeyCode::Enter)));
    assert_eq!(
        effects,
        answer(
            "call_1",
            Approval::Deny {
                reason: Some("keep the cache".into())
            }
        )
    );
    for effect in effects {
        crate::support::tui::apply(&handle, effect);
    }
    until(&mut app, "the end of the turn", &|a| !a.is_busy()).await;
    let denied = app
        .messages()
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("call_1"))
        .unwrap();
    assert_eq!(denied.tool.as_ref().unwrap().status, ToolStatus::Denied);
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("⊘ denied"), "{screen}");
    assert!(screen.contains("Understood, I will not delete it."), "{screen}");
    let second = server.requests()[1].json();
    let tool = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["tool_call_id"], "call_1");
    assert!(
        tool["content"].as_str().unwrap().contains("keep the cache"),
        "{tool}"
    );
}

/// An expanded `edit_file` block draws its diff once, though its result
/// repeats it under the one-line outcome.
#[test]
fn an_expanded_edit_shows_its_diff_once() {
    let edit = call(
        "call_9",
        "edit_file",
        json!({"path": "src/parser.rs", "old_string": "recurse()", "new_string": "loop_once()"}),
    );
    let diff = "--- a/src/parser.rs\n+++ b/src/parser.rs\n@@ -1 +1 @@\n-recurse()\n+loop_once()\n";
    let messages = vec![
        msg(Role::User, "Fix the recursion.", 6),
        reply("Editing the parser.", vec![edit.clone()]),
        result(
            "call_9",
            "edit_file",
            ToolStatus::Ok,
            &format!("Edited `src/parser.rs`: replaced 1 occurrence.\n\n{diff}"),
            40,
            Some(3),
        ),
    ];
    let mut app = app_with(120, 36, messages, None);
    summaries(&mut app, &[(&edit, "src/parser.rs")]);
    app.handle(ServiceEvent::Tool(ToolEvent::Finished {
        tool_call_id: "call_9".into(),
        status: ToolStatus::Ok,
        diff: Some(diff.into()),
        now_ms: 0,
    }));
    draw(&app, 120, 36);
    app.handle(shift_tab());
    app.handle(key(KeyCode::Enter));
    let screen = draw(&app, 120, 36);
    assert_eq!(screen.matches("+loop_once()").count(), 1, "{screen}");
    assert_eq!(screen.matches("Edited `src/parser.rs`").count(), 1, "{screen}");
}

#[test]
fn a_call_answered_without_running_or_that_failed_says_so_before_the_round_ends() {
    let (mut app, _) = running_app(120, 36);
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("edit_file src/parser.rs  queued"), "{screen}");
    assert!(screen.contains("read_file Cargo.toml  ✓ finished"), "{screen}");
    // Refused by the policy (or found to fail): no result stored yet.
    app.handle(ServiceEvent::Tool(ToolEvent::Answered {
        tool_call_id: "run_3".into(),
        status: ToolStatus::Denied,
    }));
    // The shell command ran and failed.
    app.handle(ServiceEvent::Tool(ToolEvent::Finished {
        tool_call_id: "run_1".into(),
        status: ToolStatus::Error,
        diff: None,
        now_ms: 112_000,
    }));
    let screen = draw(&app, 120, 36);
    assert!(screen.contains("edit_file src/parser.rs  ⊘ denied"), "{screen}");
    assert!(screen.contains("shell cargo test --locked  ✗ error"), "{screen}");
    assert!(screen.contains("read_file Cargo.toml  ✓ finished"), "{screen}");
}

/// Some servers number calls the same way in every turn (`call_0`): each
/// block shows its own call's result, live and once read back.
#[test]
fn calls_that_reuse_an_earlier_turns_id_keep_their_own_results() {
    let first = call("call_0", "shell", json!({"command": "echo hi"}));
    let second = call(
        "call_0",
        "edit_file",
        json!({"path": "d.txt", "old_string": "x", "new_string": "y"}),
    );
    let messages = vec![
        msg(Role::User, "say hi", 4),
        reply("", vec![first.clone()]),
        result("call_0", "shell", ToolStatus::Ok, "hi", 2, Some(5)),
        reply("Said hi.", Vec::new()),
        msg(Role::User, "now edit d.txt", 6),
        reply("", vec![second.clone()]),
        result(
            "call_0",
            "edit_file",
            ToolStatus::Error,
            "`old_string` occurs 2 times in `d.txt`",
            12,
            Some(1),
        ),
        reply("It failed.", Vec::new()),
    ];
    let app = app_with(120, 36, messages, None);
    let screen = draw(&app, 120, 36);
    let shell = screen
        .lines()
        .find(|l| l.contains("▸ shell"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(shell.contains("✓ ok"), "{screen}");
    let edit = screen
        .lines()
        .find(|l| l.contains("▸ edit_file"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(edit.contains("✗ error"), "{screen}");
    assert_eq!(screen.matches("occurs 2 times").count(), 1, "{screen}");
}
