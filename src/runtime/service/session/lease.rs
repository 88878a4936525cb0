//! One writer per session, the service's side: the lease it takes on the
//! session it writes to (when a turn starts, and when it opens one, to say
//! so early), who holds it when another strata does, `/take-over`, and
//! giving it up when it moves to another session or ends. Whether a holder
//! is alive: [`crate::runtime::lease_check`].

use super::SessionService;
use crate::domain::SessionId;
use crate::store::{Claim, Lease};

/// How long `/take-over` waits for a reply the other strata was making to
/// stop.
const TAKE_OVER_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

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
            // Renewed: held here without a break, nobody else wrote.
            Claim::Held {
                from,
                renewed: continuous,
            } => {
                self.leased = Some(session);
                // Another strata may have written to it since it was read
                // here (it held the session meanwhile, and let it go): it
                // is read again, and shown as it is now.
                if !was_held || !continuous {
                    self.forget_history();
                }
                if was_held && !continuous {
                    self.refresh()?;
                    self.emit(crate::runtime::service::ServiceEvent::Notice(
                        "another strata wrote to this session meanwhile; it was read again".to_owned(),
                    ));
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
    pub(super) async fn take_over(&mut self) -> anyhow::Result<()> {
        let Some(session) = self.session.as_ref().map(|s| s.id) else {
            self.emit(crate::runtime::service::ServiceEvent::Notice(
                "this session is not stored yet; there is nothing to take over".to_owned(),
            ));
            return Ok(());
        };
        let taken = self.claim(true)?;
        // A reply the other one was making stops at its next write (within
        // a quarter of a second): waited for, so what it kept is read.
        let deadline = tokio::time::Instant::now() + TAKE_OVER_SETTLE;
        while tokio::time::Instant::now() < deadline
            && self
                .runtime
                .store
                .messages(session, false)?
                .iter()
                .any(|m| m.status == crate::domain::MessageStatus::Streaming)
        {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        // What the other one wrote is shown.
        self.forget_history();
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
