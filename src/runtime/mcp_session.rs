//! The MCP servers of an open session (issue 12): started when the
//! session's first turn needs its tools, waited for before that turn's
//! request (so the tools array does not change under the prompt cache
//! later), their tools offered after the built-in ones (one group per
//! server, sorted: `ToolSet::with_extra`), and calls named `server__tool`
//! routed to them through the same approval and output path as every tool.

use super::Runtime;
use crate::config::McpConfig;
use crate::mcp::{Hub, ImageDir, McpTool, Status};
use crate::tooling::deferred::Bridge;
use crate::tooling::mcp_names::McpNames;
use crate::tooling::schema::ToolSpec;
use crate::tooling::{Output, ToolStatus};
use crate::tools::ToolOutput;
use std::path::{Path, PathBuf};

/// The session's running MCP servers and the names their tools go by.
pub struct McpSession {
    hub: Hub,
    names: McpNames,
    /// Per server, its offered tools as tool specs, sorted by name.
    groups: Vec<(String, Vec<ToolSpec>)>,
    /// Servers that could not start, with one sentence each.
    unavailable: Vec<(String, String)>,
    /// The search index over the deferred tools, when some are deferred
    /// (`tool_search`, `tool_describe`).
    catalog: std::sync::Mutex<Option<crate::tools::catalog::Catalog>>,
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession")
            .field("groups", &self.groups.len())
            .field("unavailable", &self.unavailable)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts `config`'s enabled servers in `cwd` and waits until each is
    /// ready or failed (at most its startup timeout); `None` when none is
    /// configured. Must run inside a tokio runtime.
    pub async fn start_mcp(
        &self,
        config: &McpConfig,
        cwd: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<McpSession> {
        let setup = super::mcp_setup::server_specs(config, cwd, env, self.supervisor.as_deref());
        if setup.servers.is_empty() {
            return None;
        }
        let (hub, statuses) = super::mcp_setup::start_and_wait(setup.servers).await;
        let tools = hub.tools();
        let offered = |t: &&McpTool| config.servers.get(&t.server).is_none_or(|c| c.allows(&t.name));
        let names = McpNames::new(statuses.iter().map(|s| {
            let mine = tools.iter().filter(|t| t.server == s.name).filter(offered);
            (s.name.clone(), mine.map(|t| t.name.clone()).collect::<Vec<_>>())
        }));
        let mut groups: Vec<(String, Vec<ToolSpec>)> = Vec::new();
        let mut unavailable = Vec::new();
        for s in &statuses {
            if let Status::Unavailable { why, .. } = &s.status {
                tracing::warn!(server = %s.name, why = %why, "MCP server unavailable");
                unavailable.push((s.name.clone(), why.clone()));
                continue;
            }
            let mut specs: Vec<ToolSpec> = tools
                .iter()
                .filter(|t| t.server == s.name)
                .filter(offered)
                .filter_map(|t| Some(super::mcp_setup::tool_spec(t, names.name(&t.server, &t.name)?)))
                .collect();
            specs.sort_by(|a, b| a.name.cmp(&b.name));
            if !specs.is_empty() {
                groups.push((s.name.clone(), specs));
            }
        }
        Some(McpSession {
            hub,
            names,
            groups,
            unavailable,
            catalog: std::sync::Mutex::new(None),
        })
    }
}

impl McpSession {
    /// Per server, the tools it offers, sorted by name.
    #[must_use]
    pub fn groups(&self) -> &[(String, Vec<ToolSpec>)] {
        &self.groups
    }

    /// Servers that could not start, with why.
    #[must_use]
    pub fn unavailable(&self) -> &[(String, String)] {
        &self.unavailable
    }

    /// Whether `name` is one of the servers' tools, or a bridge tool of
    /// the deferred ones.
    #[must_use]
    pub fn handles(&self, name: &str) -> bool {
        self.names.resolve(name).is_some() || (self.deferring() && Bridge::from_name(name).is_some())
    }

    fn deferring(&self) -> bool {
        self.catalog.lock().is_ok_and(|c| c.is_some())
    }

    /// Indexes `deferred` for `tool_search` and `tool_describe` (rebuilt
    /// only when the list changed); an empty list stops deferring.
    pub fn defer(&self, deferred: &[ToolSpec]) {
        let Ok(mut slot) = self.catalog.lock() else {
            return;
        };
        if deferred.is_empty() {
            *slot = None;
            return;
        }
        if slot.is_none() {
            match crate::tools::catalog::Catalog::new() {
                Ok(c) => *slot = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, "the tool catalog could not be built");
                    return;
                }
            }
        }
        if let Some(catalog) = slot.as_mut()
            && let Err(e) = catalog.update(deferred)
        {
            tracing::warn!(error = %e, "the tool catalog could not be updated");
        }
    }

    /// Runs the tool `name` with `arguments`; images in the result are
    /// saved in `spill_dir` under the call's id. A server that fails or
    /// times out gives an error result the model reads.
    pub async fn call(
        &self,
        name: &str,
        arguments: serde_json::Value,
        spill_dir: PathBuf,
        tool_call_id: &str,
    ) -> ToolOutput {
        if let Some(bridge) = Bridge::from_name(name).filter(|_| self.names.resolve(name).is_none()) {
            let Ok(slot) = self.catalog.lock() else {
                return ToolOutput::error("The tool catalog is unavailable; call the tool directly by name.");
            };
            return match (bridge, slot.as_ref()) {
                (Bridge::Search, Some(c)) => c.search_output(&arguments),
                (Bridge::Describe, Some(c)) => c.describe_output(&arguments),
                _ => ToolOutput::error(format!("`{name}` is not available in this session.")),
            };
        }
        let Some((server, tool)) = self.names.resolve(name) else {
            return ToolOutput::error(format!("There is no MCP tool named `{name}`."));
        };
        let images = ImageDir {
            dir: spill_dir,
            stem: crate::tooling::limits::spill_name(tool_call_id),
        };
        match self.hub.call(server, tool, arguments, None, Some(&images)).await {
            Ok(result) => ToolOutput {
                status: if result.is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                },
                output: Output::whole(result.text),
                diff: None,
                change: None,
                paged: false,
            },
            Err(sentence) => ToolOutput::error(sentence),
        }
    }

    /// Stops the servers (at most about 2 s).
    pub async fn shutdown(&self) {
        self.hub.shutdown().await;
    }
}
