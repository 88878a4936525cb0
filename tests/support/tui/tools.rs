//! Fixtures for the tool tests of the full-screen app: calls, replies and
//! results, a turn running calls, and approval requests.

use super::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use strata::conversation::{Approval, Phase};
use strata::domain::{Message, Role, ToolCall, ToolResultMeta, ToolStatus};
use strata::runtime::ApprovalAnswer;
use strata::runtime::Op;
use strata::runtime::service::ServiceEvent;
use strata::runtime::service::{ApprovalRequest, ToolEvent};
use strata::tooling::Access;
use strata::tui::{App, AppEvent, Effect};

/// A call of `name` with `arguments`.
pub fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

/// An assistant reply making `calls`.
pub fn reply(text: &str, calls: Vec<ToolCall>) -> Message {
    let mut m = msg(Role::Assistant, text, 40);
    m.tool_calls = calls;
    m
}

/// The result message of call `id`.
pub fn result(
    id: &str,
    name: &str,
    status: ToolStatus,
    content: &str,
    tokens: u32,
    ms: Option<u64>,
) -> Message {
    let mut m = msg(Role::Tool, content, tokens);
    m.tool_call_id = Some(id.into());
    m.tool = Some(ToolResultMeta {
        name: name.into(),
        status,
        truncated: false,
        previewed: false,
        spilled_to: None,
        output_chars: content.chars().count() as u64,
        duration_ms: ms,
        sandbox: None,
        network: false,
    });
    m
}

/// Shift-Tab, the key that selects the tool blocks.
pub fn shift_tab() -> AppEvent {
    AppEvent::Key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT))
}

/// A turn running three calls: a shell command printing, a read that
/// finished (its result comes with the round), an edit waiting its turn.
pub fn running_app(w: u16, h: u16) -> (App, Vec<ToolCall>) {
    let mut app = app_with(w, h, vec![msg(Role::User, "Fix the parser", 4)], None);
    app.handle(AppEvent::Tick { now_ms: 100_000 });
    type_text(&mut app, "Run the tests and the linter");
    app.handle(key(KeyCode::Enter));
    app.handle(ServiceEvent::Message(Box::new(msg(
        Role::User,
        "Run the tests and the linter",
        8,
    ))));
    let calls = vec![
        call("run_1", "shell", json!({"command": "cargo test --locked"})),
        call("run_2", "read_file", json!({"path": "Cargo.toml"})),
        call("run_3", "edit_file", json!({"path": "src/parser.rs"})),
    ];
    app.handle(ServiceEvent::Message(Box::new(reply(
        "Running the suite while I read the manifest.",
        calls.clone(),
    ))));
    app.handle(ServiceEvent::Phase(Phase::RunningTool {
        name: "shell".into(),
        others: 1,
    }));
    for (c, summary) in [(&calls[0], "cargo test --locked"), (&calls[1], "Cargo.toml")] {
        app.handle(ServiceEvent::Tool(ToolEvent::Started {
            call: c.clone(),
            summary: summary.into(),
            now_ms: 100_000,
        }));
    }
    app.handle(ServiceEvent::Tool(ToolEvent::Progress {
        tool_call_id: "run_1".into(),
        tail: "test parser::tests::flat ... ok\ntest parser::tests::nested ... ok\ntest lexer::tests::unicode ...".into(),
    }));
    app.handle(ServiceEvent::Tool(ToolEvent::Finished {
        tool_call_id: "run_2".into(),
        status: strata::domain::ToolStatus::Ok,
        diff: None,
        now_ms: 100_030,
    }));
    app.handle(AppEvent::Tick { now_ms: 112_400 });
    (app, calls)
}

/// An approval request for a shell command.
pub fn shell_request() -> ApprovalRequest {
    let command = "cargo test --locked && git status --short";
    ApprovalRequest {
        call: call("run_3", "shell", json!({"command": command})),
        summary: command.into(),
        detail: command.into(),
        access: Access::Run,
        grant: "shell:cargo test".into(),
        why: String::new(),
        sandbox: None,
        leaves_sandbox: false,
        grant_risky: false,
    }
}

/// An approval request for an edit of `src/parser.rs`, its detail the
/// unified diff the service sends.
pub fn edit_request() -> ApprovalRequest {
    ApprovalRequest {
        call: call("run_3", "edit_file", json!({"path": "src/parser.rs"})),
        summary: "src/parser.rs".into(),
        detail: "--- a/src/parser.rs\n+++ b/src/parser.rs\n@@ -95,7 +95,9 @@\n     fn parse_block(&mut self) -> Result<Block> {\n         self.expect(Token::LBrace)?;\n-        let inner = self.parse_block()?;\n+        let mut inner = Vec::new();\n+        while !self.at(Token::RBrace) {\n+            inner.push(self.parse_item()?);\n+        }\n         self.expect(Token::RBrace)?;\n".into(),
        access: Access::Write,
        grant: "edit_file".into(),
        why: String::new(),
        sandbox: None,
        leaves_sandbox: false,
        grant_risky: false,
    }
}

/// [`running_app`] with `request` waiting for approval.
pub fn asking(w: u16, h: u16, request: ApprovalRequest) -> App {
    let (mut app, _) = running_app(w, h);
    app.handle(ServiceEvent::Phase(Phase::AwaitingApproval {
        name: request.call.name.clone(),
    }));
    app.handle(ServiceEvent::Tool(ToolEvent::ApprovalNeeded(Box::new(request))));
    let read = super::read_the_question(&app);
    app.handle(read);
    app
}

/// The effect of answering call `id` with `approval`.
pub fn answer(id: &str, approval: Approval) -> Vec<Effect> {
    vec![Effect::Op(Op::Approve(ApprovalAnswer {
        tool_call_id: id.into(),
        approval,
    }))]
}
