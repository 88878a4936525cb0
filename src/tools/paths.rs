//! Confinement of file tools (and `@path` attachments) to the workspace
//! root and `allow_paths` ([`Confinement`]), and the readers of a call's
//! arguments the file tools share.
//!
//! Invariant: every path a file tool opens went through [`resolve`], and
//! every attached file through [`Confinement::check`], whose
//! answer has its symbolic links resolved and lies under the workspace root,
//! one of `allow_paths` or (reading only) the session's spill directory. A
//! path that does not exist yet is judged by its nearest existing ancestor
//! (resolved) and the rest, which may not contain `..`.

use super::ToolEnv;
use serde_json::Value;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// What a tool means to do with a path: reading may also reach the spill
/// directory, writing may not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// `read_file`, `list_dir`, `glob`, `grep`.
    Read,
    /// `write_file`, `edit_file`.
    Write,
}

/// The directories a path may resolve under: the workspace root, `[tools]
/// allow_paths` and, for reading tools, the session's spill directory.
/// The one confinement the file tools and `@path` attachments share
/// (DESIGN §19 "Reads").
#[derive(Clone, Debug)]
pub struct Confinement {
    /// The workspace root, resolved.
    root: PathBuf,
    /// Every directory allowed, resolved (the root first).
    allowed: Vec<PathBuf>,
}

/// Why [`Confinement::check`] refused a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Breach {
    /// The path resolves outside every allowed directory: `real` is where
    /// it leads, `through_link` whether a symbolic link took it there.
    Outside {
        /// The resolved path.
        real: PathBuf,
        /// The path's spelling stays inside; a symbolic link leads out.
        through_link: bool,
    },
    /// The path cannot be resolved (empty, a link to nothing, `..` after a
    /// missing part, through a file, permission denied): one sentence.
    Invalid(String),
}

impl Confinement {
    /// The workspace `root` and `allow_paths`, resolved now (a directory
    /// that does not exist stays as given and so allows nothing real).
    #[must_use]
    pub fn new(root: &Path, allow_paths: &[PathBuf]) -> Self {
        let root = real_or_given(root);
        let mut allowed = vec![root.clone()];
        // A relative entry would depend on the directory strata was started
        // in; `doctor` and the tools' checks say it is ignored, and it is.
        allowed.extend(
            allow_paths
                .iter()
                .filter(|p| p.is_absolute())
                .map(|p| real_or_given(p)),
        );
        Self { root, allowed }
    }

    /// The confinement of `env`'s file tools for `intent`: reading may
    /// also reach the spill directory.
    #[must_use]
    pub fn of(env: &ToolEnv, intent: Intent) -> Self {
        let mut c = Self::new(&env.root, &env.allow_paths);
        if intent == Intent::Read {
            c.allowed.push(real_or_given(&env.spill_dir));
        }
        c
    }

    /// The workspace root, resolved.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of `path` (relative paths are taken against the
    /// root) when it lies under an allowed directory after its symbolic
    /// links are resolved. For a path that does not exist yet, the answer
    /// is its nearest existing ancestor, resolved, joined with the rest.
    ///
    /// # Errors
    /// [`Breach::Outside`] when it leads out (by `..`, as an absolute path
    /// or through a symbolic link); [`Breach::Invalid`] when it cannot be
    /// resolved.
    pub fn check(&self, path: &str) -> Result<PathBuf, Breach> {
        if path.trim().is_empty() {
            return Err(Breach::Invalid(
                "The path is empty; give a path relative to the workspace root, such as `src/main.rs`."
                    .to_owned(),
            ));
        }
        let joined = self.root.join(path);
        let real = real_path(&joined, path).map_err(Breach::Invalid)?;
        if self.allowed.iter().any(|dir| real.starts_with(dir)) {
            return Ok(real);
        }
        let lexical = normalize(&joined);
        let through_link = self.allowed.iter().any(|dir| lexical.starts_with(dir));
        Err(Breach::Outside { real, through_link })
    }
}

/// The real path of `path` (relative paths are taken against `env.root`)
/// when it may be used for `intent`: [`Confinement::check`] with `env`'s
/// directories.
///
/// # Errors
/// One sentence for the model when the path is empty, leaves the allowed
/// directories (by `..`, as an absolute path, or through a symbolic link),
/// has `..` after a part that does not exist, passes through a file, or is a
/// symbolic link to nothing.
pub fn resolve(env: &ToolEnv, path: &str, intent: Intent) -> Result<PathBuf, String> {
    let confinement = Confinement::of(env, intent);
    let (real, through_link) = match confinement.check(path) {
        Ok(real) => return Ok(real),
        Err(Breach::Invalid(why)) => return Err(why),
        Err(Breach::Outside { real, through_link }) => (real, through_link),
    };
    let how = if through_link {
        format!(
            "leads outside the workspace through a symbolic link (to {})",
            real.display()
        )
    } else {
        format!("is outside the workspace ({})", confinement.root().display())
    };
    let reach = match intent {
        Intent::Read => "file tools only reach files under the workspace root",
        Intent::Write => "file tools only change files under the workspace root",
    };
    Err(format!(
        "`{path}` {how}; {reach} (add a directory to [tools] allow_paths to allow it)."
    ))
}

/// `path` as the model should see it: relative to the workspace root when
/// inside it (`.` for the root itself), absolute otherwise.
#[must_use]
pub fn shown(env: &ToolEnv, path: &Path) -> String {
    shown_under(&real_root(env), path)
}

/// The workspace root, resolved (for many [`shown_under`] calls).
pub(super) fn real_root(env: &ToolEnv) -> PathBuf {
    real_or_given(&env.root)
}

/// [`shown`] with the root resolved once by the caller.
pub(super) fn shown_under(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// The canonical form of `dir`, or `dir` itself when it cannot be resolved
/// (it does not exist yet).
fn real_or_given(dir: &Path) -> PathBuf {
    fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// `joined` with its symbolic links resolved; see [`resolve`].
fn real_path(joined: &Path, asked: &str) -> Result<PathBuf, String> {
    match fs::canonicalize(joined) {
        Ok(real) => return Ok(real),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return Err(format!(
                "`{asked}` cannot be reached (permission denied); choose a path you may read."
            ));
        }
        Err(_) => {}
    }
    let components: Vec<Component<'_>> = joined.components().collect();
    let mut existing = PathBuf::new();
    let mut taken = 0;
    for component in &components {
        let next = existing.join(component);
        if fs::symlink_metadata(&next).is_err() {
            break;
        }
        existing = next;
        taken += 1;
    }
    let base = fs::canonicalize(&existing).map_err(|_| {
        format!("`{asked}` is a symbolic link to a path that does not exist; give the path of a real file.")
    })?;
    let rest = &components[taken..];
    if !rest.is_empty() && !base.is_dir() {
        return Err(format!(
            "`{asked}` goes through `{}`, which is a file, not a directory; give the path of a file inside a directory.",
            existing
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        ));
    }
    let mut real = base;
    for component in rest {
        match component {
            Component::Normal(name) => real.push(name),
            Component::CurDir => {}
            _ => {
                return Err(format!(
                    "`{asked}` has `..` after a directory that does not exist; give a path without `..`, relative to the workspace root."
                ));
            }
        }
    }
    Ok(real)
}

/// `path` with `.` and `..` removed by spelling alone (no file system).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The arguments of one call of tool `tool`, with `usage` (an example call
/// as JSON) quoted in every complaint.
pub(super) struct Args<'a> {
    tool: &'static str,
    usage: &'static str,
    value: &'a Value,
}

impl<'a> Args<'a> {
    /// The arguments `value` of a call of `tool`.
    pub(super) fn new(tool: &'static str, usage: &'static str, value: &'a Value) -> Self {
        Self { tool, usage, value }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.value.get(name).filter(|v| !v.is_null())
    }

    fn wrong(&self, name: &str, shape: &str) -> String {
        if self.value.is_object() && self.value.get(name).is_none() {
            format!("`{name}` is missing; call {} as {}.", self.tool, self.usage)
        } else if self.value.is_object() {
            format!("`{name}` must be {shape}; call {} as {}.", self.tool, self.usage)
        } else {
            format!(
                "The arguments must be a JSON object; call {} as {}.",
                self.tool, self.usage
            )
        }
    }

    /// A required string argument.
    pub(super) fn string(&self, name: &str) -> Result<&'a str, String> {
        self.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| self.wrong(name, "a string"))
    }

    /// An optional string argument.
    pub(super) fn opt_string(&self, name: &str) -> Result<Option<&'a str>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| self.wrong(name, "a string")),
        }
    }

    /// An optional positive integer (a whole number or a string of digits).
    pub(super) fn opt_positive(&self, name: &str) -> Result<Option<usize>, String> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        let n = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        match n.and_then(|n| usize::try_from(n).ok()) {
            Some(n) if n >= 1 => Ok(Some(n)),
            _ => Err(self.wrong(name, "a positive whole number")),
        }
    }

    /// An optional boolean (`true`/`false`, or the same as a string).
    pub(super) fn opt_bool(&self, name: &str) -> Result<Option<bool>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(_) => Err(self.wrong(name, "true or false")),
        }
    }
}
