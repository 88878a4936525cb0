//! The MCP servers of an open session (issue 12): started when the
//! session's first turn needs its tools, waited for before that turn's
//! request (so the tools array does not change under the prompt cache
//! later), their tools offered after the built-in ones (one group per
//! server, sorted: `ToolSet::with_extra`), and calls named `server__tool`
//! routed to them through the same approval and output path as every tool.

use super::Runtime;
use crate::config::McpConfig;
use crate::mcp::{CallResult, Hub, ImageDir, McpTool, Status};
use crate::store::McpToolName;
use crate::tooling::deferred::Bridge;
use crate::tooling::mcp_names::McpNames;
use crate::tooling::schema::ToolSpec;
use crate::tooling::{Output, ToolStatus};
use crate::tools::{ToolEnv, ToolOutput};
use std::path::Path;
use std::sync::Arc;

/// The session's running MCP servers and the names their tools go by.
///
/// Made by [`Runtime::launch_mcp`] with the servers starting; its tools
/// are fixed by [`McpSession::settle`] (once before the first request,
/// then again only when a server changed its tool list).
pub struct McpSession {
    hub: Hub,
    config: McpConfig,
    /// When waiting for the servers still starting stops.
    deadline: tokio::time::Instant,
    /// The hub's change counter when the tools were last settled.
    settled_at: Option<u64>,
    /// Servers still starting at the first settle: the session went on
    /// without them, and their tools stay out in this process.
    skipped: std::collections::BTreeSet<String>,
    /// Started again mid-session (the server set changed): servers still
    /// starting at its first settle join once ready instead of staying out.
    relaunched: bool,
    names: McpNames,
    /// Every name given in this process or adopted from the session's
    /// store: a tool named once keeps its name ([`McpNames::with_kept`]).
    kept: std::collections::BTreeMap<(String, String), String>,
    /// Per server, the tools it offers in the session (as the server
    /// listed them; `allow_tools` and `deny_tools` applied).
    offered: Vec<(String, Vec<McpTool>)>,
    /// Per server, its offered tools as tool specs, sorted by name.
    groups: Vec<(String, Vec<ToolSpec>)>,
    /// Servers that could not start, with one sentence each.
    unavailable: Vec<(String, String)>,
    /// One sentence for each `allow_tools` / `deny_tools` name a ready
    /// server does not list.
    warnings: Vec<String>,
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

/// One server of the session as `/mcp` and the context view show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerState {
    /// Its name.
    pub name: String,
    /// `starting`, `ready` or `unavailable`.
    pub status: &'static str,
    /// Why it is unavailable.
    pub why: Option<String>,
    /// Restarts after its first start.
    pub restarts: u32,
}

impl Runtime {
    /// Starts `config`'s enabled servers in `cwd` and returns at once, with
    /// them starting (nothing is offered until [`McpSession::settle`]);
    /// `None` when none is configured. Must be called inside a tokio
    /// runtime.
    #[must_use]
    pub fn launch_mcp(
        &self,
        config: &McpConfig,
        cwd: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<McpSession> {
        let mut setup = super::mcp_setup::server_specs(config, cwd, env, self.supervisor.as_deref());
        for spec in setup.servers.iter_mut().flatten() {
            // Beside the sessions' spill files, on disk rather than a
            // tmpfs, and swept with them when a crash left one.
            spec.large_dir = self.paths.spill_dir().join("mcp");
        }
        if setup.servers.is_empty() {
            return None;
        }
        let deadline = tokio::time::Instant::now() + super::mcp_setup::startup_wait(&setup.servers);
        Some(McpSession {
            hub: Hub::start(setup.servers),
            config: config.clone(),
            deadline,
            settled_at: None,
            skipped: std::collections::BTreeSet::new(),
            relaunched: false,
            names: McpNames::new(Vec::<(String, Vec<String>)>::new()),
            kept: std::collections::BTreeMap::new(),
            offered: Vec::new(),
            groups: Vec::new(),
            unavailable: Vec::new(),
            warnings: Vec::new(),
            catalog: std::sync::Mutex::new(None),
        })
    }

    /// Starts `config`'s enabled servers in `cwd`, waits until each is
    /// ready or failed (at most its startup timeout) and settles their
    /// tools; `None` when none is configured. Must run inside a tokio
    /// runtime.
    pub async fn start_mcp(
        &self,
        config: &McpConfig,
        cwd: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<McpSession> {
        let mut session = self.launch_mcp(config, cwd, env)?;
        session.wait(|_, _| {}).await;
        session.settle();
        Some(session)
    }
}

impl McpSession {
    /// Marks these servers as started again mid-session (the user accepted
    /// or declined a `.mcp.json`): a server still starting when the next
    /// request goes without it is offered once ready, since the array
    /// changes anyway.
    #[must_use]
    pub fn relaunched(mut self) -> Self {
        self.relaunched = true;
        self
    }

    /// `(settled, total)`: servers no longer starting, of all.
    #[must_use]
    pub fn progress(&self) -> (usize, usize) {
        let statuses = self.hub.statuses();
        let done = statuses.iter().filter(|s| s.status != Status::Starting).count();
        (done, statuses.len())
    }

    /// Waits until no server is starting or the startup deadline passed,
    /// calling `progress(settled, total)` at the start and on every change.
    pub async fn wait(&self, mut progress: impl FnMut(usize, usize)) {
        let mut changes = self.hub.changes();
        loop {
            let (done, total) = self.progress();
            progress(done, total);
            if done == total {
                return;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep_until(self.deadline) => return,
            }
        }
    }

    /// Fixes the session's tools from the servers as they are now: a ready
    /// server offers its current list; a server that was offered before
    /// and is unavailable now keeps its tools (a call starts it again); a
    /// server never ready is listed as unavailable (one still starting
    /// with a sentence saying the session went on without it). Returns the
    /// servers whose offered tools changed since the last settle.
    pub fn settle(&mut self) -> Vec<String> {
        let first = self.settled_at.is_none() && !self.relaunched;
        self.settled_at = Some(*self.hub.changes().borrow());
        let statuses = self.hub.statuses();
        let tools = self.hub.tools();
        let config = &self.config;
        let allowed = |t: &&McpTool| config.servers.get(&t.server).is_none_or(|c| c.allows(&t.name));
        let mut offered = Vec::new();
        let mut unavailable = Vec::new();
        let mut warnings = Vec::new();
        for s in &statuses {
            if first && s.status == Status::Starting {
                self.skipped.insert(s.name.clone());
            }
            if self.skipped.contains(&s.name) {
                unavailable.push((
                    s.name.clone(),
                    format!(
                        "The MCP server `{}` was still starting when the session went on without it; its tools are not offered in this process.",
                        s.name
                    ),
                ));
                continue;
            }
            if matches!(s.status, Status::Ready { .. })
                && let Some(c) = config.servers.get(&s.name)
            {
                let names: Vec<&str> = tools
                    .iter()
                    .filter(|t| t.server == s.name)
                    .map(|t| t.name.as_str())
                    .collect();
                warnings.extend(c.unmatched_filters(&s.name, &names));
            }
            let before = self.offered.iter().find(|(n, _)| *n == s.name).map(|(_, t)| t);
            let now: Option<Vec<McpTool>> = match (&s.status, before) {
                (Status::Ready { .. }, _) => Some(
                    tools
                        .iter()
                        .filter(|t| t.server == s.name)
                        .filter(allowed)
                        .cloned()
                        .collect(),
                ),
                (_, Some(before)) => Some(before.clone()),
                (Status::Unavailable { why, .. }, None) => {
                    tracing::warn!(server = %s.name, why = %why, "MCP server unavailable");
                    unavailable.push((s.name.clone(), why.clone()));
                    None
                }
                (Status::Starting, None) => None,
            };
            if let Some(now) = now {
                offered.push((s.name.clone(), now));
            }
        }
        // Servers offered before whose list is another now (a server
        // offered for the first time is news of another kind).
        let changed: Vec<String> = offered
            .iter()
            .filter(|(name, now)| {
                self.offered
                    .iter()
                    .find(|(n, _)| n == name)
                    .is_some_and(|(_, before)| before != now)
            })
            .map(|(name, _)| name.clone())
            .collect();
        self.offered = offered;
        self.unavailable = unavailable;
        self.warnings = warnings;
        self.rename();
        changed
    }

    /// Names the offered tools (the kept names first) and makes their
    /// groups; every name given is kept.
    fn rename(&mut self) {
        let kept = self
            .kept
            .iter()
            .map(|((server, tool), name)| (server.clone(), tool.clone(), name.clone()));
        self.names = McpNames::with_kept(
            kept,
            self.offered.iter().map(|(server, tools)| {
                (
                    server.clone(),
                    tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
                )
            }),
        );
        for (server, tool, name) in self.names.iter() {
            self.kept
                .entry((server.to_owned(), tool.to_owned()))
                .or_insert_with(|| name.to_owned());
        }
        self.groups = self
            .offered
            .iter()
            .filter(|(_, tools)| !tools.is_empty())
            .map(|(server, tools)| {
                let mut specs: Vec<ToolSpec> = tools
                    .iter()
                    .filter_map(|t| {
                        let name = self.names.name(server, &t.name)?;
                        Some(super::mcp_setup::tool_spec(t, name, self.trusts(server)))
                    })
                    .collect();
                specs.sort_by(|a, b| a.name.cmp(&b.name));
                (server.clone(), specs)
            })
            .collect();
    }

    /// Takes the names a session gave its tools (from the store) as the
    /// names to keep, over those given in this process; renames the tools
    /// when that changes a name. Returns whether it did.
    pub fn adopt_names(&mut self, stored: &[McpToolName]) -> bool {
        let mut kept: std::collections::BTreeMap<(String, String), String> = stored
            .iter()
            .map(|(server, tool, name)| ((server.clone(), tool.clone()), name.clone()))
            .collect();
        let names: std::collections::BTreeSet<&String> = kept.values().collect();
        let others: Vec<((String, String), String)> = self
            .kept
            .iter()
            .filter(|(pair, name)| !kept.contains_key(*pair) && !names.contains(name))
            .map(|(pair, name)| (pair.clone(), name.clone()))
            .collect();
        kept.extend(others);
        if kept == self.kept {
            return false;
        }
        self.kept = kept;
        let before = self.names.clone();
        self.rename();
        self.names != before
    }

    /// Every `(server, tool, name)` offered now.
    #[must_use]
    pub fn tool_names(&self) -> Vec<McpToolName> {
        self.names
            .iter()
            .map(|(server, tool, name)| (server.to_owned(), tool.to_owned(), name.to_owned()))
            .collect()
    }

    /// Whether the user trusts `server`'s annotations
    /// (`[mcp.servers.NAME] trust_annotations`).
    fn trusts(&self, server: &str) -> bool {
        self.config
            .servers
            .get(server)
            .is_some_and(|c| c.trust_annotations)
    }

    /// The rule that gave the offered tool `name` (`server__tool`) its
    /// access, as a clause ([`crate::tooling::access::describe`]); `None`
    /// for a name no server offers.
    #[must_use]
    pub fn access_rule(&self, name: &str) -> Option<String> {
        self.offered.iter().find_map(|(server, tools)| {
            tools
                .iter()
                .find(|t| self.names.name(server, &t.name) == Some(name))
                .map(|t| crate::tooling::access::describe(super::mcp_setup::origin(t, self.trusts(server))))
        })
    }

    /// Whether a server changed its tools or its status since the last
    /// [`McpSession::settle`] (`notifications/tools/list_changed`, a
    /// restart, a crash).
    #[must_use]
    pub fn changed_since_settle(&self) -> bool {
        self.settled_at != Some(*self.hub.changes().borrow())
    }

    /// Every configured server with its status now, in the config's order
    /// (a server the session went on without is `unavailable`).
    #[must_use]
    pub fn states(&self) -> Vec<ServerState> {
        self.hub
            .statuses()
            .into_iter()
            .map(|s| ServerState {
                why: match &s.status {
                    _ if self.skipped.contains(&s.name) => self
                        .unavailable
                        .iter()
                        .find(|(n, _)| *n == s.name)
                        .map(|(_, why)| why.clone()),
                    Status::Unavailable { why, .. } => Some(why.clone()),
                    _ => None,
                },
                status: if self.skipped.contains(&s.name) {
                    "unavailable"
                } else {
                    s.status.label()
                },
                restarts: s.restarts,
                name: s.name,
            })
            .collect()
    }

    /// Each server's `deferred` setting.
    #[must_use]
    pub fn deferred_settings(
        &self,
    ) -> std::collections::BTreeMap<String, crate::tooling::deferred::Deferred> {
        self.config
            .servers
            .iter()
            .map(|(name, c)| (name.clone(), c.deferred))
            .collect()
    }

    /// Stops the server `name`'s process and everything it started
    /// (`/mcp off`); its tools stay in the session's tools array, switched
    /// off. `false` when it was not started.
    pub fn stop_server(&self, name: &str) -> bool {
        self.hub.stop(name)
    }

    /// Starts the server `name` again after [`McpSession::stop_server`]
    /// (`/mcp on`); `false` when it was not stopped.
    pub fn start_server_again(&self, name: &str) -> bool {
        self.hub.start_again(name)
    }

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

    /// What the last settle found wrong with `allow_tools` / `deny_tools`
    /// (one sentence each).
    #[must_use]
    pub fn warnings(&self) -> &[String] {
        &self.warnings
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
    /// saved in `env`'s spill directory under the call's id, and a result
    /// too long to hold in memory is spilled there whole. A server that fails or
    /// times out gives an error result the model reads.
    pub async fn call(
        &self,
        name: &str,
        arguments: serde_json::Value,
        env: Arc<ToolEnv>,
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
            dir: env.spill_dir.clone(),
            stem: crate::tooling::limits::spill_name(tool_call_id),
        };
        match self.hub.call(server, tool, arguments, None, Some(&images)).await {
            Ok(CallResult {
                large: Some(large),
                is_error,
                ..
            }) => {
                let id = tool_call_id.to_owned();
                let read = tokio::task::spawn_blocking(move || {
                    let output = crate::tools::output_from_file(&env, &id, &large.file);
                    let _ = std::fs::remove_file(&large.file);
                    output
                })
                .await;
                match read {
                    Ok(output) if is_error && output.status == ToolStatus::Ok => ToolOutput {
                        status: ToolStatus::Error,
                        ..output
                    },
                    Ok(output) => output,
                    Err(_) => ToolOutput::error("The tool's long result could not be read; call it again."),
                }
            }
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
                sandbox: None,
            },
            Err(sentence) => ToolOutput::error(sentence),
        }
    }

    /// Stops the servers (at most about 2 s).
    pub async fn shutdown(&self) {
        self.hub.shutdown().await;
    }
}
