//! Corrupt rows, written with raw SQL: a run whose labels or snapshot do
//! not decode spoils only itself. A listing reports it in its place and
//! pages on past it; its head (tenant label, status) is still read; and a
//! run whose state cannot be read is quarantined under its lease: failed
//! with a reason, its lease freed, never claimed again.

use weft_core::lease::{LeaseClaim, LeaseRequest};
use weft_core::session::FullStore;
use weft_core::store::{CORRUPT_STATE, ListCursor, ListedRun, RunFilter, RunStatus, StoreError};
use weft_core::tool::Labels;
use weft_core::{RunId, Timestamp};

use super::snapshots::RawSql;
use super::{events, machine, record};

const TENANT: &str = "weft.tenant";

fn tenant(name: &str) -> Labels {
    Labels::from([(TENANT.to_owned(), name.to_owned())])
}

fn ids(rows: &[ListedRun]) -> Vec<String> {
    rows.iter().map(|r| r.run_id().to_string()).collect()
}

/// A tenant's list pages past a run whose labels hold a number and one
/// whose status is no status, reporting each in its place.
pub async fn a_listing_pages_past_corrupt_rows(store: &dyn FullStore, raw: &dyn RawSql) {
    for (n, owner) in [
        (1, "alice"),
        (2, "alice"),
        (3, "alice"),
        (4, "bob"),
        (5, "alice"),
        (6, "alice"),
    ] {
        let mut rec = record(&format!("r{n}"), "s1", n);
        rec.labels = tenant(owner);
        store
            .create_run(&rec, &events(1, 1), &machine())
            .await
            .unwrap();
    }
    let changed = raw
        .execute(r#"UPDATE runs SET labels = '{"weft.tenant":"alice","n":5}' WHERE run_id = 'r3'"#)
        .await;
    assert_eq!(changed, 1);
    assert_eq!(
        raw.execute("UPDATE runs SET status = 'lost' WHERE run_id = 'r5'")
            .await,
        1
    );
    let all = RunFilter {
        labels: tenant("alice"),
        ..RunFilter::default()
    };
    // The strict list fails whole; the rows list does not.
    assert!(matches!(
        store.list_runs(&all).await,
        Err(StoreError::Corrupt { .. })
    ));
    let rows = store.list_run_rows(&all).await.unwrap();
    assert_eq!(ids(&rows), ["r6", "r5", "r3", "r2", "r1"]);
    let corrupt: Vec<_> = rows
        .iter()
        .filter_map(|r| match r {
            ListedRun::Corrupt {
                run_id,
                created_at,
                error,
            } => Some((run_id.to_string(), created_at.as_millis(), error.clone())),
            ListedRun::Run(_) => None,
        })
        .collect();
    assert_eq!(corrupt.len(), 2, "{corrupt:?}");
    assert_eq!((corrupt[0].0.as_str(), corrupt[0].1), ("r5", 5));
    assert!(corrupt[0].2.contains("lost"), "{}", corrupt[0].2);
    assert_eq!((corrupt[1].0.as_str(), corrupt[1].1), ("r3", 3));
    assert!(corrupt[1].2.contains("labels"), "{}", corrupt[1].2);

    // Pages of two, each continued from its last row, decoded or not.
    let mut seen = Vec::new();
    let mut before: Option<ListCursor> = None;
    loop {
        let page = store
            .list_run_rows(&RunFilter {
                limit: Some(2),
                before: before.clone(),
                ..all.clone()
            })
            .await
            .unwrap();
        seen.extend(ids(&page));
        if page.len() < 2 {
            break;
        }
        before = page.last().map(ListedRun::cursor);
    }
    assert_eq!(seen, ["r6", "r5", "r3", "r2", "r1"]);

    // The head is read whatever the labels hold; another run is not there.
    let head = store
        .run_head(&RunId::new("r3"), TENANT)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(head.label.as_deref(), Some("alice"));
    assert_eq!(head.status, Some(RunStatus::Running));
    assert_eq!(head.quarantined, None);
    let head = store
        .run_head(&RunId::new("r5"), TENANT)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((head.label.as_deref(), head.status), (Some("alice"), None));
    assert!(
        store
            .run_head(&RunId::new("nope"), TENANT)
            .await
            .unwrap()
            .is_none()
    );
}

/// A running run whose snapshot cannot be read is failed under its lease
/// without being read, leaves the unfinished runs and is never claimed.
pub async fn a_run_whose_state_cannot_be_read_is_quarantined(
    store: &dyn FullStore,
    raw: &dyn RawSql,
) {
    for n in 1..=2 {
        let mut rec = record(&format!("q{n}"), "s1", n);
        rec.labels = tenant("alice");
        store
            .create_run(&rec, &events(1, 1), &machine())
            .await
            .unwrap();
    }
    let changed = raw
        .execute(r#"UPDATE runs SET snapshot = '{"format":1,"garbage":true}' WHERE run_id = 'q1'"#)
        .await;
    assert_eq!(changed, 1);
    let id = RunId::new("q1");
    assert!(matches!(
        store.load_run(&id).await,
        Err(StoreError::Corrupt { .. })
    ));
    let lease = LeaseRequest {
        owner: "a",
        expires_at: Timestamp::from_millis(1_000),
    };
    let now = Timestamp::from_millis(100);
    let LeaseClaim::Granted { epoch } = store.acquire_lease(&id, lease, now).await.unwrap() else {
        panic!("the run is free");
    };
    // Only under the lease it holds.
    assert!(
        !store
            .quarantine_run(&id, CORRUPT_STATE, epoch + 1, now)
            .await
            .unwrap()
    );
    assert!(
        store
            .quarantine_run(&id, CORRUPT_STATE, epoch, now)
            .await
            .unwrap()
    );
    let head = store.run_head(&id, TENANT).await.unwrap().unwrap();
    assert_eq!(head.status, Some(RunStatus::Failed));
    assert_eq!(head.quarantined.as_deref(), Some(CORRUPT_STATE));
    // Once only: it has ended.
    assert!(
        !store
            .quarantine_run(&id, CORRUPT_STATE, epoch, now)
            .await
            .unwrap()
    );
    let unfinished = RunFilter {
        statuses: vec![RunStatus::Running, RunStatus::Awaiting, RunStatus::Paused],
        ..RunFilter::default()
    };
    let rows = store.list_run_rows(&unfinished).await.unwrap();
    assert_eq!(ids(&rows), ["q2"]);
    let claimed = store
        .claim_orphans(
            LeaseRequest {
                owner: "b",
                expires_at: Timestamp::from_millis(5_000),
            },
            Timestamp::from_millis(2_000),
            10,
        )
        .await
        .unwrap();
    let claimed: Vec<_> = claimed.iter().map(|h| h.run_id.to_string()).collect();
    assert_eq!(claimed, ["q2"]);
}
