//! One writer per session, below the service: whether a lease's holder is
//! still alive, and the refusal the command line's own writers
//! (`pin`, `exclude`, `compress`, the undos) give while another strata has
//! the session open.
//!
//! A holder on this machine is alive while its process is; one on another
//! machine while it renewed its lease within [`STALE_AFTER_MS`].

use super::{Runtime, RuntimeError};
use crate::domain::Session;
use crate::store::Lease;

/// A lease of another machine not renewed for this long is taken: 10 min.
pub const STALE_AFTER_MS: i64 = 10 * 60 * 1_000;

/// This machine's name (`/proc/sys/kernel/hostname`), `localhost` when it
/// cannot be read.
#[must_use]
pub fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Whether process `pid` exists (signal 0 reaches it, or it belongs to
/// another user).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}

/// Whether `lease`'s holder still holds it, seen from `host` at `now_ms`.
#[must_use]
pub fn holder_alive(lease: &Lease, host: &str, now_ms: i64) -> bool {
    if lease.host == host {
        process_alive(lease.pid)
    } else {
        now_ms - lease.renewed_at < STALE_AFTER_MS
    }
}

impl Runtime {
    /// Refuses to change `session` while another strata has it open.
    ///
    /// # Errors
    /// [`RuntimeError::Held`] naming the holder; a store error.
    pub fn refuse_if_held(&self, session: &Session) -> Result<(), RuntimeError> {
        let Some(lease) = self.store.lease(session.id)? else {
            return Ok(());
        };
        if lease.pid == std::process::id() && lease.host == this_host() {
            return Ok(());
        }
        if holder_alive(&lease, &this_host(), super::now_ms()) {
            return Err(RuntimeError::Held(self.client().session_held_for_change(&lease)));
        }
        Ok(())
    }
}
