//! Control request tests: a pause, a cancel or an answer recorded for the
//! lease holder.

use weft_core::AwaitItemId;
use weft_core::awaiting::AwaitAnswer;
use weft_core::elicitation::ElicitationAction;
use weft_core::lease::{ControlRequest, HeldLease, LeaseRequest, RemoteAnswer};
use weft_core::session::FullStore;
use weft_core::store::{Commit, RunStatus, StoreError};
use weft_core::{RunId, Timestamp};

use super::{commit, events, machine, record};

fn cancel(reason: &str) -> ControlRequest {
    ControlRequest::Cancel {
        reason: reason.to_owned(),
    }
}

/// Requests reach the holder with its epoch; a cancel replaces a pause, a
/// pause never replaces a cancel; a commit that stops the run clears them.
pub async fn control_requests_reach_the_holder(store: &dyn FullStore) {
    let lease = LeaseRequest {
        owner: "a",
        expires_at: Timestamp::from_millis(1_000),
    };
    let (r1, r2) = (record("r1", "s1", 1), record("r2", "s1", 2));
    let e1 = store
        .create_leased_run(&r1, &events(1, 1), &machine(), lease)
        .await
        .unwrap();
    store
        .create_leased_run(&r2, &events(1, 1), &machine(), lease)
        .await
        .unwrap();
    assert!(store.pending_controls("a").await.unwrap().is_empty());

    assert!(
        store
            .request_control(&r1.run_id, &ControlRequest::Pause)
            .await
            .unwrap()
    );
    let held = HeldLease {
        run_id: r1.run_id.clone(),
        epoch: e1,
    };
    assert_eq!(
        store.pending_controls("a").await.unwrap(),
        [(held.clone(), ControlRequest::Pause)]
    );
    // Another owner has nothing pending.
    assert!(store.pending_controls("b").await.unwrap().is_empty());
    assert!(
        store
            .request_control(&r1.run_id, &cancel("stop"))
            .await
            .unwrap()
    );
    assert!(
        store
            .request_control(&r1.run_id, &ControlRequest::Pause)
            .await
            .unwrap()
    );
    assert_eq!(
        store.pending_controls("a").await.unwrap(),
        [(held.clone(), cancel("stop"))]
    );

    // The commit that stops the run clears the request; the run is then
    // not running, so a new request is refused.
    store
        .commit(Commit {
            fence: Some(e1),
            ..commit(&r1.run_id, &events(2, 2), RunStatus::Cancelled, 50)
        })
        .await
        .unwrap();
    assert!(store.pending_controls("a").await.unwrap().is_empty());
    assert!(
        !store
            .request_control(&r1.run_id, &cancel("again"))
            .await
            .unwrap()
    );
    let missing = store
        .request_control(&RunId::new("nope"), &cancel("x"))
        .await;
    assert!(matches!(missing, Err(StoreError::RunNotFound { .. })));
}

fn accept(name: &str) -> AwaitAnswer {
    AwaitAnswer::Elicitation {
        action: ElicitationAction::Accept,
        content: Some(serde_json::json!({ "name": name })),
    }
}

/// Answers reach the holder in the order they came, once per question, and
/// are gone once deleted or once a commit stops the run.
pub async fn answers_reach_the_holder_in_order(store: &dyn FullStore) {
    let lease = LeaseRequest {
        owner: "a",
        expires_at: Timestamp::from_millis(1_000),
    };
    let (r1, r2) = (record("q1", "s1", 1), record("q2", "s1", 2));
    let e1 = store
        .create_leased_run(&r1, &events(1, 1), &machine(), lease)
        .await
        .unwrap();
    store
        .create_run(&r2, &events(1, 1), &machine())
        .await
        .unwrap();
    assert!(store.pending_answers("a", 10).await.unwrap().is_empty());

    let (i1, i2) = (AwaitItemId::new("e-2"), AwaitItemId::new("e-1"));
    assert!(
        store
            .request_answer(&r1.run_id, &i1, &accept("Ada"))
            .await
            .unwrap()
    );
    assert!(
        store
            .request_answer(&r1.run_id, &i2, &accept("Bob"))
            .await
            .unwrap()
    );
    // One answer per question: the second waits for nobody.
    assert!(
        !store
            .request_answer(&r1.run_id, &i1, &accept("Eve"))
            .await
            .unwrap()
    );
    // An unleased run's answers wait for whoever holds it; not `a`.
    assert!(
        store
            .request_answer(&r2.run_id, &i1, &accept("Cy"))
            .await
            .unwrap()
    );

    let held = HeldLease {
        run_id: r1.run_id.clone(),
        epoch: e1,
    };
    let pending = store.pending_answers("a", 10).await.unwrap();
    let expected = [
        RemoteAnswer {
            held: held.clone(),
            item: i1.clone(),
            answer: accept("Ada"),
        },
        RemoteAnswer {
            held: held.clone(),
            item: i2.clone(),
            answer: accept("Bob"),
        },
    ];
    assert_eq!(pending, expected);
    assert_eq!(store.pending_answers("a", 1).await.unwrap(), expected[..1]);
    assert!(store.pending_answers("b", 10).await.unwrap().is_empty());

    store.delete_answer(&r1.run_id, &i1).await.unwrap();
    assert_eq!(store.pending_answers("a", 10).await.unwrap(), expected[1..]);

    // The commit that stops the run deletes what is left; a stopped run
    // takes no answers.
    store
        .commit(Commit {
            fence: Some(e1),
            ..commit(&r1.run_id, &events(2, 2), RunStatus::Completed, 50)
        })
        .await
        .unwrap();
    let e1 = store
        .acquire_lease(&r1.run_id, lease, Timestamp::from_millis(60))
        .await
        .unwrap();
    assert!(matches!(e1, weft_core::lease::LeaseClaim::Granted { .. }));
    assert!(store.pending_answers("a", 10).await.unwrap().is_empty());
    assert!(
        !store
            .request_answer(&r1.run_id, &i2, &accept("Bob"))
            .await
            .unwrap()
    );
    let missing = store
        .request_answer(&RunId::new("nope"), &i1, &accept("x"))
        .await;
    assert!(matches!(missing, Err(StoreError::RunNotFound { .. })));
}
