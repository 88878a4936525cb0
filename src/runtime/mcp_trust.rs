//! Whether a workspace's `.mcp.json` may start servers: the user accepts
//! (or declines) it once per workspace root, and the decision holds for the
//! bytes it was made on. [`Runtime::workspace_mcp`] gives the servers a
//! session in the workspace starts (config.toml's, plus the accepted
//! file's) and what awaits a decision; [`Runtime::accept_mcp_json`] and
//! [`Runtime::decline_mcp_json`] record one.

use super::Runtime;
use crate::config::McpConfig;
use crate::config::mcp::json::{self, FILE_NAME, McpJson};
use crate::store::{McpDecision, McpTrust};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The MCP servers of one workspace ([`Runtime::workspace_mcp`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkspaceMcp {
    /// The servers a session starts: `[mcp.servers.NAME]` of config.toml,
    /// plus those of the workspace's `.mcp.json` when it was accepted with
    /// its current bytes (config.toml wins a name both hold).
    pub config: McpConfig,
    /// Where each server of `config` comes from, by name.
    pub sources: BTreeMap<String, McpSource>,
    /// A `.mcp.json` that is there but not accepted (never, or not since
    /// its bytes changed); `None` when there is none, or it was accepted
    /// or declined as it is.
    pub pending: Option<PendingMcpJson>,
    /// One sentence each: the file cannot be read or parsed (nothing of it
    /// starts), the decision cannot be read, an entry of the accepted file
    /// is left out, or a name of it is config.toml's too.
    pub warnings: Vec<String>,
}

/// Where a server's settings come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum McpSource {
    /// `[mcp.servers.NAME]` of config.toml.
    #[serde(rename = "config")]
    Config,
    /// The workspace's accepted `.mcp.json`.
    #[serde(rename = ".mcp.json")]
    McpJson,
}

impl McpSource {
    /// `config` or `.mcp.json`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::McpJson => FILE_NAME,
        }
    }
}

/// A `.mcp.json` waiting for the user's decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingMcpJson {
    /// The file.
    pub path: PathBuf,
    /// Lower-case hex SHA-256 of its bytes (what accepting it records).
    pub sha256: String,
    /// It was accepted before, with other bytes.
    pub changed: bool,
    /// Its servers, by name.
    pub servers: Vec<McpJsonServer>,
    /// One sentence for the user: what is not started, and how to accept
    /// it (`strata mcp accept`, or `/mcp accept` in the app).
    pub message: String,
}

/// One server of a `.mcp.json`, as the user is asked about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct McpJsonServer {
    /// Its name.
    pub name: String,
    /// The program, as written (before `${VAR}` expansion).
    pub command: String,
    /// Its arguments, as written.
    pub args: Vec<String>,
    /// The variables it is given, as written (shown: `LD_PRELOAD` or a
    /// `PATH` of the workspace's choosing matter as much as the command).
    pub env: BTreeMap<String, String>,
}

impl McpJsonServer {
    /// The variables, command and arguments as one line (`K=V … COMMAND
    /// ARGS…`); a word holding spaces or quotes, or empty, is shown quoted.
    #[must_use]
    pub fn command_line(&self) -> String {
        let vars: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        vars.iter()
            .chain(std::iter::once(&self.command))
            .chain(&self.args)
            .map(|w| {
                if w.is_empty() || w.chars().any(|c| c.is_whitespace() || c == '"' || c == '\'') {
                    format!("{w:?}")
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `name (command line), …` of `servers`.
fn listed(servers: &[McpJsonServer]) -> String {
    servers
        .iter()
        .map(|s| format!("{} ({})", s.name, s.command_line()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn servers_of(file: &McpJson) -> Vec<McpJsonServer> {
    file.servers
        .iter()
        .map(|(name, c)| McpJsonServer {
            name: name.clone(),
            command: c.command.clone(),
            args: c.args.clone(),
            env: c.env.clone(),
        })
        .collect()
}

/// The key decisions are stored under: the root's canonical path.
fn key(root: &Path) -> (PathBuf, String) {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let text = root.to_string_lossy().into_owned();
    (root, text)
}

/// What is said of a `.mcp.json` that cannot be used.
fn unusable(why: &str) -> String {
    format!("{}; none of its servers is started.", why.trim_end_matches('.'))
}

impl Runtime {
    /// The MCP servers of sessions in the workspace at `root` (its root
    /// directory: [`crate::workspace::workspace_root`]) and the
    /// `.mcp.json` there that awaits a decision, if any. Reads the file
    /// and the stored decision each time (microseconds); never fails (a
    /// problem is a sentence in `warnings`, and nothing of the file
    /// starts).
    #[must_use]
    pub fn workspace_mcp(&self, root: &Path) -> WorkspaceMcp {
        let mut out = WorkspaceMcp {
            config: self.config.mcp.clone(),
            sources: self
                .config
                .mcp
                .servers
                .keys()
                .map(|name| (name.clone(), McpSource::Config))
                .collect(),
            ..WorkspaceMcp::default()
        };
        let (root, workspace) = key(root);
        let path = root.join(FILE_NAME);
        let file = match json::read(&path) {
            Ok(Some(file)) if !file.servers.is_empty() => file,
            // Nothing strata could start: nothing to decide on.
            Ok(_) => return out,
            Err(why) => {
                out.warnings.push(unusable(&why));
                return out;
            }
        };
        let trust = match self.store.mcp_trust(&workspace) {
            Ok(trust) => trust,
            Err(e) => {
                out.warnings.push(unusable(&format!(
                    "The decision on {} cannot be read ({e})",
                    path.display()
                )));
                return out;
            }
        };
        let same = trust.as_ref().filter(|t| t.sha256 == file.sha256);
        match same.map(|t| t.decision) {
            Some(McpDecision::Accepted) => {
                out.warnings.extend(file.warnings);
                for (name, server) in file.servers {
                    if out.config.servers.contains_key(&name) {
                        out.warnings.push(format!(
                            "{FILE_NAME}: server `{name}` is also [mcp.servers.{name}] in config.toml, which is the one started; rename one to use both."
                        ));
                        continue;
                    }
                    out.sources.insert(name.clone(), McpSource::McpJson);
                    out.config.servers.insert(name, server);
                }
            }
            Some(McpDecision::Declined) => {}
            None => {
                let changed = trust.is_some_and(|t| t.decision == McpDecision::Accepted);
                let servers = servers_of(&file);
                let message = format!(
                    "{} {} the MCP servers {}, which are not started until you accept it: run `strata mcp accept` in the workspace, or `/mcp accept` in the app (`strata mcp decline` stops this notice).",
                    path.display(),
                    if changed {
                        "changed since it was accepted; it names"
                    } else {
                        "names"
                    },
                    listed(&servers)
                );
                out.pending = Some(PendingMcpJson {
                    path,
                    sha256: file.sha256,
                    changed,
                    servers,
                    message,
                });
            }
        }
        out
    }

    /// Accepts the `.mcp.json` at `root` as its bytes are now: its servers
    /// start with the workspace's next session. Returns one sentence
    /// naming the file and each server with its command line.
    ///
    /// # Errors
    /// One sentence when there is no such file, it cannot be read or
    /// parsed, it names no stdio server, or the decision cannot be stored.
    pub fn accept_mcp_json(&mut self, root: &Path) -> Result<String, String> {
        let (path, file) = self.decide(root, McpDecision::Accepted)?;
        let servers = servers_of(&file);
        Ok(format!(
            "Accepted {}: its MCP servers {} start with the next session in this workspace (until the file changes).",
            path.display(),
            listed(&servers)
        ))
    }

    /// Declines the `.mcp.json` at `root` as its bytes are now: its
    /// servers are not started and nothing asks about it again until the
    /// file changes. Returns one sentence.
    ///
    /// # Errors
    /// As [`Runtime::accept_mcp_json`].
    pub fn decline_mcp_json(&mut self, root: &Path) -> Result<String, String> {
        let (path, file) = self.decide(root, McpDecision::Declined)?;
        let names: Vec<&str> = file.servers.keys().map(String::as_str).collect();
        Ok(format!(
            "Declined {}: its MCP servers {} are not started, and strata does not ask again until the file changes (`strata mcp accept` undoes this).",
            path.display(),
            names.join(", ")
        ))
    }

    fn decide(&mut self, root: &Path, decision: McpDecision) -> Result<(PathBuf, McpJson), String> {
        let (root, workspace) = key(root);
        let path = root.join(FILE_NAME);
        let verb = match decision {
            McpDecision::Accepted => "accept",
            McpDecision::Declined => "decline",
        };
        let file = match json::read(&path) {
            Ok(Some(file)) => file,
            Ok(None) => {
                return Err(format!(
                    "There is no {FILE_NAME} in {}, so there is nothing to {verb}; run this in the workspace that has one.",
                    root.display()
                ));
            }
            Err(why) => {
                return Err(format!(
                    "{}; nothing was {}.",
                    why.trim_end_matches('.'),
                    decision.as_str()
                ));
            }
        };
        if file.servers.is_empty() {
            let why = if file.warnings.is_empty() {
                String::new()
            } else {
                format!(" ({})", file.warnings.join(" ").trim_end_matches('.'))
            };
            return Err(format!(
                "{} names no stdio server strata can start{why}, so there is nothing to {verb}.",
                path.display()
            ));
        }
        self.store
            .set_mcp_trust(&McpTrust {
                workspace,
                sha256: file.sha256.clone(),
                decision,
                decided_at: super::now_ms(),
            })
            .map_err(|e| format!("The decision on {} was not stored: {e}", path.display()))?;
        tracing::info!(file = %path.display(), decision = decision.as_str(), sha256 = %file.sha256, ".mcp.json decided");
        Ok((path, file))
    }
}

#[cfg(test)]
#[path = "mcp_trust_tests.rs"]
mod tests;
