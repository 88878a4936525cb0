//! The app's composer history across runs: one thread with its own store
//! connection loads the workspace's inputs at start and appends each new
//! one; dropping its [`InputHistory`] waits for the inputs sent so far to
//! be written (the last one is often entered just before the app quits).
//! Inputs are kept per workspace root (the path sessions are grouped by),
//! at most [`HISTORY_CAP`] of them; an input longer than
//! [`HISTORY_ENTRY_MAX_BYTES`] (a big paste) is kept for the run only, in
//! the app.
//!
//! Who may call it: the app's driver, off the UI task.

use crate::store::Store;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Inputs kept per workspace.
pub const HISTORY_CAP: usize = 1_000;

/// Longer inputs are not stored.
pub const HISTORY_ENTRY_MAX_BYTES: usize = 64 * 1024;

/// What the history thread reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryEvent {
    /// The workspace's inputs, oldest first (sent once, at start).
    Loaded(Vec<String>),
    /// The history cannot be read or written (said once; the thread then
    /// drops what it is sent).
    Failed(String),
}

/// The history thread's handle: [`InputHistory::remember`] each input as
/// it is entered; dropping it closes the thread once its writes are done.
#[derive(Debug)]
pub struct InputHistory {
    inputs: Option<mpsc::Sender<String>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InputHistory {
    /// Queues `text` to be kept (written in order, off the caller's
    /// thread; dropped when the thread has given up, see
    /// [`HistoryEvent::Failed`]).
    pub fn remember(&self, text: String) {
        if let Some(tx) = &self.inputs {
            let _ = tx.send(text);
        }
    }
}

impl Drop for InputHistory {
    fn drop(&mut self) {
        self.inputs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts the history thread for the workspace of `cwd` on the database
/// at `db`. `report` hears [`HistoryEvent::Loaded`] first, or
/// [`HistoryEvent::Failed`].
#[must_use]
pub fn spawn_input_history(
    db: PathBuf,
    cwd: &Path,
    report: impl Fn(HistoryEvent) + Send + 'static,
) -> InputHistory {
    let workspace = crate::workspace::workspace_root(cwd)
        .to_string_lossy()
        .into_owned();
    let (tx, rx) = mpsc::channel::<String>();
    let thread = std::thread::Builder::new()
        .name("strata-history".into())
        .spawn(move || {
            let failed = |e: crate::store::StoreError| {
                HistoryEvent::Failed(format!(
                    "the input history cannot be kept across runs, so Up and Down recall this run's inputs only: {e}"
                ))
            };
            let mut store = match Store::open(&db) {
                Ok(s) => s,
                Err(e) => {
                    report(failed(e));
                    return;
                }
            };
            match store.input_history(&workspace, HISTORY_CAP) {
                Ok(rows) => report(HistoryEvent::Loaded(rows)),
                Err(e) => {
                    report(failed(e));
                    return;
                }
            }
            while let Ok(text) = rx.recv() {
                if text.len() > HISTORY_ENTRY_MAX_BYTES {
                    continue;
                }
                if let Err(e) = store.push_input(&workspace, &text, crate::runtime::now_ms(), HISTORY_CAP) {
                    report(failed(e));
                    return;
                }
            }
        })
        .ok();
    InputHistory {
        inputs: Some(tx),
        thread,
    }
}
