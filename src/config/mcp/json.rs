//! A workspace's `.mcp.json`, the format Claude Code and others share:
//! `{"mcpServers": {"NAME": {"command", "args", "env"}}}`. Read as a value
//! only: whether a session may use it (the user accepts it once per
//! workspace) is decided by the runtime, with [`McpJson::sha256`] to
//! recognise the accepted file.

use super::McpServerConfig;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The file name looked for at a workspace's root.
pub const FILE_NAME: &str = ".mcp.json";

/// The stdio servers of a `.mcp.json`, with the defaults of
/// [`McpServerConfig`] for what the format does not have.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpJson {
    /// The servers, by name.
    pub servers: BTreeMap<String, McpServerConfig>,
    /// One sentence per entry or key left out (another transport, an
    /// unknown key, a value of the wrong type).
    pub warnings: Vec<String>,
    /// Lower-case hex SHA-256 of the file's bytes.
    pub sha256: String,
}

/// Reads `path`; `Ok(None)` when there is no such file.
///
/// # Errors
/// One sentence when it cannot be read or is not a JSON object with an
/// `mcpServers` object.
pub fn read(path: &Path) -> Result<Option<McpJson>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "{} cannot be read ({e}); check its permissions.",
            path.display()
        )),
    }
}

/// Parses the text of a `.mcp.json` (see the module doc).
///
/// # Errors
/// One sentence when it is not JSON, or not an object with an
/// `mcpServers` object.
pub fn parse(text: &str) -> Result<McpJson, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("it is not valid JSON ({e}); fix it or remove it"))?;
    let Some(servers) = value.get("mcpServers").and_then(Value::as_object) else {
        return Err(
            "it has no \"mcpServers\" object; write {\"mcpServers\": {\"NAME\": {\"command\": …}}}"
                .to_owned(),
        );
    };
    let mut out = McpJson {
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
        ..McpJson::default()
    };
    for (name, entry) in servers {
        match server(name, entry, &mut out.warnings) {
            Some(config) => {
                out.servers.insert(name.clone(), config);
            }
            None => continue,
        }
    }
    Ok(out)
}

fn server(name: &str, entry: &Value, warnings: &mut Vec<String>) -> Option<McpServerConfig> {
    let Some(entry) = entry.as_object() else {
        warnings.push(format!(
            "{FILE_NAME}: server `{name}` is not an object and is left out."
        ));
        return None;
    };
    if let Err(why) = super::edit::check_name(name) {
        warnings.push(format!("{FILE_NAME}: {why} It is left out."));
        return None;
    }
    if let Some(kind) = entry
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| *t != "stdio")
    {
        warnings.push(format!(
            "{FILE_NAME}: server `{name}` uses the `{kind}` transport, which strata does not support; it is left out."
        ));
        return None;
    }
    if entry.get("command").is_none() && entry.get("url").is_some() {
        warnings.push(format!(
            "{FILE_NAME}: server `{name}` is an HTTP server (`url`), which strata does not support; it is left out."
        ));
        return None;
    }
    let mut config = McpServerConfig::default();
    let wrong = |key: &str, want: &str| {
        format!("{FILE_NAME}: server `{name}`: `{key}` must be {want}; it is left out.")
    };
    for (key, value) in entry {
        match key.as_str() {
            "type" => {}
            "command" => match value.as_str() {
                Some(c) => config.command = c.to_owned(),
                None => {
                    warnings.push(wrong("command", "a string"));
                    return None;
                }
            },
            "args" => match value
                .as_array()
                .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_owned)).collect())
            {
                Some(args) => config.args = args,
                None => {
                    warnings.push(wrong("args", "an array of strings"));
                    return None;
                }
            },
            "env" => match value.as_object().and_then(|o| {
                o.iter()
                    .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect::<Option<BTreeMap<_, _>>>()
            }) {
                Some(env) if env.keys().all(|k| super::edit::is_variable_name(k)) => config.env = env,
                Some(_) => {
                    warnings.push(wrong("env", "an object whose keys are variable names"));
                    return None;
                }
                None => {
                    warnings.push(wrong("env", "an object of strings"));
                    return None;
                }
            },
            other => warnings.push(format!(
                "{FILE_NAME}: server `{name}`: the key `{other}` is ignored."
            )),
        }
    }
    if config.command.trim().is_empty() {
        warnings.push(format!(
            "{FILE_NAME}: server `{name}` has no `command`; it is left out."
        ));
        return None;
    }
    Some(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_servers_are_read_and_the_rest_is_said() {
        let text = r#"{"mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
            "web": {"type": "http", "url": "https://example.com/mcp"},
            "odd": {"command": "x", "timeout": 5},
            "bad": {"command": 3}
        }}"#;
        let json = parse(text).unwrap();
        assert_eq!(json.servers.keys().collect::<Vec<_>>(), ["odd", "time"]);
        let time = &json.servers["time"];
        assert_eq!(
            (time.command.as_str(), time.args.as_slice()),
            ("uvx", &["mcp-server-time".to_owned()][..])
        );
        assert_eq!(time.env["TZ"], "UTC");
        assert!(time.enabled && time.startup_timeout_s == 30);
        assert_eq!(
            json.warnings,
            [
                ".mcp.json: server `bad`: `command` must be a string; it is left out.",
                ".mcp.json: server `odd`: the key `timeout` is ignored.",
                ".mcp.json: server `web` uses the `http` transport, which strata does not support; it is left out.",
            ]
        );
        assert_eq!(json.sha256, hex::encode(Sha256::digest(text.as_bytes())));
    }

    #[test]
    fn names_urls_and_variables_the_config_would_refuse_are_left_out() {
        let text = "{\"mcpServers\": {
            \"a__b\": {\"command\": \"x\"},
            \"evil\\u001b[2J\": {\"command\": \"x\"},
            \"remote\": {\"url\": \"https://example.com/mcp\"},
            \"envy\": {\"command\": \"x\", \"env\": {\"A B\": \"1\"}},
            \"empty\": {\"command\": \"\", \"args\": [\"x\"]},
            \"ok\": {\"command\": \"x\", \"env\": {\"LD_PRELOAD\": \"/tmp/x.so\"}}
        }}";
        let json = parse(text).unwrap();
        assert_eq!(json.servers.keys().collect::<Vec<_>>(), ["ok"]);
        let said = json.warnings.join("\n");
        assert!(said.contains("`a__b` holds `__`"), "{said}");
        assert!(said.contains("`evil\\u{1b}[2J` may hold only"), "{said}");
        assert!(said.contains("`remote` is an HTTP server (`url`)"), "{said}");
        assert!(
            said.contains("server `envy`: `env` must be an object whose keys are variable names"),
            "{said}"
        );
        assert!(
            said.contains("server `empty` has no `command`; it is left out"),
            "{said}"
        );
        assert!(!said.contains('\u{1b}'), "no raw escape reaches a message");
    }

    #[test]
    fn a_file_without_servers_is_one_sentence() {
        assert!(parse("[]").unwrap_err().contains("no \"mcpServers\" object"));
        assert!(parse("{").unwrap_err().starts_with("it is not valid JSON"));
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(&dir.path().join(FILE_NAME)), Ok(None));
        std::fs::write(dir.path().join(FILE_NAME), "{}").unwrap();
        let err = read(&dir.path().join(FILE_NAME)).unwrap_err();
        assert!(err.ends_with(".mcp.json: it has no \"mcpServers\" object; write {\"mcpServers\": {\"NAME\": {\"command\": …}}}"), "{err}");
    }
}
