//! Lease tests: taking, fencing, renewing, freeing and claiming orphans.

use std::collections::HashSet;

use futures_util::future::join_all;
use weft_core::lease::{HeldLease, LeaseClaim, LeaseRequest};
use weft_core::session::FullStore;
use weft_core::store::{Commit, RunStatus, StoreError};
use weft_core::{RunId, Timestamp};

use super::{commit, events, machine, record, seqs, stored_run};

fn lease(owner: &str, expires: u64) -> LeaseRequest<'_> {
    LeaseRequest {
        owner,
        expires_at: Timestamp::from_millis(expires),
    }
}

fn fenced<'a>(
    run_id: &'a RunId,
    events: &'a [weft_core::event::RunEvent],
    status: RunStatus,
    fence: u64,
) -> Commit<'a> {
    Commit {
        fence: Some(fence),
        ..commit(run_id, events, status, 50)
    }
}

fn at(ms: u64) -> Timestamp {
    Timestamp::from_millis(ms)
}

/// A stale driver's commit is refused whole once another took the run over.
pub async fn a_superseded_epoch_cannot_commit(store: &dyn FullStore) {
    let rec = record("r1", "s1", 1);
    let epoch = store
        .create_leased_run(&rec, &events(1, 1), &machine(), lease("a", 1_000))
        .await
        .unwrap();
    let id = &rec.run_id;
    store
        .commit(fenced(id, &events(2, 2), RunStatus::Running, epoch))
        .await
        .unwrap();
    // Held by `a` until 1000: `b` is told so, and `a` itself may take it again.
    assert_eq!(
        store
            .acquire_lease(id, lease("b", 2_000), at(999))
            .await
            .unwrap(),
        LeaseClaim::Held {
            owner: "a".into(),
            expires_at: at(1_000)
        }
    );
    let LeaseClaim::Granted { epoch: b_epoch } = store
        .acquire_lease(id, lease("b", 2_000), at(1_000))
        .await
        .unwrap()
    else {
        panic!("an expired lease must be granted");
    };
    assert!(b_epoch > epoch);
    let err = store
        .commit(fenced(id, &events(3, 3), RunStatus::Running, epoch))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::LeaseLost {
            run_id: id.clone(),
            epoch
        }
    );
    assert_eq!(seqs(&store.read_events(id, 0, None).await.unwrap()), [1, 2]);
    store
        .commit(fenced(id, &events(3, 3), RunStatus::Running, b_epoch))
        .await
        .unwrap();
    // Unfenced writers are not checked.
    let fourth = events(4, 4);
    let mut unfenced = fenced(id, &fourth, RunStatus::Running, 0);
    unfenced.fence = None;
    store.commit(unfenced).await.unwrap();
    let loaded = store.load_run(id).await.unwrap().unwrap();
    assert_eq!(loaded.last_seq, 4);
}

/// A fenced commit that stops the run frees its lease for anyone.
pub async fn stopping_the_run_frees_its_lease(store: &dyn FullStore) {
    let rec = record("r1", "s1", 1);
    let epoch = store
        .create_leased_run(&rec, &events(1, 1), &machine(), lease("a", 1_000))
        .await
        .unwrap();
    store
        .commit(fenced(
            &rec.run_id,
            &events(2, 2),
            RunStatus::Awaiting,
            epoch,
        ))
        .await
        .unwrap();
    let claim = store
        .acquire_lease(&rec.run_id, lease("b", 2_000), at(10))
        .await
        .unwrap();
    assert_eq!(claim, LeaseClaim::Granted { epoch: epoch + 1 });
    // Release frees it only at the current epoch.
    store.release_lease(&rec.run_id, epoch).await.unwrap();
    assert!(matches!(
        store
            .acquire_lease(&rec.run_id, lease("c", 3_000), at(10))
            .await
            .unwrap(),
        LeaseClaim::Held { .. }
    ));
    store.release_lease(&rec.run_id, epoch + 1).await.unwrap();
    assert!(matches!(
        store
            .acquire_lease(&rec.run_id, lease("c", 3_000), at(10))
            .await
            .unwrap(),
        LeaseClaim::Granted { .. }
    ));
    let missing = store
        .acquire_lease(&RunId::new("nope"), lease("c", 3_000), at(10))
        .await;
    assert!(matches!(missing, Err(StoreError::RunNotFound { .. })));
}

/// Renewal extends the leases still held and names the lost ones.
pub async fn renewal_reports_lost_leases(store: &dyn FullStore) {
    let (r1, r2) = (record("r1", "s1", 1), record("r2", "s1", 2));
    let e1 = store
        .create_leased_run(&r1, &events(1, 1), &machine(), lease("a", 1_000))
        .await
        .unwrap();
    let e2 = store
        .create_leased_run(&r2, &events(1, 1), &machine(), lease("a", 1_000))
        .await
        .unwrap();
    let held = [
        HeldLease {
            run_id: r1.run_id.clone(),
            epoch: e1,
        },
        HeldLease {
            run_id: r2.run_id.clone(),
            epoch: e2,
        },
    ];
    let lost = store.renew_leases("a", &held, at(5_000)).await.unwrap();
    assert!(lost.is_empty(), "{lost:?}");
    // Renewed to 5000: still held at 4999 although the first expiry passed.
    assert!(matches!(
        store
            .acquire_lease(&r1.run_id, lease("b", 9_000), at(4_999))
            .await
            .unwrap(),
        LeaseClaim::Held { .. }
    ));
    assert!(matches!(
        store
            .acquire_lease(&r2.run_id, lease("b", 9_000), at(5_000))
            .await
            .unwrap(),
        LeaseClaim::Granted { .. }
    ));
    let lost = store.renew_leases("a", &held, at(6_000)).await.unwrap();
    assert_eq!(lost, std::slice::from_ref(&r2.run_id));
}

/// Orphans are running runs nobody holds; concurrent claimers split them.
pub async fn orphans_are_claimed_once(store: &dyn FullStore) {
    // Six unleased running runs, one leased until 1000, one finished.
    for i in 0..6 {
        stored_run(store, record(&format!("q{i}"), "s1", i), 1).await;
    }
    let held = record("held", "s1", 10);
    store
        .create_leased_run(&held, &events(1, 1), &machine(), lease("a", 1_000))
        .await
        .unwrap();
    let done = stored_run(store, record("done", "s1", 11), 1).await;
    let mut finish = fenced(&done.run_id, &[], RunStatus::Completed, 0);
    finish.fence = None;
    store.commit(finish).await.unwrap();
    let claims =
        join_all(["b", "c", "d"].map(|owner| store.claim_orphans(lease(owner, 2_000), at(500), 3)))
            .await;
    let mut claimed = HashSet::new();
    for claim in claims {
        let claim = claim.unwrap();
        assert!(claim.len() <= 3);
        for held in claim {
            assert!(held.epoch >= 1);
            assert!(claimed.insert(held.run_id), "claimed twice");
        }
    }
    let expected: HashSet<RunId> = (0..6).map(|i| RunId::new(format!("q{i}"))).collect();
    assert_eq!(claimed, expected);
    // Nothing left before the leases lapse; after 1000 the held run is an
    // orphan too, and after 2000 the claimed ones are again.
    assert!(
        store
            .claim_orphans(lease("e", 3_000), at(999), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let late = store
        .claim_orphans(lease("e", 3_000), at(1_000), 10)
        .await
        .unwrap();
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].run_id, held.run_id);
    assert_eq!(
        store
            .claim_orphans(lease("e", 4_000), at(2_000), 10)
            .await
            .unwrap()
            .len(),
        6
    );
}
