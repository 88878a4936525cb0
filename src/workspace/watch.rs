//! Watches the files a session's system prompt was built from and reports,
//! debounced, which prompt layers they belong to, so the UI can mark those
//! layers stale (DESIGN §9 "Watcher"). It never rebuilds a prompt itself:
//! `/reload` or `/new` does that.
//!
//! Owns one `notify` watcher and its debouncer thread; events go to a sink
//! the caller passes in (a closure run on that thread), so nothing here ever
//! blocks the caller. Invariants: only directories are watched (so editors
//! that save by writing a new file and renaming it over the old one are still
//! seen), never recursively except skills directories; reads and other access
//! events are ignored; a path that belongs to no layer is never reported.
//!
//! What is watched, built by [`WatchPlan::new`] from the frozen prompt's
//! layer table:
//! - the directory of every file source of every layer (a source listed as
//!   `missing` is watched too, so creating it is noticed);
//! - the workspace directories from the root down to the working directory,
//!   for new instruction files (`AGENTS.md`, `AGENTS.override.md`,
//!   `CLAUDE.md`, `.strata.md`, `STRATA.md`; `.cursorrules` and
//!   `.cursor/rules/*.mdc` at the root);
//! - the config directory, for `SOUL.md`, `IDENTITY.md`, `TOOLS.md`,
//!   `MEMORY.md`, `USER.md` where the prompt mode uses them;
//! - in full mode, `<config>/skills` and `<workspace>/.strata/skills`,
//!   recursively.
//!
//! Callers: the TUI's driver when a session opens (and again after a
//! `/reload`, `/new` or `/resume`, with the new prompt); tests.

use crate::domain::{LayerInfo, LayerName, PromptMode, SystemPrompt};
use notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// How long a path must stay quiet before its change is reported.
pub const WATCH_DEBOUNCE: Duration = Duration::from_millis(300);

/// Instruction-file names looked for in every directory of the chain.
const PROJECT_NAMES: &[&str] = &[
    "AGENTS.md",
    "AGENTS.override.md",
    "CLAUDE.md",
    ".strata.md",
    "STRATA.md",
];

/// The watcher could not be started. Nothing else about watching is fatal.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The operating system refused a watcher (e.g. the inotify limit is
    /// reached). Retrying only helps once other watchers are closed.
    #[error(
        "The file watcher could not start ({0}); edits to instruction, memory and skill files will not be flagged until strata is restarted."
    )]
    Start(#[source] notify::Error),
}

/// What the watcher reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// Files of these layers changed, were created or were removed.
    Changed(LayerChange),
    /// The watcher hit an error (e.g. a watched directory was removed or
    /// events overflowed); a sentence for the status line. Watching goes on
    /// for the other directories.
    Failed(String),
}

/// One debounced batch of relevant changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerChange {
    /// The layers the changed paths feed, never empty.
    pub layers: BTreeSet<LayerName>,
    /// The changed paths that belong to those layers, sorted, deduplicated.
    pub paths: Vec<PathBuf>,
}

/// Where a session's prompt inputs live.
#[derive(Clone, Debug)]
pub struct WatchDirs {
    /// The workspace root (see [`super::workspace_root`]).
    pub root: PathBuf,
    /// The working directory the session started in (at or below `root`).
    pub cwd: PathBuf,
    /// The config directory (`SOUL.md`, `MEMORY.md`, `skills/`, ...).
    pub config_dir: PathBuf,
}

/// Which directories to watch and which layer a changed path belongs to.
/// Pure data once built; [`WatchPlan::layer_of`] does no I/O.
#[derive(Clone, Debug, Default)]
pub struct WatchPlan {
    /// Exact file sources of the layer table, by normalised path.
    files: BTreeMap<PathBuf, LayerName>,
    /// Directories searched for new instruction files.
    chain: Vec<PathBuf>,
    root: PathBuf,
    config_dir: PathBuf,
    /// Config-directory file names and the layer each feeds, for this mode.
    config_names: Vec<(&'static str, LayerName)>,
    /// Skills directories (empty unless the mode lists skills).
    skills_dirs: Vec<PathBuf>,
    project: bool,
}

/// `path` with its directory resolved (symbolic links, `..`), when it
/// exists; the file name is kept as it is, so a missing file still maps.
fn normalise(path: &Path) -> PathBuf {
    if let Ok(real) = fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => {
            fs::canonicalize(dir).map_or_else(|_| path.to_path_buf(), |d| d.join(name))
        }
        _ => path.to_path_buf(),
    }
}

impl WatchPlan {
    /// A plan for the prompt whose layer table is `layers`, built in `mode`.
    /// Sources whose path starts with `builtin:` are strata's own text and
    /// are not watched.
    #[must_use]
    pub fn new(layers: &[LayerInfo], mode: PromptMode, dirs: &WatchDirs) -> Self {
        let root = normalise(&dirs.root);
        let cwd = normalise(&dirs.cwd);
        let config_dir = normalise(&dirs.config_dir);
        let mut files = BTreeMap::new();
        for layer in layers {
            for source in &layer.sources {
                if source.path.starts_with("builtin:") {
                    continue;
                }
                files.insert(normalise(Path::new(&source.path)), layer.name);
            }
        }
        let full = mode == PromptMode::Full;
        let some = mode != PromptMode::None;
        let mut config_names = vec![
            ("SOUL.md", LayerName::Identity),
            ("IDENTITY.md", LayerName::Identity),
        ];
        if some {
            config_names.push(("TOOLS.md", LayerName::Guidelines));
        }
        if full {
            config_names.push(("MEMORY.md", LayerName::Memory));
            config_names.push(("USER.md", LayerName::Memory));
        }
        let skills_dirs = if full {
            vec![config_dir.join("skills"), root.join(".strata").join("skills")]
        } else {
            Vec::new()
        };
        Self {
            files,
            chain: if some {
                super::chain(&root, &cwd)
            } else {
                Vec::new()
            },
            root,
            config_dir,
            config_names,
            skills_dirs,
            project: some,
        }
    }

    /// The layers a change on disk can mark stale under this plan: those
    /// of its files, of the config-directory names, `skills` when skills
    /// directories are watched and `project` when instruction files are.
    #[must_use]
    pub fn layers(&self) -> BTreeSet<LayerName> {
        let mut layers: BTreeSet<LayerName> = self.files.values().copied().collect();
        layers.extend(self.config_names.iter().map(|(_, l)| *l));
        if !self.skills_dirs.is_empty() {
            layers.insert(LayerName::Skills);
        }
        if self.project {
            layers.insert(LayerName::Project);
        }
        layers
    }

    /// [`WatchPlan::new`] for a frozen prompt (its layers and mode).
    #[must_use]
    pub fn for_prompt(prompt: &SystemPrompt, dirs: &WatchDirs) -> Self {
        Self::new(&prompt.layers, prompt.fingerprint.mode, dirs)
    }

    /// The layer a changed `path` feeds, if any. `path` is as the watcher
    /// reports it (under a directory of [`WatchPlan::directories`]).
    #[must_use]
    pub fn layer_of(&self, path: &Path) -> Option<LayerName> {
        if let Some(layer) = self.files.get(path) {
            return Some(*layer);
        }
        if self.skills_dirs.iter().any(|d| path.starts_with(d)) {
            return Some(LayerName::Skills);
        }
        let dir = path.parent()?;
        let name = path.file_name()?.to_str()?;
        if self.project {
            let in_chain = self.chain.iter().any(|d| d == dir);
            if in_chain && PROJECT_NAMES.contains(&name) {
                return Some(LayerName::Project);
            }
            if dir == self.root && name == ".cursorrules" {
                return Some(LayerName::Project);
            }
            if dir == self.root.join(".cursor").join("rules") && name.ends_with(".mdc") {
                return Some(LayerName::Project);
            }
        }
        if dir == self.config_dir {
            return self
                .config_names
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, layer)| *layer);
        }
        None
    }

    /// The directories to watch, each with whether to watch it recursively,
    /// deduplicated. Directories that do not exist are left out by
    /// [`WorkspaceWatcher::start`].
    #[must_use]
    pub fn directories(&self) -> Vec<(PathBuf, bool)> {
        let mut dirs: BTreeMap<PathBuf, bool> = BTreeMap::new();
        let mut add = |dir: PathBuf, recursive: bool| {
            let entry = dirs.entry(dir).or_insert(recursive);
            *entry |= recursive;
        };
        for file in self.files.keys() {
            if let Some(dir) = file.parent() {
                add(dir.to_path_buf(), false);
            }
        }
        for dir in &self.chain {
            add(dir.clone(), false);
        }
        if self.project {
            add(self.root.join(".cursor").join("rules"), false);
        }
        add(self.config_dir.clone(), false);
        for dir in &self.skills_dirs {
            add(dir.clone(), true);
            if let Some(parent) = dir.parent() {
                add(parent.to_path_buf(), false);
            }
        }
        dirs.into_iter().collect()
    }

    /// The relevant part of one debounced batch: the layers and paths of the
    /// events that change something (reads and other access are ignored).
    fn classify(&self, events: &[notify_debouncer_full::DebouncedEvent]) -> Option<LayerChange> {
        let mut layers = BTreeSet::new();
        let mut paths = BTreeSet::new();
        for event in events {
            if matches!(event.event.kind, EventKind::Access(_)) {
                continue;
            }
            for path in &event.event.paths {
                if let Some(layer) = self.layer_of(path) {
                    layers.insert(layer);
                    paths.insert(path.clone());
                }
            }
        }
        (!layers.is_empty()).then(|| LayerChange {
            layers,
            paths: paths.into_iter().collect(),
        })
    }
}

/// A running watcher. Dropping it stops watching; the sink is not called
/// after the debouncer thread notices (within one tick, ~75 ms).
pub struct WorkspaceWatcher {
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
    watched: Vec<PathBuf>,
}

impl std::fmt::Debug for WorkspaceWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceWatcher")
            .field("watched", &self.watched)
            .finish()
    }
}

impl WorkspaceWatcher {
    /// Starts watching what `plan` names. `sink` runs on the watcher's own
    /// thread once per debounced batch ([`WATCH_DEBOUNCE`]) that touches a
    /// layer, and on errors; it must not block for long (forward the event
    /// to the UI's channel and return).
    ///
    /// # Errors
    /// [`WatchError::Start`] when the operating system gives no watcher. A
    /// directory that cannot be watched (absent, no permission) is skipped.
    pub fn start(
        plan: WatchPlan,
        mut sink: impl FnMut(WatchEvent) + Send + 'static,
    ) -> Result<Self, WatchError> {
        let dirs = plan.directories();
        let mut debouncer = new_debouncer(WATCH_DEBOUNCE, None, move |result: DebounceEventResult| match result {
            Ok(events) => {
                if let Some(change) = plan.classify(&events) {
                    sink(WatchEvent::Changed(change));
                }
            }
            Err(errors) => {
                for e in errors {
                    sink(WatchEvent::Failed(format!(
                        "The file watcher reported a problem ({e}); use /reload if an instruction file changed."
                    )));
                }
            }
        })
        .map_err(WatchError::Start)?;
        let mut watched = Vec::new();
        for (dir, recursive) in dirs {
            if !dir.is_dir() {
                continue;
            }
            let mode = if recursive {
                RecursiveMode::Recursive
            } else {
                RecursiveMode::NonRecursive
            };
            if debouncer.watch(&dir, mode).is_ok() {
                watched.push(dir);
            }
        }
        Ok(Self {
            _debouncer: debouncer,
            watched,
        })
    }

    /// [`WorkspaceWatcher::start`] with a standard channel as the sink.
    ///
    /// # Errors
    /// As [`WorkspaceWatcher::start`].
    pub fn with_channel(plan: WatchPlan) -> Result<(Self, mpsc::Receiver<WatchEvent>), WatchError> {
        let (tx, rx) = mpsc::channel();
        let watcher = Self::start(plan, move |event| {
            // A closed receiver means the UI is gone; nothing to tell.
            let _ = tx.send(event);
        })?;
        Ok((watcher, rx))
    }

    /// The directories actually being watched.
    #[must_use]
    pub fn watched(&self) -> &[PathBuf] {
        &self.watched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SourceInfo, SourceStatus, Tier};

    fn layer(name: LayerName, paths: &[&str]) -> LayerInfo {
        LayerInfo {
            name,
            tier: name.tier(),
            start: 0,
            end: 0,
            chars: 0,
            tokens: 0,
            sources: paths
                .iter()
                .map(|p| SourceInfo {
                    path: (*p).to_owned(),
                    status: SourceStatus::Found,
                    original_chars: 0,
                    kept_chars: 0,
                })
                .collect(),
        }
    }

    fn dirs() -> WatchDirs {
        WatchDirs {
            root: PathBuf::from("/nonexistent-ws"),
            cwd: PathBuf::from("/nonexistent-ws/sub"),
            config_dir: PathBuf::from("/nonexistent-cfg"),
        }
    }

    #[test]
    fn paths_map_to_the_layers_that_read_them() {
        let layers = [
            layer(
                LayerName::Identity,
                &["builtin:identity.md", "/nonexistent-cfg/SOUL.md"],
            ),
            layer(LayerName::Project, &["/nonexistent-ws/AGENTS.md"]),
        ];
        let plan = WatchPlan::new(&layers, PromptMode::Full, &dirs());
        let p = |s: &str| plan.layer_of(Path::new(s));
        assert_eq!(p("/nonexistent-ws/AGENTS.md"), Some(LayerName::Project));
        assert_eq!(p("/nonexistent-ws/sub/CLAUDE.md"), Some(LayerName::Project));
        assert_eq!(p("/nonexistent-ws/.cursor/rules/x.mdc"), Some(LayerName::Project));
        assert_eq!(p("/nonexistent-cfg/SOUL.md"), Some(LayerName::Identity));
        assert_eq!(p("/nonexistent-cfg/MEMORY.md"), Some(LayerName::Memory));
        assert_eq!(p("/nonexistent-cfg/skills/x/SKILL.md"), Some(LayerName::Skills));
        assert_eq!(
            p("/nonexistent-ws/.strata/skills/y/SKILL.md"),
            Some(LayerName::Skills)
        );
        assert_eq!(p("/nonexistent-ws/README.md"), None);
        assert_eq!(p("/nonexistent-ws/sub/deeper/AGENTS.md"), None);
        assert_eq!(p("/nonexistent-cfg/config.toml"), None);
        assert_eq!(Tier::Context, LayerName::Project.tier());
    }

    #[test]
    fn minimal_and_none_modes_ignore_what_they_do_not_read() {
        let minimal = WatchPlan::new(&[], PromptMode::Minimal, &dirs());
        assert_eq!(minimal.layer_of(Path::new("/nonexistent-cfg/MEMORY.md")), None);
        assert_eq!(
            minimal.layer_of(Path::new("/nonexistent-cfg/skills/x/SKILL.md")),
            None
        );
        assert_eq!(
            minimal.layer_of(Path::new("/nonexistent-ws/AGENTS.md")),
            Some(LayerName::Project)
        );
        let none = WatchPlan::new(&[], PromptMode::None, &dirs());
        assert_eq!(none.layer_of(Path::new("/nonexistent-ws/AGENTS.md")), None);
        assert_eq!(
            none.layer_of(Path::new("/nonexistent-cfg/SOUL.md")),
            Some(LayerName::Identity)
        );
    }

    #[test]
    fn skills_directories_are_watched_recursively_and_the_rest_flat() {
        let plan = WatchPlan::new(&[], PromptMode::Full, &dirs());
        let dirs = plan.directories();
        let recursive: Vec<_> = dirs.iter().filter(|(_, r)| *r).map(|(d, _)| d.clone()).collect();
        assert_eq!(
            recursive,
            vec![
                PathBuf::from("/nonexistent-cfg/skills"),
                PathBuf::from("/nonexistent-ws/.strata/skills")
            ]
        );
        assert!(dirs.contains(&(PathBuf::from("/nonexistent-ws/sub"), false)));
        assert!(dirs.contains(&(PathBuf::from("/nonexistent-cfg"), false)));
    }
}
