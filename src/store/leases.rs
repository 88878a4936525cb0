//! One writer per session: the lease a session service holds on the
//! session it has open for writing. The store keeps the leases and takes
//! one atomically; whether a holder is still alive is the caller's to say.

use super::{Store, StoreError};
use crate::domain::SessionId;
use rusqlite::{OptionalExtension, TransactionBehavior, params};

/// A lease on a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The holding session service's token.
    pub holder: String,
    /// Its process.
    pub pid: u32,
    /// Its machine.
    pub host: String,
    /// When it was taken, unix milliseconds.
    pub acquired_at: i64,
    /// When its holder last said it still holds it, unix milliseconds.
    pub renewed_at: i64,
}

/// What [`Store::claim_lease`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The lease is the claimant's (it was free, already its own, held by
    /// a holder that is gone, or taken over); `from` is the live holder
    /// taken over, if any.
    Held {
        /// The holder it was taken from.
        from: Option<Lease>,
        /// It was the claimant's already (renewed): nobody else can have
        /// written meanwhile.
        renewed: bool,
    },
    /// Another live holder has it.
    Refused(Lease),
}

const LEASE_QUERY: &str =
    "SELECT holder, pid, host, acquired_at, renewed_at FROM session_leases WHERE session_id = ?1";

fn lease_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Lease> {
    Ok(Lease {
        holder: r.get(0)?,
        pid: r.get(1)?,
        host: r.get(2)?,
        acquired_at: r.get(3)?,
        renewed_at: r.get(4)?,
    })
}

impl Store {
    /// The lease on `session`, if any.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn lease(&self, session: SessionId) -> Result<Option<Lease>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(LEASE_QUERY)?
            .query_row([session.to_string()], lease_row)
            .optional()?)
    }

    /// Takes (or renews) the lease on `session` for `me`, in one
    /// transaction, unless another holder has it that `alive` says is still
    /// alive and `take_over` is false.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn claim_lease(
        &mut self,
        session: SessionId,
        me: &Lease,
        take_over: bool,
        alive: impl Fn(&Lease) -> bool,
    ) -> Result<Claim, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current = tx
            .prepare_cached(LEASE_QUERY)?
            .query_row([session.to_string()], lease_row)
            .optional()?;
        let (claim, acquired_at) = match current {
            Some(l) if l.holder == me.holder => (
                Claim::Held {
                    from: None,
                    renewed: true,
                },
                l.acquired_at,
            ),
            Some(l) if alive(&l) && !take_over => return Ok(Claim::Refused(l)),
            Some(l) if alive(&l) => (
                Claim::Held {
                    from: Some(l),
                    renewed: false,
                },
                me.acquired_at,
            ),
            _ => (
                Claim::Held {
                    from: None,
                    renewed: false,
                },
                me.acquired_at,
            ),
        };
        tx.prepare_cached(
            "INSERT INTO session_leases (session_id, holder, pid, host, acquired_at, renewed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (session_id) DO UPDATE SET holder = ?2, pid = ?3, host = ?4,
                 acquired_at = ?5, renewed_at = ?6",
        )?
        .execute(params![
            session.to_string(),
            me.holder,
            me.pid,
            me.host,
            acquired_at,
            me.renewed_at
        ])?;
        tx.commit()?;
        Ok(claim)
    }

    /// Gives up `holder`'s lease on `session` (nothing happens when another
    /// holder has it).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn release_lease(&mut self, session: SessionId, holder: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("DELETE FROM session_leases WHERE session_id = ?1 AND holder = ?2")?
            .execute(params![session.to_string(), holder])?;
        Ok(())
    }
}
