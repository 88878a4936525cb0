//! What each tool of a session costs per request, by server (issue 12,
//! "costs visible"): the built-in tools as the server `builtin`, each MCP
//! server with its status, each tool's tokens on the wire form the
//! session's provider receives, whether it is deferred, and what deferral
//! saves per request. The context pane and `strata context --json`
//! (`categories.tools.servers`, `categories.tools.deferred_saving_tokens`)
//! show it.

use super::ServerState;
use crate::conversation::Conversation;
use crate::tokens::BudgetItem;
use crate::tooling::deferred::Disclosure;
use crate::tooling::schema::ToolSet;
use serde::Serialize;

/// The name the built-in tools (and the bridge tools) go under.
pub const BUILTIN: &str = "builtin";

/// Every server's tools and what deferral saves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ToolServers {
    /// `builtin` first, then each MCP server in the config's order.
    pub servers: Vec<ServerCost>,
    /// Tokens each request saves because tools are deferred: every enabled
    /// tool direct minus the request's array (bridges included); negative
    /// when the bridges cost more than what they stand in for; 0 when
    /// nothing is deferred.
    pub deferred_saving_tokens: i64,
}

/// One server of [`ToolServers`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerCost {
    /// `builtin`, or the MCP server's name.
    pub name: String,
    /// `builtin`, `ready`, `starting`, `unavailable` or `off` (every tool
    /// switched off for the session).
    pub status: String,
    /// Why it is unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The sum of its enabled tools' tokens, deferred ones included.
    pub tokens: u64,
    /// Its enabled tools in array order.
    pub tools: Vec<ToolCostRow>,
}

/// One tool of [`ServerCost`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolCostRow {
    /// The name the model calls.
    pub name: String,
    /// Tokens of its schema on the wire.
    pub tokens: u64,
    /// Whether it left the tools array for the bridge tools.
    pub deferred: bool,
}

impl ToolServers {
    /// The MCP servers' part (every server but `builtin`).
    pub fn mcp(&self) -> impl Iterator<Item = &ServerCost> {
        self.servers.iter().filter(|s| s.name != BUILTIN)
    }
}

/// The costs of `conversation`'s tools, with `states` giving each
/// configured MCP server's status; `None` when tools are off (see
/// [`servers_of`]).
#[must_use]
pub fn tool_servers(conversation: &Conversation, states: &[ServerState]) -> Option<ToolServers> {
    let tools = conversation.tools()?;
    Some(servers_of(
        &tools.set,
        tools.offered(),
        &conversation.tool_items(),
        conversation.disclosure(),
        states,
    ))
}

/// The costs of the full set `set` whose request carries `offered`
/// (`items`: its enabled tools' counts, in order), with `states` giving
/// each configured MCP server's status. Tokens come from the disclosure
/// `plan` when there is one (the session's wire form), else from `items`.
#[must_use]
pub fn servers_of(
    set: &ToolSet,
    offered: &ToolSet,
    items: &[BudgetItem],
    plan: Option<&Disclosure>,
    states: &[ServerState],
) -> ToolServers {
    let mut builtin = ServerCost {
        name: BUILTIN.to_owned(),
        status: BUILTIN.to_owned(),
        why: None,
        tokens: 0,
        tools: Vec::new(),
    };
    let mut servers: Vec<ServerCost> = states
        .iter()
        .map(|s| ServerCost {
            name: s.name.clone(),
            status: s.status.to_owned(),
            why: s.why.clone(),
            tokens: 0,
            tools: Vec::new(),
        })
        .collect();
    let mut saving = 0;
    let mut push = |server: Option<&str>, row: ToolCostRow| {
        let target = match server {
            Some(name) => match servers.iter_mut().find(|s| s.name == name) {
                Some(s) => s,
                None => {
                    servers.push(ServerCost {
                        name: name.to_owned(),
                        status: "ready".to_owned(),
                        why: None,
                        tokens: 0,
                        tools: Vec::new(),
                    });
                    let last = servers.len() - 1;
                    &mut servers[last]
                }
            },
            None => &mut builtin,
        };
        target.tokens += row.tokens;
        target.tools.push(row);
    };
    match plan {
        Some(plan) => {
            for cost in plan.costs() {
                push(
                    cost.server.as_deref(),
                    ToolCostRow {
                        name: cost.name.clone(),
                        tokens: u64::from(cost.tokens),
                        deferred: cost.deferred,
                    },
                );
            }
            // The bridges are strata's own tools: they count as built-in.
            let counted: std::collections::HashSet<&str> =
                plan.costs().iter().map(|c| c.name.as_str()).collect();
            for (item, entry) in items.iter().zip(offered.specs().iter().filter(|e| e.enabled)) {
                if !counted.contains(entry.spec.name.as_str()) {
                    push(
                        None,
                        ToolCostRow {
                            name: item.name.clone(),
                            tokens: item.tokens,
                            deferred: false,
                        },
                    );
                }
            }
            saving = plan.saving().saved_tokens();
        }
        None => {
            let groups: Vec<Option<&str>> = offered
                .specs()
                .iter()
                .filter(|e| e.enabled)
                .map(|e| e.group.as_deref())
                .collect();
            for (item, group) in items.iter().zip(groups) {
                push(
                    group,
                    ToolCostRow {
                        name: item.name.clone(),
                        tokens: item.tokens,
                        deferred: false,
                    },
                );
            }
        }
    }
    for s in &mut servers {
        let has_tools = set
            .specs()
            .iter()
            .any(|e| e.group.as_deref() == Some(s.name.as_str()));
        if s.tools.is_empty() && has_tools && s.status == "ready" {
            s.status = "off".to_owned();
        }
    }
    let mut all = vec![builtin];
    all.extend(servers);
    ToolServers {
        servers: all,
        deferred_saving_tokens: saving,
    }
}
