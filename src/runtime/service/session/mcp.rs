//! `/mcp` in the app: the session's MCP servers with their status, tools
//! and tokens; a server switched off or on for the session; the
//! workspace's `.mcp.json` accepted or declined (its servers start at once
//! when accepted); and the sentence that says a `.mcp.json` awaits a
//! decision when a session opens.

use super::SessionService;
use crate::runtime::service::{Listing, ServiceEvent};
use std::path::PathBuf;

/// What `/mcp` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpAction {
    /// List the servers, their tools and tokens.
    List,
    /// Switch every tool of a server on or off for the session.
    Switch {
        /// The server.
        server: String,
        /// On or off.
        on: bool,
    },
    /// Accept the workspace's `.mcp.json`.
    Accept,
    /// Decline it.
    Decline,
}

/// `text` shown, not acted on (a `.mcp.json` is the workspace's, not the
/// user's: its text must not drive the terminal).
fn printable(text: &str) -> String {
    crate::text::visible(text).into_owned()
}

impl SessionService {
    /// The workspace root the session's servers start in.
    pub(super) fn mcp_root(&self) -> PathBuf {
        self.session.as_ref().map_or_else(
            || crate::workspace::workspace_root(&self.cwd),
            |s| PathBuf::from(&s.workspace),
        )
    }

    /// Starts the workspace's servers again (the set changed: a `.mcp.json`
    /// accepted or declined).
    fn relaunch_mcp(&mut self) {
        self.mcp = None;
        self.mcp_launch = None;
        self.launch_mcp();
        self.mcp_launch = self.mcp_launch.take().map(crate::runtime::McpSession::relaunched);
    }

    /// Says once per opening when the workspace's `.mcp.json` awaits a
    /// decision, and any warning about it.
    pub(super) fn announce_mcp_json(&self) {
        let workspace = self.runtime.workspace_mcp(&self.mcp_root());
        if let Some(pending) = workspace.pending {
            self.emit(ServiceEvent::Notice(printable(&pending.message)));
        }
        for w in workspace.warnings {
            self.emit(ServiceEvent::Notice(format!("warning: {}", printable(&w))));
        }
    }

    /// Runs `/mcp`.
    pub(super) fn mcp_command(&mut self, action: McpAction) -> anyhow::Result<()> {
        match action {
            McpAction::List => {
                let listing = self.mcp_listing();
                self.emit(ServiceEvent::McpList(listing));
            }
            McpAction::Switch { server, on } => self.switch_server(&server, on)?,
            McpAction::Accept => {
                let line = self
                    .runtime
                    .accept_mcp_json(&self.mcp_root())
                    .map_err(|e| anyhow::anyhow!(printable(&e)))?;
                // The accepted servers start now; the next request waits for them.
                self.relaunch_mcp();
                self.emit(ServiceEvent::Notice(printable(&line)));
            }
            McpAction::Decline => {
                let line = self
                    .runtime
                    .decline_mcp_json(&self.mcp_root())
                    .map_err(|e| anyhow::anyhow!(printable(&e)))?;
                // Servers of the file that run stop; the next request goes
                // without their tools.
                let running = self.mcp.is_some() || self.mcp_launch.is_some();
                if running {
                    self.relaunch_mcp();
                }
                self.emit(ServiceEvent::Notice(printable(&line)));
            }
        }
        Ok(())
    }

    /// `/mcp`'s answer: each server, then each of its tools, a row each.
    fn mcp_listing(&self) -> Listing {
        let listing = |head: &str, rows: Vec<String>| Listing {
            head: head.to_owned(),
            rows,
        };
        let workspace = self.runtime.workspace_mcp(&self.mcp_root());
        let mut items: Vec<String> = Vec::new();
        if let Some(pending) = &workspace.pending {
            items.push(printable(&pending.message));
        }
        if workspace.config.servers.is_empty() {
            items.push(
                "no MCP servers are configured; add one with strata mcp add NAME -- COMMAND ARGS…".to_owned(),
            );
            return listing("MCP servers", items);
        }
        let Some(mcp) = self.mcp.as_ref() else {
            match &self.mcp_launch {
                // Started with the session: their tools go out with the
                // first request.
                Some(launch) => {
                    for s in launch.states() {
                        let why = s.why.as_deref().map_or_else(String::new, |w| format!(": {w}"));
                        items.push(format!("{}  {}{why}", s.name, s.status));
                    }
                    items.push("their tools are offered with the first request".to_owned());
                }
                None => items.extend(
                    workspace
                        .config
                        .servers
                        .keys()
                        .map(|name| format!("{name}  not started: tools are off for this model")),
                ),
            }
            return listing("MCP servers", items);
        };
        let states = mcp.states();
        let costs = self
            .conversation
            .as_ref()
            .and_then(|c| crate::runtime::tool_costs::tool_servers(c, &states));
        match costs {
            Some(costs) => {
                for server in &costs.servers {
                    let deferred = server.tools.iter().filter(|t| t.deferred).count();
                    let how = if deferred == 0 {
                        String::new()
                    } else {
                        format!(", {deferred} deferred")
                    };
                    let why = server
                        .why
                        .as_deref()
                        .map_or_else(String::new, |w| format!(": {w}"));
                    items.push(format!(
                        "{}  {}  {} tools  {} tokens{how}{why}",
                        server.name,
                        server.status,
                        server.tools.len(),
                        server.tokens
                    ));
                    for tool in &server.tools {
                        let mark = if tool.deferred { "  deferred" } else { "" };
                        items.push(format!("    {}  {}{mark}", tool.name, tool.tokens));
                    }
                }
                match costs.deferred_saving_tokens {
                    0 => {}
                    saved if saved > 0 => items.push(format!("deferral saves {saved} tokens per request")),
                    cost => items.push(format!(
                        "deferral costs {} tokens per request (the bridge tools outweigh the tools they stand in for)",
                        cost.unsigned_abs()
                    )),
                }
            }
            None => {
                for s in &states {
                    let why = s.why.as_deref().map_or_else(String::new, |w| format!(": {w}"));
                    items.push(format!("{}  {}{why}", s.name, s.status));
                }
            }
        }
        listing("MCP servers (tokens per request)", items)
    }

    /// Switches every tool of `server` on or off for the session (stored
    /// with the session's switched-off tools).
    fn switch_server(&mut self, server: &str, on: bool) -> anyhow::Result<()> {
        let Some(mcp) = self.mcp.as_ref() else {
            anyhow::bail!(
                "the MCP servers start with the first request; send a message first, then switch one"
            );
        };
        let Some((_, specs)) = mcp.groups().iter().find(|(name, _)| name == server) else {
            let names: Vec<&str> = mcp.groups().iter().map(|(n, _)| n.as_str()).collect();
            anyhow::bail!(
                "there is no MCP server named '{server}' with tools in this session; the servers are: {}",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            );
        };
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let Some(conversation) = self.conversation.as_mut() else {
            anyhow::bail!("no session is open; send a message first, then switch a server");
        };
        for name in &names {
            conversation.set_tool_enabled(name, on);
        }
        let id = conversation.session().id;
        let mut stored = self.runtime.store.session_tools(id)?;
        stored.disabled.retain(|n| !names.contains(n));
        if !on {
            stored.disabled.extend(names.iter().cloned());
            stored.disabled.sort();
        }
        self.runtime.store.set_session_tools(id, &stored)?;
        self.sync_catalog();
        let process = match self.mcp.as_ref() {
            Some(mcp) if !on && mcp.stop_server(server) => {
                "; its process and everything it started are stopped"
            }
            Some(mcp) if on && mcp.start_server_again(server) => "; its process is starting again",
            _ => "",
        };
        let state = if on { "on" } else { "off" };
        self.emit(ServiceEvent::Notice(format!(
            "MCP server {server} is {state} for this session ({} tools){process}; the system prompt is unchanged",
            names.len()
        )));
        if let Ok(choice) = self.choice()
            && let Some(context) = self.context_now(&choice)
        {
            self.emit(ServiceEvent::Context(Box::new(context)));
        }
        Ok(())
    }
}
