//! What a server process gets: its environment, its program found on
//! `PATH`, and the command line the supervisor runs.
//!
//! A server inherits only [`BASE_VARIABLES`] (and `LC_*`) from strata, plus
//! the names the spec passes through; the spec's own variables are set on
//! top. A variable whose name holds one of [`SECRET_WORDS`] is inherited
//! only when named.

use super::ServerSpec;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The variables every server inherits when strata has them (and every
/// `LC_*` one).
pub const BASE_VARIABLES: &[&str] = &["PATH", "HOME", "USER", "LANG", "TERM", "TMPDIR"];

/// Words that mark a variable as a secret (its name holds one, any case).
pub const SECRET_WORDS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD"];

fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|w| upper.contains(w))
}

/// The environment of `spec`'s server, made from `vars` (strata's own): the
/// base variables and `LC_*` that are not secrets, the names in
/// `spec.inherit`, then `spec.env` set over them. Sorted by name; each name
/// once.
#[must_use]
pub fn minimal_env(
    spec: &ServerSpec,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut env: std::collections::BTreeMap<OsString, OsString> = vars
        .into_iter()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            let base = BASE_VARIABLES.contains(&name) || name.starts_with("LC_");
            (base && !is_secret(name)) || spec.inherit.iter().any(|n| n == name)
        })
        .collect();
    for (name, value) in &spec.env {
        env.insert(name.into(), value.into());
    }
    env.into_iter().collect()
}

/// The program `command` names: a path with a `/` (relative to `cwd`), or
/// the first executable file of that name on `path` (a `PATH` value).
///
/// # Errors
/// One sentence naming `server` when the command is empty, not found, or
/// not an executable file.
pub fn resolve_program(
    server: &str,
    command: &str,
    path: Option<&str>,
    cwd: &Path,
) -> Result<PathBuf, String> {
    if command.trim().is_empty() {
        return Err(format!(
            "The MCP server `{server}` has no command to run; give it one (strata mcp add {server} -- COMMAND ARGS…)."
        ));
    }
    if command.contains('/') {
        let file = cwd.join(command);
        return match std::fs::metadata(&file) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(file),
            Ok(_) => Err(format!(
                "The command `{command}` of MCP server `{server}` is not an executable file; make it executable (chmod +x) or fix the path."
            )),
            Err(_) => Err(format!(
                "The command `{command}` of MCP server `{server}` does not exist; install the server or fix the path."
            )),
        };
    }
    for dir in path.unwrap_or_default().split(':').filter(|d| !d.is_empty()) {
        let file = cwd.join(dir).join(command);
        if let Ok(m) = std::fs::metadata(&file)
            && m.is_file()
            && m.permissions().mode() & 0o111 != 0
        {
            return Ok(file);
        }
    }
    Err(format!(
        "The command `{command}` of MCP server `{server}` was not found on PATH; install the server or give the command's full path."
    ))
}

/// The `bash -c` text that replaces bash by `program args…`, each word
/// single-quoted: `exec -- 'program' 'arg'`.
#[must_use]
pub fn command_line(program: &Path, args: &[String]) -> String {
    let mut line = String::from("exec --");
    for word in std::iter::once(program.to_string_lossy().as_ref()).chain(args.iter().map(String::as_str)) {
        line.push_str(" '");
        line.push_str(&word.replace('\'', r"'\''"));
        line.push('\'');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(n, v)| (n.into(), v.into())).collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_the_base_set_and_named_variables_are_inherited() {
        let mut spec = ServerSpec::new("s", "srv", vec![]);
        spec.inherit = vec!["GITHUB_TOKEN".into(), "GITHUB_HOST".into()];
        spec.env = vec![("TZ".into(), "UTC".into()), ("HOME".into(), "/srv".into())];
        let env = minimal_env(
            &spec,
            os(&[
                ("PATH", "/bin"),
                ("HOME", "/h"),
                ("LC_ALL", "C"),
                ("LC_API_KEY", "k"),
                ("OPENAI_API_KEY", "sk"),
                ("GITHUB_TOKEN", "t"),
                ("GITHUB_HOST", "g"),
                ("EDITOR", "vi"),
                ("SSH_AUTH_SOCK", "/s"),
            ]),
        );
        assert_eq!(
            names(&env),
            ["GITHUB_HOST", "GITHUB_TOKEN", "HOME", "LC_ALL", "PATH", "TZ"]
        );
        assert!(env.contains(&("HOME".into(), "/srv".into())), "env wins");
    }

    #[test]
    fn programs_are_found_on_path_or_refused_in_one_sentence() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = bin.join("srv");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plain = bin.join("plain");
        std::fs::write(&plain, "x").unwrap();
        let path = format!("/nonexistent:{}", bin.display());
        assert_eq!(
            resolve_program("s", "srv", Some(&path), dir.path()),
            Ok(exe.clone())
        );
        assert_eq!(resolve_program("s", "bin/srv", None, dir.path()), Ok(exe));
        let missing = resolve_program("time", "nope", Some(&path), dir.path()).unwrap_err();
        assert!(
            missing.contains("`time`") && missing.contains("not found on PATH"),
            "{missing}"
        );
        let plain = resolve_program("time", "bin/plain", None, dir.path()).unwrap_err();
        assert!(plain.contains("not an executable file"), "{plain}");
        let none = resolve_program("time", "./bin/none", None, dir.path()).unwrap_err();
        assert!(none.contains("does not exist"), "{none}");
        assert!(
            resolve_program("time", " ", None, dir.path())
                .unwrap_err()
                .contains("no command")
        );
    }

    #[test]
    fn the_command_line_quotes_every_word() {
        let line = command_line(Path::new("/opt/my srv"), &["it's".into(), "$HOME".into()]);
        assert_eq!(line, r"exec -- '/opt/my srv' 'it'\''s' '$HOME'");
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(command_line(
                Path::new("/bin/echo"),
                &["it's".into(), "$HOME".into()],
            ))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's $HOME\n");
    }
}
