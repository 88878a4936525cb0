//! The two small background threads beside the session service:
//! - the query thread owns a second, read-mostly store connection for the
//!   session picker, so searching works while a reply streams;
//! - the counting thread counts the draft's tokens with the connected
//!   provider's counter.
//!
//! Both skip requests that a newer one replaced before they got to them,
//! and answer through the service's [`Sink`] (never blocking).

use super::{ServiceEvent, Sink};
use crate::store::{SessionQuery, Store};
use crate::tokens::TokenCounter;
use std::path::PathBuf;
use std::sync::{Arc, mpsc as std_mpsc};

/// A job for the counting thread.
pub enum CountJob {
    /// Count with this counter from now on (sent when a provider connects).
    Counter(Arc<dyn TokenCounter>),
    /// Count this draft; the ticket is echoed in [`ServiceEvent::DraftTokens`].
    Count(u64, String),
}

/// Most picker rows asked of the store at once.
const PICKER_ROWS: usize = 500;

/// A picker search: echoed ticket, search text, and whether every
/// workspace's sessions are listed (otherwise the current one's).
pub type PickerQuery = (u64, String, bool);

/// Starts the query thread (its own store connection, opened on first
/// use) for the workspace rooted at `workspace`; send it a [`PickerQuery`].
#[must_use]
pub fn spawn_queries(db: PathBuf, workspace: String, events: Sink) -> std_mpsc::Sender<PickerQuery> {
    let (tx, rx) = std_mpsc::channel::<PickerQuery>();
    std::thread::Builder::new()
        .name("strata-queries".into())
        .spawn(move || {
            let mut store: Option<Store> = None;
            while let Ok(mut job) = rx.recv() {
                while let Ok(newer) = rx.try_recv() {
                    job = newer;
                }
                if store.is_none() {
                    match Store::open(&db) {
                        Ok(s) => store = Some(s),
                        Err(e) => {
                            events(ServiceEvent::Error(e.to_string()));
                            continue;
                        }
                    }
                }
                let Some(s) = &store else { continue };
                let query = SessionQuery {
                    search: Some(job.1.clone()).filter(|t| !t.trim().is_empty()),
                    workspace: (!job.2).then(|| workspace.clone()),
                    limit: Some(PICKER_ROWS),
                };
                match s.list_sessions(&query) {
                    Ok(rows) => {
                        events(ServiceEvent::Sessions { ticket: job.0, rows });
                    }
                    Err(e) => {
                        events(ServiceEvent::Error(e.to_string()));
                    }
                }
            }
        })
        .ok();
    tx
}

/// Starts the counting thread.
#[must_use]
pub fn spawn_counter(events: Sink) -> std_mpsc::Sender<CountJob> {
    let (tx, rx) = std_mpsc::channel::<CountJob>();
    std::thread::Builder::new()
        .name("strata-count".into())
        .spawn(move || {
            let mut counter: Option<Arc<dyn TokenCounter>> = None;
            let mut pending: Option<(u64, String)> = None;
            while let Ok(job) = rx.recv() {
                let mut handle = |job| match job {
                    CountJob::Counter(c) => counter = Some(c),
                    CountJob::Count(t, s) => pending = Some((t, s)),
                };
                handle(job);
                while let Ok(more) = rx.try_recv() {
                    handle(more);
                }
                if let (Some(c), Some((ticket, text))) = (&counter, pending.take()) {
                    let tokens = c.count(&text) as u64;
                    events(ServiceEvent::DraftTokens { ticket, tokens });
                }
            }
        })
        .ok();
    tx
}
