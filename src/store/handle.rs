//! [`StoreHandle`]: the one thread that owns the [`Store`].
//!
//! Jobs (closures over `&mut Store`) are queued on a channel and applied one
//! at a time in the order they were sent; each caller waits for its own
//! reply. A job that panics is rolled back (its transaction is dropped) and
//! reported as [`StoreError::JobPanicked`]; the thread carries on. The thread
//! ends, closing the database, when the last handle is dropped.

use super::{Store, StoreError};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread;

type Job = Box<dyn FnOnce(&mut Store) + Send + 'static>;

/// A cloneable, `Send` handle to the thread that owns the store.
#[derive(Clone, Debug)]
pub struct StoreHandle {
    jobs: mpsc::Sender<Job>,
}

impl StoreHandle {
    /// Moves `store` onto a new thread named `strata-store` and returns a
    /// handle to it.
    ///
    /// # Errors
    /// [`StoreError::Closed`] if the operating system refuses a new thread.
    pub fn spawn(store: Store) -> Result<Self, StoreError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("strata-store".to_owned())
            .spawn(move || {
                let mut store = store;
                for job in queue {
                    job(&mut store);
                }
            })
            .map_err(|_| StoreError::Closed)?;
        Ok(Self { jobs })
    }

    /// Runs `job` on the store's thread after every job sent before it, and
    /// returns its result. Blocks the calling thread until then (call it
    /// from a blocking context, not from the UI task).
    ///
    /// # Errors
    /// [`StoreError::Closed`] when the store thread has gone;
    /// [`StoreError::JobPanicked`] when `job` panicked.
    pub fn call<R, F>(&self, job: F) -> Result<R, StoreError>
    where
        F: FnOnce(&mut Store) -> R + Send + 'static,
        R: Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel::<Result<R, StoreError>>(1);
        let boxed: Job = Box::new(move |store: &mut Store| {
            let result = catch_unwind(AssertUnwindSafe(|| job(store))).map_err(|_| StoreError::JobPanicked);
            // The caller may have stopped waiting; nothing to do then.
            let _ = reply.send(result);
        });
        self.jobs.send(boxed).map_err(|_| StoreError::Closed)?;
        answer.recv().map_err(|_| StoreError::Closed)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::KNOWN_VERSION;

    #[test]
    fn a_panicking_job_is_reported_and_the_thread_survives() {
        let handle = StoreHandle::spawn(Store::open_in_memory().unwrap()).unwrap();
        let r: Result<(), _> = handle.call(|_| panic!("boom"));
        assert!(matches!(r, Err(StoreError::JobPanicked)));
        assert_eq!(
            handle.call(|s| s.schema_version().unwrap()).unwrap(),
            KNOWN_VERSION
        );
    }
}
