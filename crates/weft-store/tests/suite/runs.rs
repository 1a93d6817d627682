//! Run store tests: the event log, commits, snapshots and listing.

use futures_util::future::join_all;
use weft_core::session::FullStore;
use weft_core::store::{Commit, ListCursor, RunFilter, RunStatus, StoreError, StoredRun};
use weft_core::{AgentId, RunId, SessionId, Timestamp};

use super::{commit, driven_machine, events, machine, record, seqs, stored_run};

/// Checks that the run `run_id` still holds only its first event, its
/// first snapshot and its first status, and returns it.
async fn assert_as_created(store: &dyn FullStore, run_id: &RunId) -> StoredRun {
    assert_eq!(
        seqs(&store.read_events(run_id, 0, None).await.unwrap()),
        [1]
    );
    let loaded = store.load_run(run_id).await.unwrap().unwrap();
    assert_eq!(loaded.snapshot, machine());
    assert_eq!(loaded.record.status, RunStatus::Running);
    loaded
}

/// Commits `c`, which must succeed.
async fn committed(store: &dyn FullStore, c: Commit<'_>) {
    store.commit(c).await.unwrap();
}

pub async fn snapshot_round_trip_of_a_driven_machine(store: &dyn FullStore) {
    let rec = stored_run(store, record("r1", "s1", 100), 2).await;
    let driven = driven_machine();
    let mut c = commit(&rec.run_id, &[], RunStatus::Awaiting, 200);
    let evs = events(3, 4);
    c.events = &evs;
    c.snapshot = Some(&driven);
    store.commit(c).await.unwrap();

    let loaded = store.load_run(&rec.run_id).await.unwrap().unwrap();
    assert_eq!(loaded.snapshot, driven);
    assert_eq!(loaded.snapshot.event_seq(), 4);
    assert_eq!(loaded.record.status, RunStatus::Awaiting);
    assert_eq!(loaded.record.updated_at, Timestamp::from_millis(200));
    assert_eq!(loaded.record.created_at, Timestamp::from_millis(100));
    assert_eq!(loaded.record.labels, rec.labels);
    assert_eq!(
        store.read_events(&rec.run_id, 0, None).await.unwrap(),
        events(1, 4)
    );

    // A commit without a snapshot keeps the last one.
    committed(
        store,
        commit(&rec.run_id, &events(5, 5), RunStatus::Running, 300),
    )
    .await;
    let loaded = store.load_run(&rec.run_id).await.unwrap().unwrap();
    assert_eq!(loaded.snapshot, driven);
    assert_eq!(loaded.record.status, RunStatus::Running);
    assert!(store.load_run(&RunId::new("nope")).await.unwrap().is_none());
}

pub async fn appending_a_stored_seq_is_a_no_op_unless_its_content_differs(store: &dyn FullStore) {
    let rec = stored_run(store, record("r1", "s1", 1), 3).await;
    // The same events again, as a retried commit would send them.
    committed(
        store,
        commit(&rec.run_id, &events(1, 3), RunStatus::Running, 2),
    )
    .await;
    // An overlap: 2 and 3 are stored, 4 and 5 are new.
    committed(
        store,
        commit(&rec.run_id, &events(2, 5), RunStatus::Running, 3),
    )
    .await;
    let stored = store.read_events(&rec.run_id, 0, None).await.unwrap();
    assert_eq!(stored, events(1, 5));
    // A stored seq with different content is refused, and nothing of the
    // commit is written: not its new events, not its status.
    let mut changed = events(5, 6);
    changed[0].kind = weft_core::event::EventKind::RunContinued;
    let err = store
        .commit(commit(&rec.run_id, &changed, RunStatus::Completed, 4))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::SequenceConflict {
            run_id: rec.run_id.clone(),
            seq: 5
        }
    );
    assert_eq!(
        store.read_events(&rec.run_id, 0, None).await.unwrap(),
        events(1, 5)
    );
    let loaded = store.load_run(&rec.run_id).await.unwrap().unwrap();
    assert_eq!(loaded.record.status, RunStatus::Running);
}

pub async fn a_gap_is_rejected_and_nothing_is_written(store: &dyn FullStore) {
    let rec = stored_run(store, record("r1", "s1", 1), 2).await;
    let err = store
        .commit(commit(&rec.run_id, &events(4, 5), RunStatus::Completed, 9))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::SequenceGap {
            run_id: rec.run_id.clone(),
            last: 2,
            seq: 4
        }
    );
    assert_eq!(
        seqs(&store.read_events(&rec.run_id, 0, None).await.unwrap()),
        [1, 2]
    );
    let loaded = store.load_run(&rec.run_id).await.unwrap().unwrap();
    assert_eq!(loaded.record.status, RunStatus::Running);
    assert_eq!(loaded.record.updated_at, Timestamp::from_millis(1));
    // A log must start at 1.
    let err = store
        .create_run(&record("r2", "s1", 1), &events(2, 3), &machine())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::SequenceGap {
                last: 0,
                seq: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(store.load_run(&RunId::new("r2")).await.unwrap().is_none());
}

pub async fn a_failing_commit_leaves_nothing_half_written(store: &dyn FullStore) {
    let rec = stored_run(store, record("r1", "s1", 1), 1).await;
    let driven = driven_machine();
    // 2 and 3 are fine, 5 is a gap: the whole commit must be refused,
    // including the events before the gap and the snapshot.
    let mut bad = events(2, 3);
    bad.extend(events(5, 5));
    let mut c = commit(&rec.run_id, &bad, RunStatus::Failed, 50);
    c.snapshot = Some(&driven);
    assert!(matches!(
        store.commit(c).await,
        Err(StoreError::SequenceGap {
            last: 3,
            seq: 5,
            ..
        })
    ));
    assert_as_created(store, &rec.run_id).await;
    // The run goes on from where it was.
    committed(
        store,
        commit(&rec.run_id, &events(2, 3), RunStatus::Running, 60),
    )
    .await;
    assert_eq!(
        seqs(&store.read_events(&rec.run_id, 0, None).await.unwrap()),
        [1, 2, 3]
    );
}

pub async fn creating_twice_and_committing_to_nothing_fail(store: &dyn FullStore) {
    let rec = stored_run(store, record("r1", "s1", 1), 1).await;
    let err = store
        .create_run(&rec, &events(1, 1), &driven_machine())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::RunExists {
            run_id: rec.run_id.clone()
        }
    );
    assert_eq!(
        store.load_run(&rec.run_id).await.unwrap().unwrap().snapshot,
        machine()
    );
    let ghost = RunId::new("ghost");
    let err = store
        .commit(commit(&ghost, &events(1, 1), RunStatus::Running, 1))
        .await
        .unwrap_err();
    assert_eq!(err, StoreError::RunNotFound { run_id: ghost });
}

pub async fn read_events_pages_and_knows_unknown_runs(store: &dyn FullStore) {
    let rec = stored_run(store, record("r1", "s1", 1), 10).await;
    assert_eq!(
        seqs(&store.read_events(&rec.run_id, 3, Some(4)).await.unwrap()),
        [4, 5, 6, 7]
    );
    assert_eq!(
        seqs(&store.read_events(&rec.run_id, 8, None).await.unwrap()),
        [9, 10]
    );
    assert!(
        store
            .read_events(&rec.run_id, 10, None)
            .await
            .unwrap()
            .is_empty()
    );
    let ghost = RunId::new("ghost");
    assert_eq!(
        store.read_events(&ghost, 0, None).await.unwrap_err(),
        StoreError::RunNotFound { run_id: ghost }
    );
    // A run created without events has an empty log.
    store
        .create_run(&record("r2", "s1", 1), &[], &machine())
        .await
        .unwrap();
    assert!(
        store
            .read_events(&RunId::new("r2"), 0, None)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn list_runs_filters_newest_first(store: &dyn FullStore) {
    for (run, session, created, status) in [
        ("a", "s1", 10, RunStatus::Running),
        ("b", "s1", 30, RunStatus::Completed),
        ("c", "s2", 20, RunStatus::Awaiting),
        ("d", "s2", 30, RunStatus::Failed),
        ("e", "s1", 5, RunStatus::Paused),
    ] {
        let rec = stored_run(store, record(run, session, created), 1).await;
        committed(store, commit(&rec.run_id, &[], status, created + 1)).await;
    }
    let ids = |v: Vec<weft_core::store::RunRecord>| {
        v.into_iter()
            .map(|r| r.run_id.to_string())
            .collect::<Vec<_>>()
    };
    // Newest first; equal times by run id, descending.
    assert_eq!(
        ids(store.list_runs(&RunFilter::default()).await.unwrap()),
        ["d", "b", "c", "a", "e"]
    );
    let s1 = RunFilter {
        session_id: Some(SessionId::new("s1")),
        ..RunFilter::default()
    };
    assert_eq!(ids(store.list_runs(&s1).await.unwrap()), ["b", "a", "e"]);
    let unfinished = RunFilter {
        statuses: vec![RunStatus::Running, RunStatus::Awaiting, RunStatus::Paused],
        ..RunFilter::default()
    };
    assert_eq!(
        ids(store.list_runs(&unfinished).await.unwrap()),
        ["c", "a", "e"]
    );
    let both = RunFilter {
        session_id: Some(SessionId::new("s2")),
        statuses: vec![RunStatus::Failed],
        ..RunFilter::default()
    };
    assert_eq!(ids(store.list_runs(&both).await.unwrap()), ["d"]);
    let limited = RunFilter {
        limit: Some(2),
        ..RunFilter::default()
    };
    assert_eq!(ids(store.list_runs(&limited).await.unwrap()), ["d", "b"]);
    // The next page starts after the last entry (ties broken by id).
    let next = RunFilter {
        before: Some(ListCursor {
            created_at: Timestamp::from_millis(30),
            id: "b".into(),
        }),
        ..limited
    };
    assert_eq!(ids(store.list_runs(&next).await.unwrap()), ["c", "a"]);
    // Created at an instant or later (the window a start rate counts).
    let recent = RunFilter {
        created_since: Some(Timestamp::from_millis(20)),
        ..RunFilter::default()
    };
    assert_eq!(
        ids(store.list_runs(&recent).await.unwrap()),
        ["d", "b", "c"]
    );
    // Labels are matched in the query: every run carries team=a, one more
    // run carries a dotted key.
    let mut tagged = record("f", "s3", 1);
    tagged.labels.insert("weft.tenant".into(), "t1".into());
    tagged.agent_id = AgentId::new("other");
    stored_run(store, tagged, 1).await;
    let team = |team: &str, tenant: Option<&str>| {
        let mut labels = weft_core::tool::Labels::from([("team".to_owned(), team.to_owned())]);
        if let Some(t) = tenant {
            labels.insert("weft.tenant".into(), t.into());
        }
        RunFilter {
            labels,
            ..RunFilter::default()
        }
    };
    assert_eq!(
        ids(store.list_runs(&team("a", None)).await.unwrap()),
        ["d", "b", "c", "a", "e", "f"]
    );
    assert!(store.list_runs(&team("b", None)).await.unwrap().is_empty());
    assert_eq!(
        ids(store.list_runs(&team("a", Some("t1"))).await.unwrap()),
        ["f"]
    );
    assert!(
        store
            .list_runs(&team("a", Some("t2")))
            .await
            .unwrap()
            .is_empty()
    );
    // The agent is matched in the query too.
    let agent = |agent: &str, session: Option<&str>| RunFilter {
        agent_id: Some(AgentId::new(agent)),
        session_id: session.map(SessionId::new),
        ..RunFilter::default()
    };
    assert_eq!(
        ids(store.list_runs(&agent("other", None)).await.unwrap()),
        ["f"]
    );
    assert_eq!(
        ids(store.list_runs(&agent("agent", Some("s1"))).await.unwrap()),
        ["b", "a", "e"]
    );
    assert!(
        store
            .list_runs(&agent("nobody", None))
            .await
            .unwrap()
            .is_empty()
    );
    let record = store.list_runs(&both).await.unwrap().remove(0);
    assert_eq!(record.status, RunStatus::Failed);
    assert_eq!(record.updated_at, Timestamp::from_millis(31));
}

/// Many runs committed concurrently, several steps each: every log complete.
pub async fn concurrent_commits_keep_every_log_gap_free(store: &dyn FullStore) {
    const RUNS: u64 = 8;
    const STEPS: u64 = 10;
    commit_concurrently(store, RUNS, STEPS).await;
    for r in 0..RUNS {
        let got = store
            .read_events(&RunId::new(format!("run-{r}")), 0, None)
            .await
            .unwrap();
        assert_eq!(got, events(1, 1 + STEPS * 2));
    }
}

/// Called after the harness installed a trigger that makes the database
/// refuse to insert an event whose body mentions `poison`. The commit's run
/// update and its other events must be rolled back with it.
pub async fn a_commit_refused_by_the_database_is_rolled_back(store: &dyn FullStore) {
    let rec = stored_run(store, record("r1", "s1", 1), 1).await;
    let driven = driven_machine();
    let mut poisoned = events(2, 4);
    poisoned[2].kind = weft_core::event::EventKind::AssistantChunk {
        text: "poison".into(),
    };
    let mut c = commit(&rec.run_id, &poisoned, RunStatus::Failed, 9);
    c.snapshot = Some(&driven);
    let err = store.commit(c).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Backend { message } if message.contains("refused by test")),
        "{err:?}"
    );
    let loaded = assert_as_created(store, &rec.run_id).await;
    assert_eq!(loaded.record.updated_at, Timestamp::from_millis(1));
    // The log goes on from where it was.
    committed(
        store,
        commit(&rec.run_id, &events(2, 4), RunStatus::Running, 10),
    )
    .await;
    assert_eq!(
        store.read_events(&rec.run_id, 0, None).await.unwrap(),
        events(1, 4)
    );
}

/// Commits of many runs at once, one of them with a gap: that one is
/// refused, the others land (stores may write concurrent commits together).
pub async fn one_bad_commit_does_not_sink_concurrent_ones(store: &dyn FullStore) {
    for r in 0..10 {
        store
            .create_run(
                &record(&format!("run-{r}"), "s1", r),
                &events(1, 1),
                &machine(),
            )
            .await
            .unwrap();
    }
    let driven = driven_machine();
    let results = join_all((0..10u64).map(|r| {
        let driven = &driven;
        async move {
            let run_id = RunId::new(format!("run-{r}"));
            let evs = if r == 3 { events(3, 4) } else { events(2, 3) };
            let mut c = commit(&run_id, &evs, RunStatus::Completed, 7);
            c.snapshot = Some(driven);
            store.commit(c).await
        }
    }))
    .await;
    for (r, result) in results.into_iter().enumerate() {
        let run_id = RunId::new(format!("run-{r}"));
        let loaded = store.load_run(&run_id).await.unwrap().unwrap();
        let log = seqs(&store.read_events(&run_id, 0, None).await.unwrap());
        if r == 3 {
            assert!(
                matches!(
                    result,
                    Err(StoreError::SequenceGap {
                        last: 1,
                        seq: 3,
                        ..
                    })
                ),
                "{result:?}"
            );
            assert_eq!((log, loaded.record.status), (vec![1], RunStatus::Running));
            assert_eq!(loaded.snapshot, machine());
        } else {
            assert_eq!(result, Ok(()));
            assert_eq!(
                (log, loaded.record.status),
                (vec![1, 2, 3], RunStatus::Completed)
            );
            assert_eq!(loaded.snapshot, driven);
        }
    }
}

/// Runs `run-0` to `run-{runs - 1}` created and committed `steps` times
/// each (two events a step), all at once.
pub async fn commit_concurrently(store: &dyn FullStore, runs: u64, steps: u64) {
    let snapshot = driven_machine();
    join_all((0..runs).map(|r| {
        let snapshot = &snapshot;
        async move {
            let rec = record(&format!("run-{r}"), &format!("s{}", r % 3), r);
            store
                .create_run(&rec, &events(1, 1), snapshot)
                .await
                .unwrap();
            for step in 0..steps {
                let evs = events(2 + step * 2, 3 + step * 2);
                let mut c = commit(&rec.run_id, &evs, RunStatus::Running, step);
                c.snapshot = Some(snapshot);
                store.commit(c).await.unwrap();
            }
        }
    }))
    .await;
}
