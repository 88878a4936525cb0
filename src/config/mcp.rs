//! `[mcp.servers.NAME]`: the MCP servers a session starts (DESIGN §16),
//! `${VAR}` expansion in their arguments and variables, a workspace's
//! `.mcp.json` ([`json`]) and the edits `strata mcp add/remove` make to
//! the config file ([`edit`]).

pub mod edit;
pub mod json;

/// `deferred`: whether a server's tools may leave the tools array for the
/// bridge tools (the core's setting).
pub use crate::tooling::deferred::Deferred;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[mcp]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct McpConfig {
    /// `[mcp.servers.NAME]`, by name.
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One `[mcp.servers.NAME]` section.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default)]
pub struct McpServerConfig {
    /// The program: a path, or a name looked up on `PATH`.
    pub command: String,
    /// Its arguments; `${VAR}` and `${VAR:-default}` are expanded (in
    /// `command` too).
    pub args: Vec<String>,
    /// Variables set for it; values are expanded like `args`.
    pub env: BTreeMap<String, String>,
    /// Names of more of strata's variables it inherits (the only way one
    /// whose name holds KEY, TOKEN, SECRET or PASSWORD is passed).
    pub env_passthrough: Vec<String>,
    /// Started with a session (default `true`).
    pub enabled: bool,
    /// `auto` (default), `always` or `never`.
    pub deferred: Deferred,
    /// Seconds `initialize` and `tools/list` may take (default 30).
    pub startup_timeout_s: u64,
    /// Seconds one call may take (default 120).
    pub call_timeout_s: u64,
    /// Only these tools (names on the server) are offered; empty: all.
    pub allow_tools: Vec<String>,
    /// These tools are never offered (checked after `allow_tools`).
    pub deny_tools: Vec<String>,
    /// Believe the server's tool annotations (`readOnlyHint`,
    /// `destructiveHint`) for approval (default `false`: every tool of the
    /// server is approved like `shell`). Only config.toml can set it; a
    /// workspace's `.mcp.json` cannot.
    pub trust_annotations: bool,
    /// `off` (default), `workspace-write` or `read-only`: the server runs
    /// in the `shell` tool's sandbox (Landlock and seccomp): writing only
    /// its temporary directory (and the workspace with `workspace-write`).
    /// Only config.toml can set it.
    pub sandbox: String,
    /// With `sandbox`: whether the server may use the network and sockets
    /// (default `true`: servers often need it).
    pub network: bool,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            env_passthrough: Vec::new(),
            enabled: true,
            deferred: Deferred::Auto,
            startup_timeout_s: 30,
            call_timeout_s: 120,
            allow_tools: Vec::new(),
            deny_tools: Vec::new(),
            trust_annotations: false,
            sandbox: "off".to_owned(),
            network: true,
        }
    }
}

impl McpServerConfig {
    /// Whether the tool `tool` (its name on the server) is offered:
    /// listed in `allow_tools` (or that list is empty) and not in
    /// `deny_tools`.
    #[must_use]
    pub fn allows(&self, tool: &str) -> bool {
        (self.allow_tools.is_empty() || self.allow_tools.iter().any(|t| t == tool))
            && !self.deny_tools.iter().any(|t| t == tool)
    }

    /// One sentence for each name of `allow_tools` and `deny_tools` that
    /// is none of `tools` (the server's own tool names), which would
    /// otherwise filter nothing without a word, and for each tool the
    /// server lists more than once; `name` is the server's.
    #[must_use]
    pub fn unmatched_filters(&self, name: &str, tools: &[&str]) -> Vec<String> {
        let listed = || {
            if tools.is_empty() {
                "it lists no tools".to_owned()
            } else {
                format!("its tools are {}", tools.join(", "))
            }
        };
        let mut seen = std::collections::BTreeSet::new();
        let twice: Vec<String> = tools
            .iter()
            .filter(|t| !seen.insert(**t))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|t| {
                format!("The MCP server `{name}` lists the tool `{t}` more than once; the first is offered.")
            })
            .collect();
        [("allow_tools", &self.allow_tools), ("deny_tools", &self.deny_tools)]
            .into_iter()
            .flat_map(|(key, names)| names.iter().map(move |n| (key, n)))
            .filter(|(_, n)| !tools.contains(&n.as_str()))
            .map(|(key, n)| {
                format!(
                    "[mcp.servers.{name}] {key} names `{n}`, which the server does not list ({}); use the server's own names, without the `{name}__` prefix.",
                    listed()
                )
            })
            .chain(twice)
            .collect()
    }

    /// This section with `${VAR}` expanded in `args` and `env` (values
    /// from `lookup`), checked: a command is given, the timeouts are at
    /// least 1 s. `name` is the server's name, for the sentences.
    ///
    /// # Errors
    /// One sentence naming the server and the key: no command, a zero
    /// timeout, a variable that is not set (and has no `:-default`), or a
    /// `${` without its `}`.
    pub fn expanded(&self, name: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        if self.command.trim().is_empty() {
            return Err(format!(
                "[mcp.servers.{name}] has no command; set command = \"PROGRAM\" (or run strata mcp add {name} -- COMMAND ARGS…)."
            ));
        }
        for (key, value) in [
            ("startup_timeout_s", self.startup_timeout_s),
            ("call_timeout_s", self.call_timeout_s),
        ] {
            if value == 0 {
                return Err(format!(
                    "[mcp.servers.{name}] {key} is 0; give it at least 1 second."
                ));
            }
        }
        let at = |key: String| {
            move |problem: Problem| match problem {
                Problem::Unset(var) => format!(
                    "[mcp.servers.{name}] {key} uses ${{{var}}}, which is not set; set {var} in the environment or give a default as ${{{var}:-value}}."
                ),
                Problem::Unclosed => format!(
                    "[mcp.servers.{name}] {key} has a `${{` without its `}}`; write variables as ${{NAME}}."
                ),
            }
        };
        let mut out = self.clone();
        out.command = expand(&out.command, lookup).map_err(at("command".to_owned()))?;
        for (i, arg) in out.args.iter_mut().enumerate() {
            *arg = expand(arg, lookup).map_err(at(format!("args[{i}]")))?;
        }
        for (key, value) in &mut out.env {
            *value = expand(value, lookup).map_err(at(format!("env.{key}")))?;
        }
        Ok(out)
    }
}

/// Why [`expand`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// `${NAME}` names a variable that is not set.
    Unset(String),
    /// A `${` has no closing `}`.
    Unclosed,
}

/// `text` with every `${NAME}` replaced by the variable's value and every
/// `${NAME:-default}` by the value or, when unset or empty, `default`. A
/// `$` not followed by `{` stays as it is.
///
/// # Errors
/// [`Problem::Unset`] for a variable that is not set and has no default,
/// [`Problem::Unclosed`] for a `${` without `}`.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, Problem> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after.find('}').ok_or(Problem::Unclosed)?;
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        match (lookup(var), default) {
            (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(Problem::Unset(var.to_owned())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".to_owned()),
            "EMPTY" => Some(String::new()),
            "TOKEN" => Some("t0k".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn the_issue_example_parses_with_its_defaults() {
        let loaded = Config::parse(
            r#"
[mcp.servers.time]
command = "mcp-server-time"
args = []
env = { TZ = "UTC" }
env_passthrough = ["GITHUB_HOST"]
enabled = true
deferred = "auto"
startup_timeout_s = 30
call_timeout_s = 120

[mcp.servers.fs]
command = "mcp-server-filesystem"
args = ["${HOME}/work"]
deferred = "always"
deny_tools = ["write_file"]
"#,
        )
        .unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let servers = &loaded.config.mcp.servers;
        assert_eq!(servers.keys().collect::<Vec<_>>(), ["fs", "time"]);
        let time = &servers["time"];
        assert_eq!(time.env["TZ"], "UTC");
        assert_eq!(time.env_passthrough, ["GITHUB_HOST"]);
        let fs = &servers["fs"];
        assert_eq!(
            (fs.enabled, fs.deferred, fs.startup_timeout_s, fs.call_timeout_s),
            (true, Deferred::Always, 30, 120)
        );
        assert!(fs.allows("read_text_file") && !fs.allows("write_file"));
        assert_eq!(fs.expanded("fs", &env).unwrap().args, ["/home/u/work"]);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_server() {
        let loaded = Config::parse("[mcp.servers.time]\ncommand = \"t\"\ncomand = \"x\"\n").unwrap();
        assert_eq!(
            loaded.warnings,
            ["config.toml: unknown key 'mcp.servers.time.comand' is ignored; check its spelling"]
        );
        let err =
            Config::parse("[mcp.servers.time]\ncommand = \"t\"\ndeferred = \"sometimes\"\n").unwrap_err();
        assert!(
            err.starts_with("line 3, column 12: unknown variant `sometimes`"),
            "{err}"
        );
        let none = McpServerConfig::default().expanded("time", &env).unwrap_err();
        assert_eq!(
            none,
            "[mcp.servers.time] has no command; set command = \"PROGRAM\" (or run strata mcp add time -- COMMAND ARGS…)."
        );
        let zero = McpServerConfig {
            command: "t".into(),
            call_timeout_s: 0,
            ..McpServerConfig::default()
        };
        assert_eq!(
            zero.expanded("time", &env).unwrap_err(),
            "[mcp.servers.time] call_timeout_s is 0; give it at least 1 second."
        );
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_named() {
        assert_eq!(expand("${HOME}/x:$PATH", &env), Ok("/home/u/x:$PATH".to_owned()));
        assert_eq!(expand("a${NOPE:-b}c${EMPTY:-d}", &env), Ok("abcd".to_owned()));
        assert_eq!(expand("${EMPTY}", &env), Ok(String::new()));
        assert_eq!(expand("${NOPE}", &env), Err(Problem::Unset("NOPE".to_owned())));
        assert_eq!(expand("${HOME", &env), Err(Problem::Unclosed));
        let server = McpServerConfig {
            command: "gh".into(),
            env: BTreeMap::from([("GITHUB_TOKEN".to_owned(), "${GH_TOKEN}".to_owned())]),
            args: vec!["--token=${TOKEN}".into()],
            ..McpServerConfig::default()
        };
        assert_eq!(
            server.expanded("github", &env).unwrap_err(),
            "[mcp.servers.github] env.GITHUB_TOKEN uses ${GH_TOKEN}, which is not set; set GH_TOKEN in the environment or give a default as ${GH_TOKEN:-value}."
        );
        let with = |n: &str| {
            if n == "GH_TOKEN" {
                Some("s".to_owned())
            } else {
                env(n)
            }
        };
        let expanded = server.expanded("github", &with).unwrap();
        assert_eq!(expanded.args, ["--token=t0k"]);
        assert_eq!(expanded.env["GITHUB_TOKEN"], "s");
        // The command is expanded like the arguments.
        let located = McpServerConfig {
            command: "${HOME}/bin/srv".into(),
            ..McpServerConfig::default()
        };
        assert_eq!(located.expanded("s", &env).unwrap().command, "/home/u/bin/srv");
        let unset = McpServerConfig {
            command: "${NOPE}/srv".into(),
            ..McpServerConfig::default()
        };
        assert!(
            unset
                .expanded("s", &env)
                .unwrap_err()
                .starts_with("[mcp.servers.s] command uses ${NOPE}, which is not set")
        );
    }

    #[test]
    fn allow_and_deny_lists_filter_tools() {
        let mut s = McpServerConfig::default();
        assert!(s.allows("anything"));
        s.allow_tools = vec!["a".into(), "b".into()];
        s.deny_tools = vec!["b".into()];
        assert!(s.allows("a") && !s.allows("b") && !s.allows("c"));
    }

    #[test]
    fn filter_names_the_server_does_not_list_are_said() {
        let server = McpServerConfig {
            allow_tools: vec!["time__get_current_time".into(), "convert_time".into()],
            deny_tools: vec!["nope".into()],
            ..McpServerConfig::default()
        };
        let said = server.unmatched_filters("time", &["get_current_time", "convert_time"]);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with("[mcp.servers.time] allow_tools names `time__get_current_time`, which the server does not list (its tools are get_current_time, convert_time)"),
            "{}",
            said[0]
        );
        assert!(
            said[1].starts_with("[mcp.servers.time] deny_tools names `nope`"),
            "{}",
            said[1]
        );
        assert!(
            McpServerConfig::default()
                .unmatched_filters("time", &[])
                .is_empty()
        );
    }
}
