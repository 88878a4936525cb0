//! Editing a text in the user's own editor (`$VISUAL`, then `$EDITOR`,
//! then `vi`): the text goes to a private temporary file (mode 0600,
//! removed afterwards), the editor runs on the terminal, and the file's
//! text comes back. The terminal loop suspends the full screen around
//! [`edit`]; nothing else in the app calls it. Used by the compression
//! preview's `E`.

use crate::runtime::service::EnvLookup;
use std::io::Write as _;
use std::path::PathBuf;

/// Why the editor gave nothing back.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    /// The temporary file could not be written or read back.
    #[error(
        "cannot use a temporary file for the editor ({0}); check that the temporary directory is writable"
    )]
    File(std::io::Error),
    /// The editor could not be started.
    #[error("cannot start the editor '{program}' ({error}); set $EDITOR to an editor on your PATH")]
    Start {
        /// What was run.
        program: String,
        /// Why it failed.
        error: std::io::Error,
    },
    /// The editor exited with an error status.
    #[error("the editor '{0}' exited with an error; the summary is unchanged")]
    Failed(String),
    /// The file was left empty.
    #[error("the edited text was empty; the summary is unchanged")]
    Empty,
}

/// The editor command: `$VISUAL`, `$EDITOR` or `vi`, split at spaces
/// (`code --wait` runs `code` with `--wait`).
fn command(env: &EnvLookup) -> Vec<String> {
    let chosen = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|k| env(k).filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_owned());
    chosen.split_whitespace().map(str::to_owned).collect()
}

/// A temporary file holding `text`, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn create(text: &str) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!("strata-{}-{nanos}.md", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        Ok(Self(path))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Lets the user edit `text` in their editor and returns what they saved
/// (its final newline dropped). Blocks until the editor exits; the caller
/// has handed it the terminal.
///
/// # Errors
/// [`EditorError`] when the file cannot be used, the editor cannot start
/// or fails, or the text was emptied.
pub fn edit(text: &str, env: &EnvLookup) -> Result<String, EditorError> {
    let file = TempFile::create(text).map_err(EditorError::File)?;
    let parts = command(env);
    let Some((program, args)) = parts.split_first() else {
        return Err(EditorError::Failed(String::new()));
    };
    let program = program.clone();
    let status = std::process::Command::new(&program)
        .args(args)
        .arg(&file.0)
        .status()
        .map_err(|error| EditorError::Start {
            program: program.clone(),
            error,
        })?;
    if !status.success() {
        return Err(EditorError::Failed(program));
    }
    let edited = std::fs::read_to_string(&file.0).map_err(EditorError::File)?;
    let edited = edited.trim_end_matches('\n');
    if edited.trim().is_empty() {
        return Err(EditorError::Empty);
    }
    Ok(edited.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;
    use std::sync::Arc;

    /// An "editor" script that appends a line to the file it is given.
    fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    fn env_with(editor: String) -> EnvLookup {
        Arc::new(move |k: &str| (k == "EDITOR").then(|| editor.clone()))
    }

    #[test]
    fn the_editor_changes_the_text_and_the_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let editor = script(
            dir.path(),
            "append.sh",
            "printf 'Keep the tests.\\n' >> \"$1\"; echo \"$1\" > \"$(dirname \"$0\")/seen\"",
        );
        let out = edit("Goal: loops.", &env_with(editor)).unwrap();
        assert_eq!(out, "Goal: loops.\nKeep the tests.");
        let seen = std::fs::read_to_string(dir.path().join("seen")).unwrap();
        assert!(
            !std::path::Path::new(seen.trim()).exists(),
            "the temporary file is gone"
        );
    }

    #[test]
    fn a_failing_or_emptying_editor_changes_nothing_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let failing = script(dir.path(), "fail.sh", "exit 3");
        let err = edit("Goal", &env_with(failing)).unwrap_err();
        assert!(
            err.to_string()
                .contains("exited with an error; the summary is unchanged"),
            "{err}"
        );
        let emptying = script(dir.path(), "empty.sh", ": > \"$1\"");
        assert!(matches!(
            edit("Goal", &env_with(emptying)),
            Err(EditorError::Empty)
        ));
        let missing = env_with("/nonexistent/editor --wait".into());
        let err = edit("Goal", &missing).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot start the editor '/nonexistent/editor'"),
            "{err}"
        );
    }
}
