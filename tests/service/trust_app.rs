//! Trust boundaries in the full-screen app (issue 24), driven with events
//! through the real driver, session service and store against the loopback
//! provider server: a message naming files outside the workspace (or a
//! credential inside it), typed or pasted, is not sent until the user
//! answers a question naming each resolved path — `y` attaches them once,
//! `n` sends without them, Esc sends nothing; a harmless `memory` note asks
//! first, showing the note and its file, and is stored with its origin; the
//! approval of an MCP tool says which rule made it ask.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::server;
use crate::support::tool_sse;
use crate::support::tui as tui_support;
use crate::support::tui::harness;

use crossterm::event::KeyCode;
use harness::{Harness, sse};
use server::{Reply, Server};
use strata::runtime::service::ApprovalRequest;
use strata::tooling::Access;
use strata::tui::{AppEvent, Overlay};
use tui_support::tools::{asking, call};
use tui_support::{draw, key, type_text};

const LINK_SECRET: &str = "LINK-SECRET-0815";
const ENV_SECRET: &str = "ENV-SECRET-4711";

/// The harness with a symbolic link out of its workspace (`link.txt`) and
/// an `.env` in it; the directory the link leads to is returned to keep.
fn world(h: &Harness) -> tempfile::TempDir {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("linked.txt"), format!("{LINK_SECRET}\n")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("linked.txt"), h._ws.path().join("link.txt")).unwrap();
    std::fs::write(h._ws.path().join(".env"), format!("TOKEN={ENV_SECRET}\n")).unwrap();
    outside
}

fn bodies(server: &Server) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_outside_is_asked_about_by_its_resolved_path_and_y_attaches_it_once() {
    let server = Server::start(vec![Reply::sse(sse(&["read"])), Reply::sse(sse(&["again"]))]).await;
    let mut h = Harness::start(&server);
    let outside = world(&h);
    h.until("the connection", |a| a.context().is_some()).await;
    let text = "compare @/etc/passwd with @link.txt and @.env";
    let effects = type_text(&mut h.app, text);
    h.run(effects);
    h.act(key(KeyCode::Enter));
    h.until("the question", |a| a.attach_question().is_some()).await;
    h.until("the turn to end", |a| !a.is_busy()).await;
    assert!(server.requests().is_empty(), "nothing is sent before the answer");
    assert_eq!(h.app.draft(), text, "the message is back in the composer");
    let lines = h.app.attach_question().unwrap();
    let linked = outside.path().join("linked.txt").canonicalize().unwrap();
    assert_eq!(
        lines[1..],
        [
            "@/etc/passwd: /etc/passwd is outside the workspace".to_owned(),
            format!(
                "@link.txt: it leads outside the workspace through a symbolic link, to {}",
                linked.display()
            ),
            format!(
                "@.env: {} looks like an environment file, which usually holds secrets",
                h._ws.path().join(".env").canonicalize().unwrap().display()
            ),
        ]
    );
    let screen = draw(&h.app, 120, 36);
    assert!(
        screen.contains(" attach ") && screen.contains("/etc/passwd is outside the workspace"),
        "{screen}"
    );
    assert!(
        screen.contains("y attaches once · n sends without · Esc edits"),
        "{screen}"
    );
    // A `y` typed as the box appeared (the start of "yes, and…") attaches
    // nothing and leaves the box open.
    h.act(key(KeyCode::Char('y')));
    assert!(h.app.attach_question().is_some(), "the box stays open");
    assert!(
        h.app.notice().is_some_and(|n| n.text.contains("answers nothing")),
        "{:?}",
        h.app.notice()
    );
    assert!(server.requests().is_empty());
    h.act(tui_support::read_the_question(&h.app));
    h.act(key(KeyCode::Char('y')));
    h.until("the reply", |a| !a.is_busy()).await;
    let sent = bodies(&server);
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0].contains("root:x:0:0") && sent[0].contains(LINK_SECRET) && sent[0].contains(ENV_SECRET),
        "attached this once"
    );
    // Once: the same mentions in the next message are asked about again.
    let effects = type_text(&mut h.app, "and @link.txt again");
    h.run(effects);
    h.act(key(KeyCode::Enter));
    h.until("the question", |a| a.attach_question().is_some()).await;
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn y_allows_nothing_while_the_terminal_is_too_small_to_show_every_file() {
    let server = Server::start(vec![Reply::sse(sse(&["read"]))]).await;
    let mut h = Harness::start(&server);
    let _outside = world(&h);
    h.until("the connection", |a| a.context().is_some()).await;
    let effects = type_text(&mut h.app, "x @/etc/passwd @link.txt @.env");
    h.run(effects);
    h.act(key(KeyCode::Enter));
    h.until("the question", |a| a.attach_question().is_some()).await;
    h.until("the turn to end", |a| !a.is_busy()).await;
    h.act(AppEvent::Resize {
        width: 40,
        height: 10,
    });
    let screen = draw(&h.app, 40, 10);
    assert!(
        !screen.contains("y attaches once"),
        "the box is cut short of its last file and keys: {screen}"
    );
    assert!(
        screen.contains("Too small to list them all:") && screen.contains("enlarge the terminal"),
        "the box says why y does nothing: {screen}"
    );
    h.act(tui_support::read_the_question(&h.app));
    h.act(key(KeyCode::Char('y')));
    assert!(h.app.attach_question().is_some(), "the question stays open");
    assert!(!h.app.is_busy(), "nothing was started");
    assert!(server.requests().is_empty());
    // Large enough to show them all, `y` attaches.
    h.act(AppEvent::Resize {
        width: 120,
        height: 36,
    });
    h.act(tui_support::read_the_question(&h.app));
    h.act(key(KeyCode::Char('y')));
    h.until("the reply", |a| !a.is_busy() && a.attach_question().is_none())
        .await;
    let sent = bodies(&server);
    assert_eq!(sent.len(), 1);
    assert!(sent[0].contains(ENV_SECRET), "attached once the box showed it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_mention_asks_too_esc_sends_nothing_and_n_sends_without_it() {
    let server = Server::start(vec![Reply::sse(sse(&["ok"]))]).await;
    let mut h = Harness::start(&server);
    let _outside = world(&h);
    h.until("the connection", |a| a.context().is_some()).await;
    h.act(AppEvent::Paste("a log line: failed reading @link.txt".into()));
    h.act(key(KeyCode::Enter));
    h.until("the question", |a| a.attach_question().is_some()).await;
    h.until("the turn to end", |a| !a.is_busy()).await;
    h.act(key(KeyCode::Esc));
    assert!(h.app.attach_question().is_none());
    assert!(h.app.notice().unwrap().text.contains("nothing was sent"));
    assert!(server.requests().is_empty());
    h.act(key(KeyCode::Enter));
    h.until("the question again", |a| a.attach_question().is_some())
        .await;
    h.until("the turn to end", |a| !a.is_busy()).await;
    h.act(tui_support::read_the_question(&h.app));
    h.act(key(KeyCode::Char('n')));
    h.until("the reply", |a| !a.is_busy()).await;
    let sent = bodies(&server);
    assert_eq!(sent.len(), 1);
    assert!(!sent[0].contains(LINK_SECRET), "{}", sent[0]);
    assert!(sent[0].contains("embedded=\\\"false\\\""), "{}", sent[0]);
    let said = h.app.notices_log().iter().any(|(n, _)| {
        n.contains("@link.txt was not attached")
            && n.contains("send the message again and confirm to attach it once")
    });
    assert!(said, "{:?}", h.app.notices_log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harmless_memory_note_asks_showing_the_note_and_its_file_and_keeps_its_origin() {
    let args = r#"{"text":"The user prefers tabs."}"#;
    let server = Server::with(move |n| match n {
        0 => Reply::sse(tool_sse::openai_calls(&[("call_m", "memory", args)])),
        _ => Reply::sse(sse(&["noted"])),
    })
    .await;
    let mut h = Harness::start(&server);
    h.until("the connection", |a| a.context().is_some()).await;
    let effects = type_text(&mut h.app, "remember that I like tabs");
    h.run(effects);
    h.act(key(KeyCode::Enter));
    h.until("the approval", |a| {
        matches!(a.overlay(), Some(Overlay::Approval(_)))
    })
    .await;
    let memory = h._home.path().join("MEMORY.md");
    assert!(!memory.exists(), "nothing stored before the answer");
    let screen = draw(&h.app, 120, 36);
    assert!(screen.contains("── note"), "{screen}");
    assert!(
        screen.contains("- The user prefers tabs. <!-- strata: session"),
        "{screen}"
    );
    assert!(
        screen.contains("MEMORY.md, which goes into the system prompt"),
        "{screen}"
    );
    h.act(tui_support::read_the_question(&h.app));
    h.act(key(KeyCode::Char('y')));
    h.until("the reply", |a| !a.is_busy()).await;
    let short = h.app.session().unwrap().id.short();
    assert_eq!(
        std::fs::read_to_string(&memory).unwrap(),
        format!("- The user prefers tabs. <!-- strata: session {short}, call call_m -->\n")
    );
}

#[test]
fn the_approval_of_an_mcp_tool_says_which_rule_made_it_ask() {
    let request = ApprovalRequest {
        call: call("call_e", "bad__echo", serde_json::json!({"text": "hi"})),
        summary: "text=hi".into(),
        detail: "{\n  \"text\": \"hi\"\n}".into(),
        access: Access::Run,
        grant: "bad__echo".into(),
        why: "Approved like shell because the MCP server `bad` is not trusted for its annotations (it says readOnlyHint: true); set [mcp.servers.bad] trust_annotations = true to believe them.".into(),
        sandbox: None,
        leaves_sandbox: false,
        grant_risky: false,
    };
    let app = asking(100, 30, request);
    let screen = draw(&app, 100, 30);
    assert!(screen.contains("runs in its MCP server"), "{screen}");
    assert!(screen.contains("not trusted for its annotations"), "{screen}");
    assert!(screen.contains("trust_annotations = true"), "{screen}");
}
