//! `strata mcp add` and `strata mcp remove`: one `[mcp.servers.NAME]`
//! table added to or removed from the config file, the rest of the file
//! (comments, order, spacing) kept as written (`toml_edit`). The file is
//! replaced atomically and keeps its permissions.

use std::path::Path;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, TableLike, value};

/// `text` with `[mcp.servers.NAME]` added: `command`, `args`, and `env`
/// when given.
///
/// # Errors
/// One sentence when `name` is not letters, digits, `_` and `-`, a server
/// of that name exists, `text` is not valid TOML, or `mcp` / `mcp.servers`
/// is not a table.
pub fn add_server(
    text: &str,
    name: &str,
    command: &str,
    args: &[String],
    env: &[(String, String)],
) -> Result<String, String> {
    check_name(name)?;
    if let Some((bad, _)) = env.iter().find(|(k, _)| !is_variable_name(k)) {
        return Err(format!(
            "`{}` is not a variable name; --env takes NAME=VALUE with a NAME of ASCII letters, digits and `_`, not starting with a digit.",
            bad.escape_debug()
        ));
    }
    if command.trim().is_empty() {
        return Err(format!(
            "The MCP server `{name}` needs a command; give it after `--` (strata mcp add {name} -- COMMAND ARGS…)."
        ));
    }
    let mut doc = parse(text)?;
    let servers =
        servers_table(&mut doc, true)?.ok_or_else(|| "the config has no [mcp.servers] table".to_owned())?;
    if servers.contains_key(name) {
        return Err(format!(
            "An MCP server named `{name}` is in the config already; remove it first (strata mcp remove {name})."
        ));
    }
    let mut table = Table::new();
    table.insert("command", value(command));
    table.insert("args", value(args.iter().map(String::as_str).collect::<Array>()));
    if !env.is_empty() {
        let mut vars = InlineTable::new();
        for (k, v) in env {
            vars.insert(k, v.as_str().into());
        }
        table.insert("env", value(vars));
    }
    servers.insert(name, Item::Table(table));
    Ok(doc.to_string())
}

/// Checks an MCP server's name: ASCII letters, digits, `_` and `-`, and
/// no `__` (which separates a server from its tool in `server__tool`).
///
/// # Errors
/// One sentence naming the problem.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "The MCP server name `{}` may hold only ASCII letters, digits, `_` and `-`; choose another.",
            name.escape_debug()
        ));
    }
    if name.contains("__") {
        return Err(format!(
            "The MCP server name `{name}` holds `__`, which separates a server from its tool in `server__tool`; choose another."
        ));
    }
    if name == "builtin" {
        return Err(
            "The MCP server name `builtin` is where strata lists its own tools; choose another.".to_owned(),
        );
    }
    Ok(())
}

/// Whether `name` can name an environment variable (`[A-Za-z_][A-Za-z0-9_]*`).
#[must_use]
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` without `[mcp.servers.NAME]` (and its sub-tables).
///
/// # Errors
/// One sentence when there is no such server or `text` is not valid TOML.
pub fn remove_server(text: &str, name: &str) -> Result<String, String> {
    let mut doc = parse(text)?;
    let removed = servers_table(&mut doc, false)?.and_then(|servers| servers.remove(name));
    if removed.is_none() {
        return Err(format!(
            "There is no MCP server named `{name}` in the config; strata mcp list shows the configured servers."
        ));
    }
    Ok(doc.to_string())
}

/// Why the config file could not be changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FileEditError {
    /// The request or the file's content is wrong (one sentence): a bad
    /// name, a server that exists or does not, invalid TOML.
    #[error("{0}")]
    Invalid(String),
    /// The file cannot be read or written (one sentence).
    #[error("{0}")]
    Io(String),
}

/// [`add_server`] on the file at `path` (created with its directory when
/// missing).
///
/// # Errors
/// [`FileEditError::Invalid`] as [`add_server`]; [`FileEditError::Io`]
/// when the file cannot be read or written.
pub fn add_to_file(
    path: &Path,
    name: &str,
    command: &str,
    args: &[String],
    env: &[(String, String)],
) -> Result<(), FileEditError> {
    let text = read(path).map_err(FileEditError::Io)?;
    let edited = add_server(&text, name, command, args, env).map_err(FileEditError::Invalid)?;
    write(path, &edited).map_err(FileEditError::Io)?;
    // Values given with `--env` may be secrets: the file is then the user's only.
    if !env.is_empty() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
            FileEditError::Io(format!(
                "The config file {} keeps the server's environment but its mode could not be set to 0600 ({e}); set it yourself.",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// [`remove_server`] on the file at `path`.
///
/// # Errors
/// [`FileEditError::Invalid`] as [`remove_server`]; [`FileEditError::Io`]
/// when the file cannot be read or written.
pub fn remove_from_file(path: &Path, name: &str) -> Result<(), FileEditError> {
    let text = read(path).map_err(FileEditError::Io)?;
    let edited = remove_server(&text, name).map_err(FileEditError::Invalid)?;
    write(path, &edited).map_err(FileEditError::Io)
}

fn parse(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>().map_err(|e| {
        format!(
            "The config file is not valid TOML ({}); fix it first.",
            e.message().trim().replace('\n', " ")
        )
    })
}

/// `mcp.servers` of `doc`, made (as implicit tables, so only
/// `[mcp.servers.NAME]` headers appear) when `create`.
fn servers_table(doc: &mut DocumentMut, create: bool) -> Result<Option<&mut dyn TableLike>, String> {
    let not_table =
        |key: &str| format!("`{key}` in the config file is not a table; make it [{key}] to add MCP servers.");
    if !create && !doc.contains_key("mcp") {
        return Ok(None);
    }
    let mcp = doc
        .entry("mcp")
        .or_insert_with(implicit)
        .as_table_like_mut()
        .ok_or_else(|| not_table("mcp"))?;
    if !create && !mcp.contains_key("servers") {
        return Ok(None);
    }
    let servers = mcp
        .entry("servers")
        .or_insert_with(implicit)
        .as_table_like_mut()
        .ok_or_else(|| not_table("mcp.servers"))?;
    Ok(Some(servers))
}

fn implicit() -> Item {
    let mut table = Table::new();
    table.set_implicit(true);
    Item::Table(table)
}

fn read(path: &Path) -> Result<String, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(format!(
            "The config file {} cannot be read ({e}); check its permissions.",
            path.display()
        )),
    }
}

/// Writes `text` to a temporary file next to `path`, with `path`'s
/// permissions, and renames it over `path`.
fn write(path: &Path, text: &str) -> Result<(), String> {
    // A symlinked config is written where the link points.
    let resolved = std::fs::canonicalize(path).ok();
    let path = resolved.as_deref().unwrap_or(path);
    let fail = |e: std::io::Error| {
        format!(
            "The config file {} cannot be written ({e}); check its directory's permissions.",
            path.display()
        )
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("config.toml"),
        std::process::id()
    ));
    std::fs::write(&temp, text).map_err(fail)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, path).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        fail(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_holding_the_tool_separator_is_refused() {
        let e = add_server("", "a__b", "x", &[], &[]).unwrap_err();
        assert!(e.contains("`__`"), "{e}");
        let e = add_server("", "builtin", "x", &[], &[]).unwrap_err();
        assert!(e.contains("strata lists its own tools"), "{e}");
    }

    #[test]
    fn a_server_with_env_values_leaves_the_config_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        add_to_file(&path, "plain", "x", &[], &[]).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o644
        );
        add_to_file(&path, "keyed", "x", &[], &[("MY_API_KEY".into(), "zzz".into())]).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    use crate::config::Config;

    const BEFORE: &str = "# my settings\n[model]\nname = \"gpt-4o\"   # the usual\n\n[mcp.servers.time]\ncommand = \"mcp-server-time\"\n# keep UTC\nenv = { TZ = \"UTC\" }\n\n[tools]\napproval = \"ask\"\n";

    #[test]
    fn adding_keeps_the_rest_of_the_file_as_written() {
        let args = vec!["/srv/data".to_owned(), "it's".to_owned()];
        let env = vec![("API_KEY".to_owned(), "${FS_KEY}".to_owned())];
        let after = add_server(BEFORE, "fs", "mcp-server-filesystem", &args, &env).unwrap();
        // The new table goes after the other servers; nothing else moves.
        let added = "\n[mcp.servers.fs]\ncommand = \"mcp-server-filesystem\"\nargs = [\"/srv/data\", \"it's\"]\nenv = { API_KEY = \"${FS_KEY}\" }\n";
        let at = BEFORE.find("\n[tools]").unwrap();
        assert_eq!(after, format!("{}{added}{}", &BEFORE[..at], &BEFORE[at..]));
        let config = Config::parse(&after).unwrap().config;
        assert_eq!(config.mcp.servers["fs"].args, args);
        assert_eq!(config.mcp.servers["time"].env["TZ"], "UTC");
        assert_eq!(config.model.name.as_deref(), Some("gpt-4o"));
        let fresh = add_server("", "time", "mcp-server-time", &[], &[]).unwrap();
        assert_eq!(
            fresh,
            "[mcp.servers.time]\ncommand = \"mcp-server-time\"\nargs = []\n"
        );
    }

    #[test]
    fn adding_refuses_a_taken_or_bad_name_and_a_broken_file() {
        let taken = add_server(BEFORE, "time", "x", &[], &[]).unwrap_err();
        assert_eq!(
            taken,
            "An MCP server named `time` is in the config already; remove it first (strata mcp remove time)."
        );
        assert!(
            add_server("", "a b", "x", &[], &[])
                .unwrap_err()
                .contains("may hold only ASCII letters")
        );
        assert!(
            add_server("", "a", " ", &[], &[])
                .unwrap_err()
                .contains("needs a command")
        );
        assert!(
            add_server("[model\n", "a", "x", &[], &[])
                .unwrap_err()
                .starts_with("The config file is not valid TOML")
        );
        assert!(
            add_server("mcp = 3\n", "a", "x", &[], &[])
                .unwrap_err()
                .contains("`mcp` in the config file is not a table")
        );
    }

    #[test]
    fn removing_takes_out_the_one_table() {
        let after = remove_server(BEFORE, "time").unwrap();
        assert_eq!(
            after,
            "# my settings\n[model]\nname = \"gpt-4o\"   # the usual\n\n[tools]\napproval = \"ask\"\n"
        );
        let missing = remove_server(BEFORE, "web").unwrap_err();
        assert_eq!(
            missing,
            "There is no MCP server named `web` in the config; strata mcp list shows the configured servers."
        );
        assert!(remove_server("", "web").is_err());
        let round = remove_server(&add_server(BEFORE, "fs", "f", &[], &[]).unwrap(), "fs").unwrap();
        assert_eq!(
            Config::parse(&round).unwrap().config.mcp,
            Config::parse(BEFORE).unwrap().config.mcp
        );
    }

    #[test]
    fn files_are_replaced_with_their_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strata/config.toml");
        add_to_file(&path, "time", "mcp-server-time", &[], &[]).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        add_to_file(&path, "fs", "mcp-server-filesystem", &["/d".to_owned()], &[]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("[mcp.servers.time]") && text.contains("[mcp.servers.fs]"),
            "{text}"
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        remove_from_file(&path, "time").unwrap();
        assert!(!std::fs::read_to_string(&path).unwrap().contains("time"));
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn a_symlinked_config_is_written_through_and_env_names_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles/config.toml");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "# mine\n").unwrap();
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        add_to_file(&link, "time", "mcp-server-time", &[], &[]).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(
            std::fs::read_to_string(&real)
                .unwrap()
                .contains("[mcp.servers.time]")
        );
        let e = add_server("", "x", "y", &[], &[("A B".to_owned(), "1".to_owned())]).unwrap_err();
        assert!(e.starts_with("`A B` is not a variable name"), "{e}");
        let e = add_server("", "x", "y", &[], &[("A\u{1b}[2J".to_owned(), "1".to_owned())]).unwrap_err();
        assert!(!e.contains('\u{1b}'), "{e}");
        assert!(add_server("", "x", "y", &[], &[("GH_TOKEN".to_owned(), "1".to_owned())]).is_ok());
    }
}
