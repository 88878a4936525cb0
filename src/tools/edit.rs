//! `write_file` and `edit_file`, the read log behind the changed-since-read
//! check, and undoing a change.
//!
//! Invariant: an existing file is only changed when the model read or wrote
//! it earlier in the session and its content is still what it was then; every
//! change returns a [`FileChange`] holding the previous bytes, and the log is
//! updated to the written content.

use super::paths::{Args, Intent, resolve, shown};
use super::{FileChange, ToolEnv, ToolOutput};
use crate::text::group_digits;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, Metadata};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::PoisonError;
use std::time::{Duration, SystemTime};

const WRITE_USAGE: &str = r#"{"path": "notes/todo.md", "content": "- first\n"}"#;
const EDIT_USAGE: &str = r#"{"path": "src/main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;", "replace_all": false}"#;
/// The longest a diff may take before `similar` falls back to a coarser one.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// What a file was when the model last read or wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Its size, bytes.
    pub size: u64,
    /// Its modification time, when the file system gives one.
    pub mtime: Option<SystemTime>,
    /// SHA-256 (hex) of its content; `None` for a file too large to hash
    /// when read (then size and mtime are compared).
    pub sha256: Option<String>,
}

/// What the model has read or written, per canonical path.
#[derive(Debug, Default)]
pub struct ReadLog {
    files: HashMap<PathBuf, Seen>,
}

impl ReadLog {
    /// Records that the file at canonical `path` was read or written as `seen`.
    pub fn record(&mut self, path: PathBuf, seen: Seen) {
        self.files.insert(path, seen);
    }

    /// What the file at canonical `path` was when last read or written.
    #[must_use]
    pub fn get(&self, path: &Path) -> Option<&Seen> {
        self.files.get(path)
    }
}

/// SHA-256 of `bytes`, hex.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Refuses to change `real` (now `current`, with `meta`) unless the log
/// says the model saw exactly this content.
fn check_unchanged(
    env: &ToolEnv,
    real: &Path,
    name: &str,
    current: &[u8],
    meta: &Metadata,
) -> Result<(), String> {
    let log = env.reads.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(seen) = log.get(real) else {
        return Err(format!(
            "`{name}` already exists and has not been read since strata started (reads are not remembered across runs); call read_file on it first, then change it."
        ));
    };
    let changed = seen.size != current.len() as u64
        || match &seen.sha256 {
            Some(sha) => *sha != sha256_hex(current),
            None => seen.mtime != meta.modified().ok(),
        };
    if changed {
        return Err(format!(
            "`{name}` changed on disk since it was last read; call read_file on it again and make the change on its current content."
        ));
    }
    Ok(())
}

/// Records `real` as just written with `content`.
fn record_written(env: &ToolEnv, real: &Path, content: &[u8]) {
    let mtime = fs::metadata(real).ok().and_then(|m| m.modified().ok());
    env.reads.lock().unwrap_or_else(PoisonError::into_inner).record(
        real.to_path_buf(),
        Seen {
            size: content.len() as u64,
            mtime,
            sha256: Some(sha256_hex(content)),
        },
    );
}

/// A unified diff (`--- a/name`, `+++ b/name`, 3 lines of context).
fn unified_diff(name: &str, before: &str, after: &str) -> String {
    similar::TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

fn write_error(name: &str, e: &io::Error) -> String {
    format!("`{name}` could not be written ({e}); check the path and its permissions and try again.")
}

fn not_regular(name: &str) -> String {
    format!(
        "`{name}` is not a regular file (a device, pipe or socket); file tools change regular files only."
    )
}

fn lines_of(text: &str) -> u64 {
    text.lines().count() as u64
}

/// `write_file {path, content}`: writes `content` to `path` in the
/// workspace (or `allow_paths`), creating missing parent directories. An
/// existing file must have been read (or written) in this session and be
/// unchanged since. The output carries the diff and the [`FileChange`].
pub fn write_file(env: &ToolEnv, args: &Value) -> ToolOutput {
    match write(env, args, true) {
        Ok(out) => out,
        Err(e) => ToolOutput::error(e),
    }
}

fn write(env: &ToolEnv, args: &Value, apply: bool) -> Result<ToolOutput, String> {
    let a = Args::new("write_file", WRITE_USAGE, args);
    let path = a.string("path")?;
    let content = a.string("content")?;
    let real = resolve(env, path, Intent::Write)?;
    let name = shown(env, &real);
    let before = match fs::metadata(&real) {
        Ok(meta) if meta.is_dir() => {
            return Err(format!(
                "`{name}` is a directory; give the path of a file to write."
            ));
        }
        Ok(meta) if !meta.is_file() => return Err(not_regular(&name)),
        Ok(meta) => {
            let bytes = fs::read(&real).map_err(|e| write_error(&name, &e))?;
            check_unchanged(env, &real, &name, &bytes, &meta)?;
            Some(bytes)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(write_error(&name, &e)),
    };
    if !apply {
        let old_text = before.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
        let mut out = ToolOutput::ok(String::new());
        out.diff = Some(unified_diff(&name, &old_text, content));
        return Ok(out);
    }
    match &before {
        Some(_) => fs::write(&real, content).map_err(|e| write_error(&name, &e))?,
        None => create_new(&real, content.as_bytes()).map_err(|e| write_error(&name, &e))?,
    }
    record_written(env, &real, content.as_bytes());
    let (lines, bytes) = (lines_of(content), content.len() as u64);
    let size = format!(
        "{} line{}, {} byte{}",
        group_digits(lines),
        if lines == 1 { "" } else { "s" },
        group_digits(bytes),
        if bytes == 1 { "" } else { "s" }
    );
    let text = match &before {
        None => format!("Created `{name}` ({size})."),
        Some(old) if old.as_slice() == content.as_bytes() => {
            format!("`{name}` already had this content ({size}); nothing changed.")
        }
        Some(old) => format!(
            "Wrote `{name}` ({size}), replacing its previous {} bytes.",
            group_digits(old.len() as u64)
        ),
    };
    let old_text = before.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
    let mut out = ToolOutput::ok(text);
    out.diff = Some(unified_diff(&name, &old_text, content));
    out.change = Some(FileChange {
        path: real,
        before,
        after_sha256: sha256_hex(content.as_bytes()),
    });
    Ok(out)
}

/// Creates `real` (and its missing parents) with `content`, refusing to
/// replace anything that appeared there meanwhile (a file or a link).
fn create_new(real: &Path, content: &[u8]) -> io::Result<()> {
    if let Some(parent) = real.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut file = fs::OpenOptions::new().write(true).create_new(true).open(real)?;
    file.write_all(content)
}

/// `edit_file {path, old_string, new_string, replace_all?}`: replaces the
/// exact text `old_string` with `new_string` in a file read in this session
/// and unchanged since; `old_string` must occur exactly once unless
/// `replace_all`. (A file with CRLF line breaks also matches an
/// `old_string` written with `\n`.) The output holds a unified diff, also
/// in `diff`, and the [`FileChange`].
pub fn edit_file(env: &ToolEnv, args: &Value) -> ToolOutput {
    match edit(env, args, true) {
        Ok(out) => out,
        Err(e) => ToolOutput::error(e),
    }
}

fn edit(env: &ToolEnv, args: &Value, apply: bool) -> Result<ToolOutput, String> {
    let a = Args::new("edit_file", EDIT_USAGE, args);
    let path = a.string("path")?;
    let old = a.string("old_string")?;
    let new = a.string("new_string")?;
    let replace_all = a.opt_bool("replace_all")?.unwrap_or(false);
    if old.is_empty() {
        return Err(
            "`old_string` is empty; give the exact text to replace (use write_file to create or overwrite a whole file)."
                .to_owned(),
        );
    }
    if old == new {
        return Err("`old_string` and `new_string` are the same, so nothing would change; give the new text as `new_string`.".to_owned());
    }
    let real = resolve(env, path, Intent::Write)?;
    let name = shown(env, &real);
    let meta = match fs::metadata(&real) {
        Ok(meta) if meta.is_dir() => {
            return Err(format!(
                "`{name}` is a directory; give the path of a file to edit."
            ));
        }
        Ok(meta) if !meta.is_file() => return Err(not_regular(&name)),
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!(
                "`{name}` does not exist; create it with write_file, or find the right path with glob."
            ));
        }
        Err(e) => return Err(write_error(&name, &e)),
    };
    let bytes = fs::read(&real).map_err(|e| write_error(&name, &e))?;
    check_unchanged(env, &real, &name, &bytes, &meta)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| format!("`{name}` is not UTF-8 text; edit_file changes text files only."))?;
    let (old, new) = match_line_breaks(text, old, new);
    let count = text.matches(old.as_str()).count();
    if count == 0 {
        return Err(format!(
            "`old_string` does not occur in `{name}`; it must match the file exactly, spaces and indentation included, so call read_file to see the current text and copy it from there."
        ));
    }
    if count > 1 && !replace_all {
        return Err(format!(
            "`old_string` occurs {count} times in `{name}`; include more of the surrounding lines so it matches once, or set `replace_all` to true to change every occurrence."
        ));
    }
    let after = if replace_all {
        text.replace(old.as_str(), &new)
    } else {
        text.replacen(old.as_str(), &new, 1)
    };
    if !apply {
        let mut out = ToolOutput::ok(String::new());
        out.diff = Some(unified_diff(&name, text, &after));
        return Ok(out);
    }
    fs::write(&real, &after).map_err(|e| write_error(&name, &e))?;
    record_written(env, &real, after.as_bytes());
    let diff = unified_diff(&name, text, &after);
    let what = if count == 1 {
        "1 occurrence".to_owned()
    } else {
        format!("{count} occurrences")
    };
    let mut out = ToolOutput::ok(format!("Edited `{name}`: replaced {what}.\n\n{diff}"));
    out.diff = Some(diff);
    out.change = Some(FileChange {
        path: real,
        before: Some(bytes),
        after_sha256: sha256_hex(after.as_bytes()),
    });
    Ok(out)
}

/// The diff `write_file` or `edit_file` (`name`) would make with `args`,
/// without writing anything: what the approval overlay shows.
///
/// # Errors
/// The sentence the call itself would fail with (the file changed since it
/// was read, `old_string` matches twice, ...), or one naming a tool that
/// changes no file.
pub fn preview(env: &ToolEnv, name: &str, args: &Value) -> Result<String, String> {
    let out = match name {
        "write_file" => write(env, args, false)?,
        "edit_file" => edit(env, args, false)?,
        other => return Err(format!("`{other}` changes no file")),
    };
    Ok(out.diff.unwrap_or_default())
}

/// `old` and `new` with `\n` turned into `\r\n` when the file uses CRLF and
/// `old` as given does not occur; otherwise as given.
fn match_line_breaks(text: &str, old: &str, new: &str) -> (String, String) {
    let crlf = text.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") && !text.contains(old);
    if crlf {
        let to_crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
        (to_crlf(old), to_crlf(new))
    } else {
        (old.to_owned(), new.to_owned())
    }
}

/// Undoes `change`: writes back its `before` bytes, or removes the file it
/// created, only when the file still holds what the change wrote (its
/// SHA-256 is `after_sha256`). Returns a one-line description.
///
/// # Errors
/// One sentence when the file changed since (or is gone), or cannot be
/// written or removed; nothing is changed then.
pub fn undo(change: &FileChange) -> Result<String, String> {
    let shown = change.path.display();
    let current = match fs::read(&change.path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!(
                "{shown} no longer exists, so the change cannot be undone; restore the file by hand if it is needed."
            ));
        }
        Err(e) => {
            return Err(format!(
                "{shown} could not be read ({e}); check its permissions and try again."
            ));
        }
    };
    if sha256_hex(&current) != change.after_sha256 {
        return Err(format!(
            "{shown} has changed since this change was made, so undoing it would lose the later changes; undo those first or restore the file by hand."
        ));
    }
    match &change.before {
        Some(before) => {
            fs::write(&change.path, before).map_err(|e| {
                format!("{shown} could not be restored ({e}); check its permissions and try again.")
            })?;
            Ok(format!(
                "Restored {shown} to its content before the change ({} bytes).",
                group_digits(before.len() as u64)
            ))
        }
        None => {
            fs::remove_file(&change.path).map_err(|e| {
                format!("{shown} could not be removed ({e}); check its permissions and try again.")
            })?;
            Ok(format!("Removed {shown}, which the change had created."))
        }
    }
}
