//! One writer per session, the service's side: the lease it takes on the
//! session it writes to (when a turn starts, and when it opens one, to say
//! so early), who holds it when another strata does, `/take-over`, and
//! giving it up when it moves to another session or ends. Whether a holder
//! is alive: [`crate::runtime::lease_check`].

use super::SessionService;
use crate::domain::SessionId;
use crate::store::{Claim, Lease};

/// The service's identity as a lease holder.
#[derive(Clone, Debug)]
pub(in crate::runtime::service) struct Holder {
    token: String,
    pid: u32,
    host: String,
}

impl Holder {
    pub(in crate::runtime::service) fn new() -> Self {
        Self {
            token: uuid::Uuid::now_v7().to_string(),
            pid: std::process::id(),
            host: crate::runtime::lease_check::this_host(),
        }
    }

    fn lease(&self, now_ms: i64) -> Lease {
        Lease {
            holder: self.token.clone(),
            pid: self.pid,
            host: self.host.clone(),
            acquired_at: now_ms,
            renewed_at: now_ms,
        }
    }

    /// Whether `lease`'s holder still holds it.
    fn alive(&self, lease: &Lease, now_ms: i64) -> bool {
        crate::runtime::lease_check::holder_alive(lease, &self.host, now_ms)
    }
}

impl SessionService {
    /// Takes (or renews) the lease on the open session, from another live
    /// holder only when `take_over`; `Ok(Some(lease))` names the holder it
    /// was taken from. Nothing happens without a stored session.
    ///
    /// # Errors
    /// One sentence naming the holder and how to take the session over,
    /// when another strata has it; a store error.
    pub(super) fn claim(&mut self, take_over: bool) -> anyhow::Result<Option<Lease>> {
        let Some(session) = self.session.as_ref().map(|s| s.id) else {
            return Ok(None);
        };
        let now = crate::runtime::now_ms();
        let was_held = self.leased == Some(session);
        let me = self.holder.lease(now);
        let holder = self.holder.clone();
        let claim = self
            .runtime
            .store
            .claim_lease(session, &me, take_over, |l| holder.alive(l, now))?;
        match claim {
            Claim::Held { from } => {
                self.leased = Some(session);
                // Another strata may have written to it since it was read
                // here: the next turn reads it again.
                if !was_held {
                    self.forget_history();
                }
                Ok(from)
            }
            Claim::Refused(by) => {
                // Lost, if it was held here: what is stored is read again
                // when it is held once more.
                if was_held {
                    self.leased = None;
                }
                Err(anyhow::anyhow!(self.runtime.client().session_held(&by)))
            }
        }
    }

    /// The token this service writes the open session under, when it
    /// holds its lease.
    pub(super) fn lease_token(&self) -> Option<String> {
        let open = self.session.as_ref().map(|s| s.id)?;
        (self.leased == Some(open)).then(|| self.holder.token.clone())
    }

    /// Says, when a stored session opens, that another strata writes to it
    /// (this one then only reads it until `/take-over`).
    pub(super) fn say_if_held(&mut self) {
        // A headless client says it with its turn's error.
        if let Err(e) = self.claim(false)
            && self.interactive
        {
            self.emit(crate::runtime::service::ServiceEvent::Notice(e.to_string()));
        }
    }

    /// Renews the lease this service holds (every minute while it is
    /// open); when another strata took the session over, says so once:
    /// this one then writes nothing to it.
    pub fn renew_lease(&mut self) {
        let Some(held) = self.leased else {
            return;
        };
        if self.session.as_ref().map(|s| s.id) != Some(held) {
            return;
        }
        if let Err(e) = self.claim(false) {
            self.leased = None;
            self.emit(crate::runtime::service::ServiceEvent::Error(e.to_string()));
        }
    }

    /// `/take-over`: the open session's lease becomes this one's.
    ///
    /// # Errors
    /// A store error; one sentence when no session is stored yet.
    pub(super) fn take_over(&mut self) -> anyhow::Result<()> {
        if self.session.is_none() {
            self.emit(crate::runtime::service::ServiceEvent::Notice(
                "this session is not stored yet; there is nothing to take over".to_owned(),
            ));
            return Ok(());
        }
        let taken = self.claim(true)?;
        // What the other one wrote is shown.
        self.refresh()?;
        let line = match taken {
            Some(from) => format!(
                "this session is yours now; the strata in process {} on {} can only read it",
                from.pid, from.host
            ),
            None => "this session was not open in another strata; it is yours".to_owned(),
        };
        self.emit(crate::runtime::service::ServiceEvent::Notice(line));
        Ok(())
    }

    /// Gives up the lease this service holds, if any (another session is
    /// opened, or the service ends).
    pub(super) fn release(&mut self) {
        if let Some(session) = self.leased.take() {
            let _ = self.runtime.store.release_lease(session, &self.holder.token);
        }
    }

    /// The session whose lease this service holds.
    #[must_use]
    pub fn leased(&self) -> Option<SessionId> {
        self.leased
    }
}

impl Drop for SessionService {
    fn drop(&mut self) {
        self.release();
    }
}
