//! Following the open session's prompt sources on disk: one
//! [`WorkspaceWatcher`] for the session's current frozen prompt, restarted
//! when the session or its prompt changes, dropped while no session is
//! stored. Changed layers accumulate into one set that is posted whole as
//! [`ServiceEvent::Stale`] after every batch; `/reload`, `/new` and switching
//! sessions reset it (and post an empty one). Watcher failures are posted
//! as notices.
//!
//! Invariant: once a watch is reset or replaced, its sink posts nothing
//! more, and every event it did post is on the channel before the reset's
//! empty [`ServiceEvent::Stale`] (the set is closed under the same lock the
//! sink sends under).
//!
//! Owned by the session service; nothing else calls it.

use super::{ServiceEvent, Sink};
use crate::domain::{LayerName, PromptId, Session, SessionId, SystemPrompt};
use crate::workspace::{WatchDirs, WatchEvent, WatchPlan, WorkspaceWatcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Layers seen changed so far; `None` once the watch is closed.
type StaleSet = Arc<Mutex<Option<BTreeSet<LayerName>>>>;

struct Active {
    key: (SessionId, PromptId),
    stale: StaleSet,
    /// `None` when the operating system gave no watcher (already reported).
    _watcher: Option<WorkspaceWatcher>,
}

/// The watch of the open session's prompt (none until a session is stored).
pub struct PromptWatch {
    events: Sink,
    config_dir: PathBuf,
    active: Option<Active>,
}

impl PromptWatch {
    /// No watch yet; events go to `events`, config files are looked for in
    /// `config_dir`.
    #[must_use]
    pub fn new(events: Sink, config_dir: PathBuf) -> Self {
        Self {
            events,
            config_dir,
            active: None,
        }
    }

    /// Watches the sources of `prompt`, the current prompt of `session`
    /// (started in `cwd`), unless that very prompt is watched already;
    /// `None` (no stored session) stops watching. A watch started anew
    /// returns the layers it can mark stale, for [`PromptWatch::mark`] to
    /// add those that changed while nothing watched.
    pub fn follow(
        &mut self,
        session: Option<&Session>,
        prompt: Option<&SystemPrompt>,
        cwd: &Path,
    ) -> Option<BTreeSet<LayerName>> {
        let (Some(session), Some(prompt)) = (session, prompt) else {
            if self.active.is_some() {
                self.close();
            }
            return None;
        };
        let key = (session.id, prompt.id);
        if self.active.as_ref().is_some_and(|a| a.key == key) {
            return None;
        }
        if self.active.is_some() {
            self.close();
        }
        let root = PathBuf::from(&session.workspace);
        let cwd = if cwd.starts_with(&root) { cwd } else { &root };
        let plan = WatchPlan::for_prompt(
            prompt,
            &WatchDirs {
                root: root.clone(),
                cwd: cwd.to_path_buf(),
                config_dir: self.config_dir.clone(),
            },
        );
        let layers = plan.layers();
        let stale: StaleSet = Arc::new(Mutex::new(Some(BTreeSet::new())));
        let sink_stale = Arc::clone(&stale);
        let events = Arc::clone(&self.events);
        let started = WorkspaceWatcher::start(plan, move |event| {
            let Ok(mut guard) = sink_stale.lock() else {
                return;
            };
            let Some(set) = guard.as_mut() else {
                return;
            };
            let e = match event {
                WatchEvent::Changed(change) => {
                    set.extend(change.layers);
                    ServiceEvent::Stale(set.iter().copied().collect())
                }
                WatchEvent::Failed(line) => ServiceEvent::Notice(line),
            };
            // Sent under the lock: see the module invariant.
            events(e);
        });
        let watcher = match started {
            Ok(w) => Some(w),
            Err(e) => {
                (self.events)(ServiceEvent::Notice(e.to_string()));
                None
            }
        };
        self.active = Some(Active {
            key,
            stale,
            _watcher: watcher,
        });
        Some(layers)
    }

    /// Adds `layers` to the stale set of the current watch and posts the
    /// set when that changed it (layers found changed some other way than
    /// by the watcher, e.g. while strata was not running).
    pub fn mark(&self, layers: &[LayerName]) {
        let mut guard = self.active.as_ref().and_then(|a| a.stale.lock().ok());
        let Some(set) = guard.as_mut().and_then(|g| g.as_mut()) else {
            return;
        };
        let before = set.len();
        set.extend(layers.iter().copied());
        if set.len() != before {
            // Under the lock: see the module invariant.
            (self.events)(ServiceEvent::Stale(set.iter().copied().collect()));
        }
        drop(guard);
    }

    /// Forgets the layers seen changed (the prompt was rebuilt or found
    /// current) and posts the empty set; watching goes on.
    pub fn reset(&self) {
        let mut guard = self.active.as_ref().and_then(|a| a.stale.lock().ok());
        if let Some(set) = guard.as_mut().and_then(|g| g.as_mut()) {
            set.clear();
        }
        // Under the lock, so no batch slips in between.
        (self.events)(ServiceEvent::Stale(Vec::new()));
        drop(guard);
    }

    /// Stops the current watch and posts the empty set.
    fn close(&mut self) {
        let active = self.active.take();
        let mut guard = active.as_ref().and_then(|a| a.stale.lock().ok());
        if let Some(g) = guard.as_mut() {
            **g = None;
        }
        (self.events)(ServiceEvent::Stale(Vec::new()));
        drop(guard);
    }
}
