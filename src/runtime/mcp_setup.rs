//! The MCP servers of the config as the `mcp` adapter takes them
//! ([`server_specs`]), and `strata mcp list`: every server started, its
//! status, and each tool's tokens on the wire form the default provider
//! receives ([`list`]), with the workspace's `.mcp.json` servers once
//! accepted.

use crate::config::{Config, McpConfig, McpServerConfig, ModelChoice, Paths};
use crate::domain::ProviderKind;
use crate::mcp::{self, Hub, McpTool, Refused, ServerSpec, Status};
use crate::tokens::TokenCounter;
use crate::tooling::deferred::Wire;
use crate::tooling::mcp_names::McpNames;
use crate::tooling::sandbox::Mode;
use crate::tooling::schema::ToolSpec;
use crate::tooling::{Access, access};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The configured servers, ready for [`Hub::start`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpSetup {
    /// Every enabled server, by name: its spec, or why it cannot start.
    pub servers: Vec<Result<ServerSpec, Refused>>,
    /// The servers with `enabled = false`, by name.
    pub disabled: Vec<String>,
}

/// The strata binary that supervises server processes (`strata
/// __supervise`), when this process is strata itself (not a test harness).
#[must_use]
pub fn supervisor_binary() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .filter(|p| p.file_stem().is_some_and(|s| s == "strata"))
}

/// The specs of `config`'s enabled servers (see [`spec_for`]), started in
/// `cwd` (the workspace), with `${VAR}` values from `env`.
#[must_use]
pub fn server_specs(
    config: &McpConfig,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    supervisor: Option<&Path>,
) -> McpSetup {
    let mut setup = McpSetup::default();
    for (name, server) in &config.servers {
        if server.enabled {
            setup.servers.push(spec_for(name, server, cwd, env, supervisor));
        } else {
            setup.disabled.push(name.clone());
        }
    }
    setup
}

/// The spec of the server `name`: `${VAR}` expanded, timeouts in seconds,
/// its program looked up now.
///
/// # Errors
/// [`Refused`] with one sentence naming the server: no command, a zero
/// timeout, an unset variable, a program that is missing or not
/// executable.
pub fn spec_for(
    name: &str,
    server: &McpServerConfig,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    supervisor: Option<&Path>,
) -> Result<ServerSpec, Refused> {
    let refuse = |why: String| Refused {
        name: name.to_owned(),
        why,
    };
    crate::config::mcp::edit::check_name(name).map_err(refuse)?;
    let server = server.expanded(name, env).map_err(refuse)?;
    let path = server.env.get("PATH").cloned().or_else(|| env("PATH"));
    mcp::resolve_program(name, &server.command, path.as_deref(), cwd).map_err(refuse)?;
    let mut spec = ServerSpec::new(name, server.command, server.args);
    spec.env = server.env.into_iter().collect();
    spec.inherit = server.env_passthrough;
    spec.cwd = Some(cwd.to_path_buf());
    spec.startup_timeout = Duration::from_secs(server.startup_timeout_s);
    spec.call_timeout = Duration::from_secs(server.call_timeout_s);
    spec.supervisor = supervisor.map(Path::to_path_buf);
    let mode: Mode = server
        .sandbox
        .parse()
        .map_err(|e| refuse(format!("[mcp.servers.{name}] sandbox: {e}")))?;
    if mode != Mode::Off {
        if supervisor.is_none() {
            return Err(refuse(format!(
                "The MCP server `{name}` asks for a sandbox, which only strata's own binary can apply; run it from strata, or set its sandbox to \"off\"."
            )));
        }
        let tmpdir = crate::tools::sandbox::session_tmpdir(&std::env::temp_dir(), &format!("mcp-{name}"))
            .map_err(refuse)?;
        let mut writable = vec![tmpdir.clone(), "/dev/shm".into(), "/dev/null".into()];
        if mode == Mode::WorkspaceWrite {
            writable.push(cwd.to_path_buf());
            writable.extend(crate::tools::sandbox::git_dirs(cwd));
        }
        let sandbox = crate::tools::sandbox::Spec {
            mode,
            network: server.network,
            required: false,
            writable,
            protect: None,
        };
        spec.supervisor_args = sandbox.args();
        spec.env.retain(|(n, _)| n != "TMPDIR");
        spec.env
            .push(("TMPDIR".to_owned(), tmpdir.to_string_lossy().into_owned()));
    }
    Ok(spec)
}

/// `tool` as a tool of the session, named `name`: its description and
/// input schema as the server gave them; its access as
/// [`access::ruling`] decides: read-only only when the server is
/// `trusted` (`trust_annotations`) and marks it `readOnlyHint`, otherwise
/// it runs something (approval asks, as for `shell`).
#[must_use]
pub fn tool_spec(tool: &McpTool, name: &str, trusted: bool) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: tool.description.clone(),
        parameters: tool.input_schema.clone(),
        access: access::ruling(origin(tool, trusted)).access,
    }
}

/// Where `tool` comes from, for [`access`]: its server, its annotations
/// and whether the user trusts them.
#[must_use]
pub fn origin(tool: &McpTool, trusted: bool) -> access::Origin<'_> {
    access::Origin::Mcp {
        server: &tool.server,
        annotations: tool.annotations(),
        trusted,
    }
}

/// The form `provider` receives tools in (the embedded model, which has
/// no tool calling, counts as OpenAI's).
#[must_use]
pub fn wire(provider: ProviderKind) -> Wire {
    match provider {
        ProviderKind::Anthropic => Wire::Anthropic,
        ProviderKind::OpenAi | ProviderKind::Local => Wire::OpenAi,
    }
}

/// How long waiting for `servers` to start may take: the longest startup
/// timeout, and a little more for the handshake.
#[must_use]
pub fn startup_wait(servers: &[Result<ServerSpec, Refused>]) -> Duration {
    servers
        .iter()
        .filter_map(|s| s.as_ref().ok().map(|s| s.startup_timeout))
        .max()
        .unwrap_or_default()
        + Duration::from_secs(2)
}

/// Starts `servers` together and waits until each is ready or failed (at
/// most [`startup_wait`]).
pub async fn start_and_wait(servers: Vec<Result<ServerSpec, Refused>>) -> (Hub, Vec<mcp::ServerStatus>) {
    let deadline = tokio::time::Instant::now() + startup_wait(&servers);
    let hub = Hub::start(servers);
    let statuses = hub.wait_ready(deadline).await;
    (hub, statuses)
}

/// What `strata mcp list` prints (`--json` prints it as is).
#[derive(Clone, Debug, Serialize)]
pub struct McpListing {
    /// The default provider, whose wire form and tokenizer count the tools.
    pub provider: ProviderKind,
    /// Its model.
    pub model: String,
    /// `openai` (the function wrapper) or `anthropic` (the tool object).
    pub wire_form: &'static str,
    /// The tokenizer's id.
    pub tokenizer: String,
    /// Whether its counts are exact for the model.
    pub exact: bool,
    /// Milliseconds from starting the servers until none was starting.
    pub ready_ms: u64,
    /// Every configured server, by name.
    pub servers: Vec<ServerListing>,
    /// The workspace's `.mcp.json` awaiting acceptance (its servers are not
    /// started or listed), or `null`.
    pub pending_mcp_json: Option<super::PendingMcpJson>,
}

/// One server of [`McpListing`].
#[derive(Clone, Debug, Serialize)]
pub struct ServerListing {
    /// Its name.
    pub name: String,
    /// `config` (config.toml) or `.mcp.json` (the workspace's, accepted).
    pub source: super::McpSource,
    /// `ready`, `unavailable`, `starting` (still, at the deadline) or
    /// `disabled`.
    pub status: &'static str,
    /// Why it is unavailable or disabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Its last stderr lines, when unavailable.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// The sum of its tools' tokens.
    pub tokens: u64,
    /// `[mcp.servers.NAME] trust_annotations`: its tools' annotations
    /// count for approval.
    pub trust_annotations: bool,
    /// Its tools that `allow_tools` / `deny_tools` let through, in the
    /// server's order.
    pub tools: Vec<ToolListing>,
    /// The names of the tools the config filters out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filtered_out: Vec<String>,
    /// One sentence for each `allow_tools` / `deny_tools` name the server
    /// does not list (when it is ready).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One tool of [`ServerListing`].
#[derive(Clone, Debug, Serialize)]
pub struct ToolListing {
    /// Its name on the server.
    pub name: String,
    /// The name the model calls (`server__tool`, [`McpNames`]).
    pub wire_name: String,
    /// Tokens of its wire form ([`wire`]) by the provider's tokenizer.
    pub tokens: u64,
    /// The server marks it `readOnlyHint` (a claim; see `access`).
    pub read_only_hint: bool,
    /// How approval treats it: `read-only` (runs without asking) or `run`
    /// (approved like `shell`).
    pub access: &'static str,
    /// The rule that decided `access`: `trusted_annotations` or
    /// `untrusted_server`.
    pub rule: access::AccessRule,
    /// That rule as a sentence's clause.
    pub why: String,
    /// Its description's first line.
    pub description: String,
}

/// Starts every enabled server of `workspace` (config.toml's and the
/// accepted `.mcp.json`'s, [`super::Runtime::workspace_mcp`]) in `cwd`,
/// waits until each is ready or unavailable (its start-up timeout, plus a
/// little), counts each tool's wire form for `choice.provider` with its
/// tokenizer (`config` says which), and stops the servers again.
pub async fn list(
    config: &Config,
    workspace: &super::WorkspaceMcp,
    paths: &Paths,
    choice: &ModelChoice,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> McpListing {
    let mcp = &workspace.config;
    let source = |name: &str| {
        workspace
            .sources
            .get(name)
            .copied()
            .unwrap_or(super::McpSource::Config)
    };
    let setup = server_specs(mcp, cwd, env, supervisor_binary().as_deref());
    let started = tokio::time::Instant::now();
    let (hub, statuses) = start_and_wait(setup.servers).await;
    let ready_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let tools = hub.tools();
    hub.shutdown().await;
    let counter = super::session_counter(paths, config, choice.provider, &choice.model);
    let allowed = |t: &&McpTool| mcp.servers.get(&t.server).is_none_or(|c| c.allows(&t.name));
    let names = McpNames::new(statuses.iter().map(|s| {
        let offered = tools.iter().filter(|t| t.server == s.name).filter(allowed);
        (
            s.name.clone(),
            offered.map(|t| t.name.clone()).collect::<Vec<_>>(),
        )
    }));
    let ctx = Counting {
        names: &names,
        wire: wire(choice.provider),
        counter: counter.as_ref(),
    };
    let mut servers: Vec<ServerListing> = statuses
        .into_iter()
        .map(|s| {
            let server_tools: Vec<&McpTool> = tools.iter().filter(|t| t.server == s.name).collect();
            let mut listed = listing(&s.name, &s.status, &server_tools, mcp.servers.get(&s.name), &ctx);
            listed.source = source(&s.name);
            listed
        })
        .collect();
    servers.extend(setup.disabled.into_iter().map(|name| ServerListing {
        trust_annotations: mcp.servers.get(&name).is_some_and(|c| c.trust_annotations),
        why: Some(format!("[mcp.servers.{name}] enabled is false.")),
        source: source(&name),
        name,
        status: "disabled",
        stderr_tail: Vec::new(),
        tokens: 0,
        tools: Vec::new(),
        filtered_out: Vec::new(),
        warnings: Vec::new(),
    }));
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    McpListing {
        provider: choice.provider,
        model: choice.model.clone(),
        wire_form: match wire(choice.provider) {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
        },
        tokenizer: counter.id().to_owned(),
        exact: counter.exact(),
        ready_ms,
        servers,
        pending_mcp_json: workspace.pending.clone(),
    }
}

/// `access` as `strata mcp list` names it.
fn access_name(access: Access) -> &'static str {
    match access {
        Access::ReadOnly => "read-only",
        Access::Write => "write",
        Access::Run => "run",
    }
}

/// How [`listing`] names and counts tools.
struct Counting<'a> {
    names: &'a McpNames,
    wire: Wire,
    counter: &'a dyn TokenCounter,
}

fn listing(
    name: &str,
    status: &Status,
    tools: &[&McpTool],
    config: Option<&McpServerConfig>,
    ctx: &Counting<'_>,
) -> ServerListing {
    let (label, why, stderr_tail) = match status {
        Status::Unavailable { why, stderr_tail } => ("unavailable", Some(why.clone()), stderr_tail.clone()),
        other => (other.label(), None, Vec::new()),
    };
    let allows = |t: &str| config.is_none_or(|c| c.allows(t));
    let trusted = config.is_some_and(|c| c.trust_annotations);
    // A name the server lists twice is offered once (the first), as in a
    // session.
    let mut seen = std::collections::HashSet::new();
    let listed: Vec<ToolListing> = tools
        .iter()
        .filter(|t| allows(&t.name))
        .filter(|t| seen.insert(t.name.as_str()))
        .map(|t| {
            let wire_name = ctx.names.name(name, &t.name).unwrap_or_default().to_owned();
            let spec = tool_spec(t, &wire_name, trusted);
            let tokens = u64::from(ctx.wire.tokens(ctx.counter, &spec));
            ToolListing {
                name: t.name.clone(),
                wire_name,
                tokens,
                read_only_hint: t.read_only_hint,
                access: access_name(spec.access),
                rule: access::ruling(origin(t, trusted)).rule,
                why: access::describe(origin(t, trusted)),
                description: t.description.lines().next().unwrap_or_default().to_owned(),
            }
        })
        .collect();
    ServerListing {
        name: name.to_owned(),
        source: super::McpSource::Config,
        trust_annotations: trusted,
        status: label,
        why,
        stderr_tail,
        tokens: listed.iter().map(|t| t.tokens).sum(),
        filtered_out: tools
            .iter()
            .filter(|t| !allows(&t.name))
            .map(|t| t.name.clone())
            .collect(),
        warnings: match status {
            Status::Ready { .. } => {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                config
                    .cloned()
                    .unwrap_or_default()
                    .unmatched_filters(name, &names)
            }
            _ => Vec::new(),
        },
        tools: listed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn env(name: &str) -> Option<String> {
        match name {
            "PATH" => Some("/usr/bin:/bin".to_owned()),
            "DIR" => Some("/data".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn the_config_becomes_specs_or_sentences() {
        let config = Config::parse(
            "[mcp.servers.sh]\ncommand = \"sh\"\nargs = [\"${DIR}/x\"]\nenv = { TZ = \"UTC\" }\nenv_passthrough = [\"GH_TOKEN\"]\ncall_timeout_s = 5\n\
             [mcp.servers.gone]\ncommand = \"strata-no-such-server\"\n\
             [mcp.servers.unset]\ncommand = \"sh\"\nargs = [\"${NOPE}\"]\n\
             [mcp.servers.off]\ncommand = \"sh\"\nenabled = false\n\
             [mcp.servers.a__b]\ncommand = \"sh\"\n",
        )
        .unwrap()
        .config;
        let cwd = Path::new("/tmp");
        let mut setup = server_specs(&config.mcp, cwd, &env, Some(Path::new("/opt/strata")));
        assert_eq!(setup.disabled, ["off"]);
        let names: Vec<&str> = setup
            .servers
            .iter()
            .map(|s| s.as_ref().map_or_else(|r| r.name.as_str(), |s| s.name.as_str()))
            .collect();
        assert_eq!(names, ["a__b", "gone", "sh", "unset"]);
        let bad_name = setup.servers.remove(0).unwrap_err();
        assert!(bad_name.why.contains("holds `__`"), "{}", bad_name.why);
        let gone = setup.servers[0].as_ref().unwrap_err();
        assert!(
            gone.why
                .contains("`strata-no-such-server` of MCP server `gone` was not found on PATH"),
            "{}",
            gone.why
        );
        let sh = setup.servers[1].as_ref().unwrap();
        assert_eq!(sh.args, ["/data/x"]);
        assert_eq!(sh.env, [("TZ".to_owned(), "UTC".to_owned())]);
        assert_eq!(sh.inherit, ["GH_TOKEN"]);
        assert_eq!(
            (sh.call_timeout, sh.startup_timeout),
            (Duration::from_secs(5), Duration::from_secs(30))
        );
        assert_eq!(sh.supervisor.as_deref(), Some(Path::new("/opt/strata")));
        assert_eq!(sh.cwd.as_deref(), Some(cwd));
        let unset = setup.servers[2].as_ref().unwrap_err();
        assert!(
            unset
                .why
                .starts_with("[mcp.servers.unset] args[0] uses ${NOPE}, which is not set"),
            "{}",
            unset.why
        );
    }

    #[test]
    fn the_wire_form_follows_the_provider() {
        let tool = McpTool {
            server: "time".into(),
            name: "now".into(),
            description: "The time.".into(),
            input_schema: serde_json::json!({"type": "object", "properties": {}}),
            read_only_hint: true,
            destructive_hint: None,
        };
        // A server's hint counts only when the user trusts the server.
        assert_eq!(tool_spec(&tool, "time__now", false).access, Access::Run);
        let spec = tool_spec(&tool, "time__now", true);
        assert_eq!(spec.access, Access::ReadOnly);
        let form = |p: ProviderKind| wire(p).schema(&spec).to_string();
        assert_eq!(form(ProviderKind::Local), form(ProviderKind::OpenAi));
        assert_eq!(
            form(ProviderKind::OpenAi),
            r#"{"function":{"description":"The time.","name":"time__now","parameters":{"properties":{},"type":"object"}},"type":"function"}"#
        );
        assert_eq!(
            form(ProviderKind::Anthropic),
            r#"{"description":"The time.","input_schema":{"properties":{},"type":"object"},"name":"time__now"}"#
        );
        let writes = McpTool {
            read_only_hint: false,
            ..tool
        };
        assert_eq!(tool_spec(&writes, "x", true).access, Access::Run);
    }
}
