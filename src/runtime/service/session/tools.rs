//! The tool side of the open session: the conversation's tools and their
//! environment, approvals from the client, calls left without a result by
//! a killed process, `/tools` and `/undo-edit`.

use super::SessionService;
use crate::config::ModelChoice;
use crate::conversation::Conversation;
use crate::domain::{Message, Role, Session, ToolResultMeta, ToolStatus};
use crate::runtime::ApprovalAnswer;
use crate::runtime::service::{Listing, ServiceEvent};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Approvals granted until strata exits: they outlive a rebuilt
/// conversation (a reload, a compaction, another model). The session's
/// tools switched off and a server's refusal are stored with the session
/// (`Store::session_tools`).
#[derive(Debug, Default)]
pub(super) struct ToolPrefs {
    grants: Vec<crate::tooling::approval::Rule>,
}

/// How waiting for starting MCP servers ended.
enum Waited {
    Ready,
    Skipped,
    Cancelled,
}

/// What a call left without a result by a killed process is answered.
const ORPHAN_RESULT: &str = "Interrupted: strata stopped while this call ran; its output, if any, is lost.";

impl SessionService {
    /// Where the client sends its answers to [`ServiceEvent::ApprovalNeeded`].
    #[must_use]
    pub fn approvals(&self) -> UnboundedSender<ApprovalAnswer> {
        self.approvals.0.clone()
    }

    /// `conversation` with the session's tools, when tools are on for
    /// `choice` (the environment is kept for the turns).
    pub(super) fn with_tools(
        &mut self,
        conversation: Conversation,
        choice: &ModelChoice,
    ) -> anyhow::Result<Conversation> {
        let conversation = conversation.with_grants(self.tool_prefs.grants.clone());
        let (conversation, env) = self.runtime.offer_tools(conversation, choice, self.interactive)?;
        self.tool_env = env;
        Ok(conversation)
    }

    /// Keeps what the turn decided about tools (grants, a server's
    /// refusal) for conversations built later in this process.
    pub(super) fn keep_tool_prefs(&mut self) -> anyhow::Result<()> {
        let Some(conversation) = self.conversation.as_ref() else {
            return Ok(());
        };
        self.tool_prefs.grants = conversation.grants().to_vec();
        if conversation.tools().is_none()
            && self.tool_env.is_some()
            && let Some(why) = conversation.tools_off()
        {
            let id = conversation.session().id;
            let mut stored = self.runtime.store.session_tools(id)?;
            stored.refused = Some(why.to_owned());
            self.runtime.store.set_session_tools(id, &stored)?;
            self.tool_env = None;
        }
        Ok(())
    }

    /// Starts the config's MCP servers in the background when tools are
    /// on for the current model and some are configured, so they start
    /// while the user types (the first request waits for them in
    /// [`SessionService::start_mcp`]). Nothing happens once they started,
    /// or outside a tokio runtime (the first turn starts them then).
    pub(super) fn launch_mcp(&mut self) {
        if self.mcp.is_some() || self.mcp_launch.is_some() {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let Ok(choice) = self.choice() else {
            return;
        };
        if crate::runtime::tools_state(&self.runtime.config, &choice)
            .why_off
            .is_some()
        {
            return;
        }
        let root = self.mcp_root();
        // config.toml's servers and the workspace's accepted `.mcp.json`.
        let workspace = self.runtime.workspace_mcp(&root);
        if workspace.config.servers.is_empty() {
            return;
        }
        let env = |name: &str| (self.env)(name);
        self.mcp_launch = self.runtime.launch_mcp(&workspace.config, &root, &env);
    }

    /// Waits for the MCP servers still starting (the phase counts them;
    /// the client's skip signal sends without them) and settles their
    /// tools once, before the first turn creates or stores anything; a
    /// server that cannot start is reported once and left out.
    ///
    /// Returns `false` when `cancel` resolved while servers started
    /// (they keep starting; nothing was sent or stored).
    pub(super) async fn await_mcp(
        &mut self,
        cancel: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    ) -> bool {
        if self.mcp.is_some() {
            return true;
        }
        self.launch_mcp();
        let Some(mut launch) = self.mcp_launch.take() else {
            return true;
        };
        match self.wait_for_servers(&launch, cancel).await {
            Waited::Cancelled => {
                self.mcp_launch = Some(launch);
                return false;
            }
            Waited::Skipped => self.emit(ServiceEvent::Notice(
                "sent without the MCP servers still starting; their tools are not offered in this process"
                    .to_owned(),
            )),
            Waited::Ready => {}
        }
        launch.settle();
        for (name, why) in launch.unavailable() {
            // The turn goes on without it: news, not a failure.
            self.emit(ServiceEvent::Notice(format!(
                "MCP server {name} is unavailable: {why}"
            )));
        }
        for w in launch.warnings() {
            self.emit(ServiceEvent::Notice(format!("warning: {w}")));
        }
        self.mcp = Some(Arc::new(launch));
        true
    }

    /// Readies the session's MCP tools (config.toml's servers and the
    /// workspace's accepted `.mcp.json`, `Runtime::workspace_mcp`) for the
    /// open conversation's next request, once [`SessionService::await_mcp`]
    /// settled them: a changed tool list is taken again between turns, and
    /// each server's tools are offered after the built-in ones, deferred
    /// when they cost too much of the window.
    pub(super) fn start_mcp(&mut self) {
        let wanted =
            self.tool_env.is_some() && self.conversation.as_ref().is_some_and(|c| c.tools().is_some());
        if !wanted {
            return;
        }
        if self.mcp.is_none() {
            // No server (any more): none of their tools is offered.
            if let Some(conversation) = self.conversation.as_mut() {
                conversation.retain_tool_groups(|_| false);
                conversation.set_disclosure(None);
            }
            return;
        }
        if let Some(mcp) = self.mcp.as_mut()
            && mcp.changed_since_settle()
            && let Some(mcp) = Arc::get_mut(mcp)
        {
            for server in mcp.settle() {
                self.emit(ServiceEvent::Notice(format!(
                    "MCP server {server} changed its tools; the tools array changes with this request"
                )));
            }
        }
        self.keep_mcp_names();
        if let Err(e) = self.offer_mcp_tools() {
            self.emit(ServiceEvent::Error(format!(
                "the session's switched-off MCP tools could not be read ({e})"
            )));
        }
    }

    /// The open session's MCP tool names: the names it gave before (its
    /// store) stay on their tools, and the names given now are stored, so
    /// a name in its history keeps meaning one tool across a resume and a
    /// changed tool list.
    fn keep_mcp_names(&mut self) {
        let (Some(mcp), Some(conversation)) = (self.mcp.as_mut(), self.conversation.as_ref()) else {
            return;
        };
        let id = conversation.session().id;
        let kept = self.runtime.store.mcp_tool_names(id).and_then(|stored| {
            if let Some(mcp) = Arc::get_mut(mcp)
                && mcp.adopt_names(&stored)
            {
                tracing::info!(session = %id, "MCP tools take the names the session gave them");
            }
            // Only names the session has not kept yet are written.
            let known: std::collections::HashSet<(&str, &str)> =
                stored.iter().map(|(s, t, _)| (s.as_str(), t.as_str())).collect();
            let new: Vec<_> = mcp
                .tool_names()
                .into_iter()
                .filter(|(server, tool, _)| !known.contains(&(server.as_str(), tool.as_str())))
                .collect();
            if new.is_empty() {
                return Ok(0);
            }
            self.runtime.store.keep_mcp_tool_names(id, &new)
        });
        if let Err(e) = kept {
            self.emit(ServiceEvent::Error(format!(
                "the session's MCP tool names could not be read or kept ({e}); a tool that changed may be called by another's name"
            )));
        }
    }

    async fn wait_for_servers(
        &self,
        launch: &crate::runtime::McpSession,
        cancel: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    ) -> Waited {
        let sink = Arc::clone(&self.sink);
        let interactive = self.interactive;
        let mut shown = None;
        let wait = launch.wait(|ready, total| {
            if shown == Some(ready) || ready == total {
                return;
            }
            shown = Some(ready);
            sink(ServiceEvent::Phase(crate::conversation::Phase::StartingServers {
                ready,
                total,
            }));
            if !interactive && shown == Some(0) {
                sink(ServiceEvent::Progress(format!(
                    "waiting for {total} MCP server(s)…"
                )));
            }
        });
        let skip = self.skip.notified();
        tokio::select! {
            () = wait => Waited::Ready,
            () = skip => Waited::Skipped,
            () = cancel => Waited::Cancelled,
        }
    }

    /// Offers the settled MCP tools to the open conversation: each
    /// server's group added (or replaced when its list changed), the
    /// session's switched-off tools applied to them, disclosure planned
    /// and the catalog of deferred tools brought up to date.
    fn offer_mcp_tools(&mut self) -> anyhow::Result<()> {
        let (Some(mcp), Some(conversation)) = (self.mcp.as_ref(), self.conversation.as_mut()) else {
            return Ok(());
        };
        crate::runtime::offer_tools::offer_mcp_tools(conversation, mcp, &self.runtime.store)?;
        self.sync_catalog();
        Ok(())
    }

    /// Brings `tool_search`'s catalog up to the conversation's deferred
    /// tools (rebuilt only when they changed).
    pub(super) fn sync_catalog(&self) {
        let (Some(mcp), Some(conversation)) = (self.mcp.as_ref(), self.conversation.as_ref()) else {
            return;
        };
        let deferred = conversation.disclosure().map_or(&[][..], |p| p.deferred());
        mcp.defer(deferred);
        if let Some(plan) = conversation.disclosure()
            && !plan.deferred().is_empty()
        {
            tracing::info!(
                deferred = plan.deferred().len(),
                saved = plan.saving().saved_tokens(),
                "MCP tools deferred"
            );
        }
    }

    /// Stores an `interrupted` result for each call of the session's last
    /// reply that has none (a process killed while the tool ran).
    pub(super) fn answer_orphan_calls(&mut self, session: &Session) -> anyhow::Result<()> {
        let Some(rows) = self.rows.as_mut() else {
            return Ok(());
        };
        let active: Vec<Message> = rows
            .messages
            .iter()
            .filter(|m| m.archived_by.is_none())
            .cloned()
            .collect();
        let calls = crate::tooling::orphans::unanswered_calls(&active);
        for call in calls {
            let mut m = Message::new(session.id, Role::Tool, ORPHAN_RESULT, crate::runtime::now_ms());
            m.tool_call_id = Some(call.id.clone());
            m.tool = Some(ToolResultMeta {
                name: call.name.clone(),
                status: ToolStatus::Interrupted,
                truncated: false,
                previewed: false,
                spilled_to: None,
                output_chars: 0,
                duration_ms: None,
                sandbox: None,
                network: false,
            });
            self.runtime.store.append_message(&mut m)?;
            tracing::info!(session = %session.id, call = %call.id, "call without a result marked interrupted");
            rows.messages.push(m.clone());
            (self.sink)(ServiceEvent::Message(Box::new(m)));
        }
        Ok(())
    }
    /// `/tools`: the tools offered with their schema tokens, or why tools
    /// are off.
    pub(super) fn list_tools(&mut self) -> anyhow::Result<()> {
        let choice = self.choice()?;
        let Some(conversation) = self.conversation.as_ref() else {
            let state = crate::runtime::tools_state(&self.runtime.config, &choice);
            let line = match state.why_off {
                Some(why) => format!("tools are off: {why}"),
                None => "tools: send a message first; the session's tools are set up with its first request"
                    .to_owned(),
            };
            self.emit(ServiceEvent::ToolList(Listing {
                head: line,
                rows: Vec::new(),
            }));
            return Ok(());
        };
        let Some(tools) = conversation.tools() else {
            let why = conversation.tools_off().map_or_else(
                || {
                    crate::runtime::tools_state(&self.runtime.config, &choice)
                        .why_off
                        .unwrap_or_else(|| "they are off".to_owned())
                },
                str::to_owned,
            );
            self.emit(ServiceEvent::ToolList(Listing {
                head: format!("tools are off: {why}"),
                rows: Vec::new(),
            }));
            return Ok(());
        };
        let counter = conversation.counter();
        // What the request carries, then the deferred tools it reaches
        // through the bridges.
        let mut list: Vec<String> = tools
            .offered()
            .tokens(counter.as_ref())
            .into_iter()
            .map(|(name, tokens)| format!("{name} {tokens}"))
            .collect();
        if let Some(plan) = conversation.disclosure() {
            list.extend(
                plan.costs()
                    .iter()
                    .filter(|c| c.deferred)
                    .map(|c| format!("{} {} deferred", c.name, c.tokens)),
            );
        }
        // Switched-off tools are listed too, so they can be switched back on.
        list.extend(
            tools
                .set
                .specs()
                .iter()
                .filter(|e| !e.enabled)
                .map(|e| format!("{} off", e.spec.name)),
        );
        self.emit(ServiceEvent::ToolList(Listing {
            head: "tools (schema tokens)".to_owned(),
            rows: list,
        }));
        Ok(())
    }

    /// `/tools off NAME` and `/tools on NAME`.
    pub(super) fn toggle_tool(&mut self, name: &str, on: bool) -> anyhow::Result<()> {
        let Some(conversation) = self.conversation.as_mut() else {
            anyhow::bail!("no session is open; send a message first, then switch tools");
        };
        if !conversation.set_tool_enabled(name, on) {
            anyhow::bail!("there is no tool named '{name}' in this session; /tools lists them");
        }
        let id = conversation.session().id;
        let mut stored = self.runtime.store.session_tools(id)?;
        stored.disabled.retain(|n| n != name);
        if !on {
            stored.disabled.push(name.to_owned());
            stored.disabled.sort();
        }
        self.runtime.store.set_session_tools(id, &stored)?;
        let state = if on { "on" } else { "off" };
        self.emit(ServiceEvent::Notice(format!(
            "{name} is {state} for this session; the system prompt is unchanged"
        )));
        if let Ok(choice) = self.choice()
            && let Some(context) = self.context_now(&choice)
        {
            self.emit(ServiceEvent::Context(Box::new(context)));
        }
        Ok(())
    }

    /// `/undo-edit`: restores the file the session's latest `write_file`
    /// or `edit_file` changed, when it is unchanged since.
    pub(super) fn undo_edit(&mut self) -> anyhow::Result<()> {
        let Some(session) = self.session.clone() else {
            anyhow::bail!("no session is open; there is no edit to undo");
        };
        let line = self.runtime.undo_edit(&session)?;
        // The model's history still shows its change: it learns of the undo
        // with the next message.
        self.parts.push((
            format!("[The user undid the model's last file change with /undo-edit: {line} Read the file again before changing it.]"),
            Some(1),
        ));
        self.emit(ServiceEvent::Notice(line));
        Ok(())
    }
}
