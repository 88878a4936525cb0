//! The tool calls of a turn, executed: every [`Effect::RunTool`] becomes a
//! task of the `tools` adapter (the core decided which run together), its
//! live output goes to the client, its file change is stored for undo, and
//! its outcome goes back to the conversation as [`Event::ToolFinished`].
//! Approvals are asked of the client and answered through
//! [`ApprovalAnswer`]s. Cancelling drops the tasks: a running `shell`
//! command's process group is killed with them.
//!
//! [`Effect::RunTool`]: crate::conversation::Effect::RunTool
//! [`Event::ToolFinished`]: crate::conversation::Event::ToolFinished

use crate::conversation::{Approval, ToolRun};
use crate::domain::ToolCall;
use crate::tools::{ToolEnv, ToolOutput};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// The user's answer to an approval the turn asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalAnswer {
    /// The call it answers.
    pub tool_call_id: String,
    /// The answer.
    pub approval: Approval,
}

/// What a turn needs to run tools: the session's tool environment and,
/// when someone can answer, the approvals channel.
pub struct TurnTools<'a> {
    /// The session's tool environment.
    pub env: Arc<ToolEnv>,
    /// Answers to approvals; `None` for headless runs (a call that would
    /// ask is denied there, which the core's policy already ensures).
    pub approvals: Option<&'a mut mpsc::UnboundedReceiver<ApprovalAnswer>>,
    /// The session's MCP servers, when it has any.
    pub mcp: Option<Arc<super::McpSession>>,
}

/// A finished call.
pub(super) struct Finished {
    pub call: ToolCall,
    pub output: ToolOutput,
    pub duration_ms: u64,
}

impl Finished {
    /// The outcome as the core takes it.
    pub(super) fn run(&self) -> ToolRun {
        ToolRun {
            status: self.output.status,
            output: self.output.output.clone(),
            paged: self.output.paged,
            duration_ms: self.duration_ms,
            sandbox: self.output.sandbox,
        }
    }
}

/// The calls running now.
pub(super) type Running = FuturesUnordered<BoxFuture<'static, Finished>>;

/// A progress line of a running call: `(tool_call_id, text)`.
pub(super) type ProgressLine = (String, String);

/// Starts `call` on the adapter that has it: an MCP server for its
/// `server__tool` names, the built-in handlers otherwise.
pub(super) fn start(
    env: Arc<ToolEnv>,
    mcp: Option<Arc<super::McpSession>>,
    call: ToolCall,
    arguments: serde_json::Value,
    progress: mpsc::UnboundedSender<ProgressLine>,
) -> BoxFuture<'static, Finished> {
    Box::pin(async move {
        let started = Instant::now();
        let id = call.id.clone();
        let report: crate::tools::Progress = Arc::new(move |line: &str| {
            let _ = progress.send((id.clone(), line.to_owned()));
        });
        let output = match mcp.filter(|m| m.handles(&call.name)) {
            Some(mcp) => mcp.call(&call.name, arguments, Arc::clone(&env), &call.id).await,
            None => crate::tools::run(env, call.id.clone(), call.name.clone(), arguments, report).await,
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if output.sandbox.map(|r| r.label) == Some(crate::tooling::sandbox::Label::Off) {
            tracing::warn!(
                call = %call.id,
                command = %call.arguments,
                "a shell command ran outside the sandbox"
            );
        }
        Finished {
            call,
            output,
            duration_ms,
        }
    })
}

/// The result of a call that cannot run because the turn has no tool
/// environment (tools were switched off while it was asked for).
pub(super) fn unavailable() -> ToolRun {
    ToolRun {
        status: crate::domain::ToolStatus::Error,
        output: crate::tooling::Output::whole("Tools are off in this session; answer without them."),
        paged: false,
        duration_ms: 0,
        sandbox: None,
    }
}
