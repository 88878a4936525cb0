//! One writer per session, in the store: a lease is taken atomically,
//! kept by its holder, refused to others while its holder is alive, taken
//! from a holder that is gone, and taken over only when asked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::store as store_support;
use strata::store::{Claim, Lease, Store};

fn lease(holder: &str, pid: u32, at: i64) -> Lease {
    Lease {
        holder: holder.into(),
        pid,
        host: "here".into(),
        acquired_at: at,
        renewed_at: at,
    }
}

#[test]
fn a_lease_is_refused_to_others_while_its_holder_lives_and_taken_over_only_when_asked() {
    let mut store = Store::open_in_memory().unwrap();
    let (session, prompt) = store_support::session("/w", "leased");
    store.create_session(&session, &prompt).unwrap();
    let id = session.id;
    let (a, b) = (lease("a", 100, 1_000), lease("b", 200, 2_000));
    let alive = |_: &Lease| true;

    assert_eq!(
        store.claim_lease(id, &a, false, alive).unwrap(),
        Claim::Held {
            from: None,
            renewed: false
        }
    );
    // Its holder renews it and keeps when it was taken.
    let renewed = lease("a", 100, 5_000);
    assert_eq!(
        store.claim_lease(id, &renewed, false, alive).unwrap(),
        Claim::Held {
            from: None,
            renewed: true
        }
    );
    let held = store.lease(id).unwrap().unwrap();
    assert_eq!((held.acquired_at, held.renewed_at), (1_000, 5_000));

    assert_eq!(
        store.claim_lease(id, &b, false, alive).unwrap(),
        Claim::Refused(held.clone())
    );
    assert_eq!(
        store.lease(id).unwrap().unwrap().holder,
        "a",
        "refused changes nothing"
    );

    // Gone: taken silently.
    assert_eq!(
        store.claim_lease(id, &b, false, |_| false).unwrap(),
        Claim::Held {
            from: None,
            renewed: false
        }
    );
    assert_eq!(store.lease(id).unwrap().unwrap().holder, "b");

    // Taken over: the claimant learns from whom.
    let from = store.claim_lease(id, &a, true, alive).unwrap();
    assert!(
        matches!(from, Claim::Held { from: Some(ref l), renewed: false } if l.holder == "b"),
        "{from:?}"
    );

    // Released by its holder only.
    store.release_lease(id, "b").unwrap();
    assert_eq!(store.lease(id).unwrap().unwrap().holder, "a");
    store.release_lease(id, "a").unwrap();
    assert_eq!(store.lease(id).unwrap(), None);
}
