//! Corrupt session rows, and labels that are not JSON at all, written with
//! raw SQL: a session whose row does not decode is a typed error naming it
//! for that session only, and a listing marks it in its place and pages on
//! past it, as it does a corrupt run; a run or session whose labels do not
//! parse fails no list (PostgreSQL, whose tenant index reads them).

use weft_core::session::{FullStore, ListedSession, SessionError, SessionFilter, SessionRecord};
use weft_core::store::{ListCursor, ListedRun, RunFilter, StoreError};
use weft_core::tool::Labels;
use weft_core::{RunId, SessionId, Timestamp};

use super::snapshots::RawSql;
use super::{events, machine, record};

const TENANT: &str = "weft.tenant";

fn tenant(name: &str) -> Labels {
    Labels::from([(TENANT.to_owned(), name.to_owned())])
}

fn session_ids(rows: &[ListedSession]) -> Vec<String> {
    rows.iter().map(|r| r.session_id().to_string()).collect()
}

async fn create_sessions(store: &dyn FullStore, owners: &[(u64, &str)]) {
    for (n, owner) in owners {
        let record = SessionRecord::new(
            SessionId::new(format!("s{n}")),
            tenant(owner),
            Timestamp::from_millis(*n),
        );
        store.create_session(&record).await.unwrap();
    }
}

/// A session whose labels hold a number: reading it is a typed error
/// naming it, the others read as ever, and a tenant's list marks it in
/// its place and pages on past it.
pub async fn a_corrupt_session_spoils_only_itself(store: &dyn FullStore, raw: &dyn RawSql) {
    create_sessions(
        store,
        &[
            (1, "alice"),
            (2, "alice"),
            (3, "bob"),
            (4, "alice"),
            (5, "alice"),
        ],
    )
    .await;
    let changed = raw
        .execute(
            r#"UPDATE sessions SET labels = '{"weft.tenant":"alice","n":5}' WHERE session_id = 's2'"#,
        )
        .await;
    assert_eq!(changed, 1);
    let bad = SessionId::new("s2");
    match store.get_session(&bad).await {
        Err(SessionError::Corrupt {
            session_id,
            message,
        }) => {
            assert_eq!(session_id, bad);
            assert!(message.contains("labels"), "{message}");
        }
        other => panic!("a typed corrupt error, not {other:?}"),
    }
    let err = store.get_session(&bad).await.unwrap_err().to_string();
    assert!(err.contains("s2"), "{err}");
    assert!(
        store
            .get_session(&SessionId::new("s1"))
            .await
            .unwrap()
            .is_some()
    );
    // Ending it still ends it, and says which session cannot be read.
    assert!(matches!(
        store.end_session(&bad, Timestamp::from_millis(9)).await,
        Err(SessionError::Corrupt { session_id, .. }) if session_id == bad
    ));

    let all = SessionFilter {
        include_ended: true,
        labels: tenant("alice"),
        ..SessionFilter::default()
    };
    assert!(matches!(
        store.list_sessions(&all).await,
        Err(SessionError::Corrupt { .. })
    ));
    let rows = store.list_session_rows(&all).await.unwrap();
    assert_eq!(session_ids(&rows), ["s5", "s4", "s2", "s1"]);
    let corrupt: Vec<_> = rows
        .iter()
        .filter_map(|r| match r {
            ListedSession::Corrupt {
                session_id,
                created_at,
                error,
            } => Some((
                session_id.to_string(),
                created_at.as_millis(),
                error.clone(),
            )),
            ListedSession::Session(_) => None,
        })
        .collect();
    assert_eq!(corrupt.len(), 1, "{corrupt:?}");
    assert_eq!((corrupt[0].0.as_str(), corrupt[0].1), ("s2", 2));
    assert!(corrupt[0].2.contains("labels"), "{}", corrupt[0].2);

    // Pages of two, each continued from its last row, decoded or not.
    let mut seen = Vec::new();
    let mut before: Option<ListCursor> = None;
    loop {
        let page = store
            .list_session_rows(&SessionFilter {
                limit: Some(2),
                before: before.clone(),
                ..all.clone()
            })
            .await
            .unwrap();
        seen.extend(session_ids(&page));
        if page.len() < 2 {
            break;
        }
        before = page.last().map(ListedSession::cursor);
    }
    assert_eq!(seen, ["s5", "s4", "s2", "s1"]);

    // Its tenant is read from the raw row; a missing session has none.
    let head = store.session_head(&bad, TENANT).await.unwrap().unwrap();
    assert_eq!(head.label.as_deref(), Some("alice"));
    assert!(
        store
            .session_head(&SessionId::new("nope"), TENANT)
            .await
            .unwrap()
            .is_none()
    );
}

/// A run's and a session's labels that are not JSON at all: the tenant's
/// lists go on without them (a row whose labels do not parse belongs to no
/// tenant), and an unfiltered list marks each as corrupt in its place.
pub async fn labels_that_are_not_json_fail_no_list(store: &dyn FullStore, raw: &dyn RawSql) {
    for n in 1..=3 {
        let mut rec = record(&format!("r{n}"), &format!("s{n}"), n);
        rec.labels = tenant("alice");
        store
            .create_run(&rec, &events(1, 1), &machine())
            .await
            .unwrap();
    }
    create_sessions(store, &[(11, "alice"), (12, "alice"), (13, "alice")]).await;
    assert_eq!(
        raw.execute("UPDATE runs SET labels = 'not json {' WHERE run_id = 'r2'")
            .await,
        1
    );
    assert_eq!(
        raw.execute("UPDATE sessions SET labels = '{\"weft.tenant\": ' WHERE session_id = 's12'")
            .await,
        1
    );

    let theirs = RunFilter {
        labels: tenant("alice"),
        ..RunFilter::default()
    };
    let rows = store.list_run_rows(&theirs).await.unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.run_id().to_string()).collect();
    assert_eq!(ids, ["r3", "r1"]);
    assert!(rows.iter().all(|r| matches!(r, ListedRun::Run(_))));
    // Another label's filter reads every row's labels: still no failure.
    let mut team = tenant("alice");
    team.insert("team".to_owned(), "x".to_owned());
    let none = store
        .list_run_rows(&RunFilter {
            labels: team,
            ..RunFilter::default()
        })
        .await
        .unwrap();
    assert!(none.is_empty(), "{none:?}");

    let every = store.list_run_rows(&RunFilter::default()).await.unwrap();
    let marks: Vec<(String, bool)> = every
        .iter()
        .map(|r| {
            (
                r.run_id().to_string(),
                matches!(r, ListedRun::Corrupt { .. }),
            )
        })
        .collect();
    assert_eq!(
        marks,
        [
            ("r3".to_owned(), false),
            ("r2".to_owned(), true),
            ("r1".to_owned(), false)
        ]
    );
    assert!(matches!(
        store.list_runs(&RunFilter::default()).await,
        Err(StoreError::Corrupt { .. })
    ));
    let head = store
        .run_head(&RunId::new("r2"), TENANT)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(head.label, None);

    let all = SessionFilter {
        include_ended: true,
        ..SessionFilter::default()
    };
    let theirs = store
        .list_session_rows(&SessionFilter {
            labels: tenant("alice"),
            ..all.clone()
        })
        .await
        .unwrap();
    assert_eq!(session_ids(&theirs), ["s13", "s11"]);
    let every = store.list_session_rows(&all).await.unwrap();
    let corrupt: Vec<String> = every
        .iter()
        .filter(|r| matches!(r, ListedSession::Corrupt { .. }))
        .map(|r| r.session_id().to_string())
        .collect();
    assert_eq!(corrupt, ["s12"]);
}
