//! The in-memory store's own tests.

use weft_core::event::EventKind;
use weft_core::run::RunConfig;
use weft_core::store::RunStatus;
use weft_core::{AgentId, SessionId, Timestamp};

use super::*;

fn record(id: &str) -> RunRecord {
    RunRecord {
        run_id: RunId::new(id),
        agent_id: AgentId::new("a"),
        session_id: SessionId::new("s"),
        status: RunStatus::Running,
        labels: Default::default(),
        created_at: Timestamp::from_millis(1),
        updated_at: Timestamp::from_millis(1),
    }
}

fn event(seq: u64) -> RunEvent {
    RunEvent {
        seq,
        at: Timestamp::from_millis(seq),
        kind: EventKind::RunContinued,
    }
}

fn machine() -> RunMachine {
    RunMachine::new(
        RunConfig::new("a", "s", Vec::new()),
        Timestamp::from_millis(0),
    )
}

/// The sequence numbers of `id`'s stored events.
async fn seqs(store: &MemoryStore, id: &RunId) -> Vec<u64> {
    store
        .read_events(id, 0, None)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect()
}

fn commit<'a>(run_id: &'a RunId, events: &'a [RunEvent], status: RunStatus) -> Commit<'a> {
    Commit {
        run_id,
        events,
        snapshot: None,
        status,
        now: Timestamp::from_millis(9),
        fence: None,
    }
}

#[tokio::test]
async fn appends_are_idempotent_and_gaps_rejected() {
    let store = MemoryStore::new();
    let id = RunId::new("r");
    store
        .create_run(&record("r"), &[event(1)], &machine())
        .await
        .unwrap();
    store
        .commit(commit(&id, &[event(1), event(2)], RunStatus::Running))
        .await
        .unwrap();
    let err = store
        .commit(commit(&id, &[event(4)], RunStatus::Running))
        .await;
    assert_eq!(
        err,
        Err(StoreError::SequenceGap {
            run_id: id.clone(),
            last: 2,
            seq: 4
        })
    );
    let seqs = seqs(&store, &id).await;
    assert_eq!(seqs, vec![1, 2]);
    assert_eq!(store.read_events(&id, 1, Some(1)).await.unwrap().len(), 1);
    assert!(
        store
            .create_run(&record("r"), &[], &machine())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_finished_runs_log_is_sealed_and_reads_and_appends_as_before() {
    let store = MemoryStore::new();
    let id = RunId::new("r");
    store
        .create_run(&record("r"), &[event(1)], &machine())
        .await
        .unwrap();
    store
        .commit(commit(&id, &[event(2), event(3)], RunStatus::Completed))
        .await
        .unwrap();
    assert!(sealed(&store, &id));
    let all = store.read_events(&id, 0, None).await.unwrap();
    assert_eq!(all, [event(1), event(2), event(3)]);
    assert_eq!(
        store.read_events(&id, 1, Some(1)).await.unwrap(),
        [event(2)]
    );
    assert_eq!(
        store.load_run(&id).await.unwrap().map(|r| r.last_seq),
        Some(3)
    );
    // A gap is still refused; a later event opens the log again.
    assert!(matches!(
        store
            .commit(commit(&id, &[event(5)], RunStatus::Completed))
            .await,
        Err(StoreError::SequenceGap { last: 3, .. })
    ));
    store
        .commit(commit(&id, &[event(3), event(4)], RunStatus::Completed))
        .await
        .unwrap();
    let seqs = seqs(&store, &id).await;
    assert_eq!(seqs, [1, 2, 3, 4]);
    // Sealed again: a stored number with other content is refused.
    let mut other = event(4);
    other.kind = EventKind::RunPaused {
        reason: "other".into(),
    };
    assert_eq!(
        store
            .commit(commit(&id, &[other, event(5)], RunStatus::Completed))
            .await,
        Err(StoreError::SequenceConflict {
            run_id: id.clone(),
            seq: 4
        })
    );
    assert_eq!(store.read_events(&id, 3, None).await.unwrap(), [event(4)]);
}

/// Whether `id`'s log and snapshot are sealed.
fn sealed(store: &MemoryStore, id: &RunId) -> bool {
    store.lock().get(id).is_some_and(|e| {
        matches!(e.events, EventLog::Sealed { .. }) && matches!(e.snapshot, Snapshot::Sealed(_))
    })
}

#[tokio::test]
async fn a_log_that_grew_while_it_was_encoded_stays_live() {
    let store = MemoryStore::new();
    let id = RunId::new("r");
    store
        .create_run(&record("r"), &[event(1), event(2)], &machine())
        .await
        .unwrap();
    // What the sealer encodes, then an append before it swaps the result in.
    let were = store.lock().get(&id).and_then(|e| e.events.live()).unwrap();
    let sealed = EventLog::sealed_from(&were).unwrap();
    store
        .commit(commit(&id, &[event(3)], RunStatus::Running))
        .await
        .unwrap();
    if let Some(e) = store.lock().get_mut(&id) {
        e.events.replace_with(&were, sealed);
    }
    let seqs = seqs(&store, &id).await;
    assert_eq!(seqs, [1, 2, 3]);
    // Sealed from what it holds now, it keeps all three.
    sealer::seal(&store.runs, &id);
    assert!(matches!(
        store.lock().get(&id).map(|e| &e.events),
        Some(EventLog::Sealed { last_seq: 3, .. })
    ));
    assert_eq!(store.read_events(&id, 0, None).await.unwrap().len(), 3);
}

#[tokio::test]
async fn keep_finished_forgets_the_oldest_finished_runs() {
    let store = MemoryStore::keep_finished(2);
    for i in 0..4 {
        let id = format!("r{i}");
        store
            .create_run(&record(&id), &[event(1)], &machine())
            .await
            .unwrap();
        store
            .commit(commit(
                &RunId::new(id.as_str()),
                &[event(2)],
                RunStatus::Completed,
            ))
            .await
            .unwrap();
    }
    store
        .create_run(&record("live"), &[event(1)], &machine())
        .await
        .unwrap();
    let kept: Vec<String> = store
        .list_runs(&RunFilter::default())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.run_id.to_string())
        .collect();
    assert_eq!(kept.len(), 3);
    assert!(kept.contains(&"r2".to_owned()) && kept.contains(&"r3".to_owned()));
    assert!(kept.contains(&"live".to_owned()));
}

#[tokio::test]
async fn runs_are_listed_by_agent_and_creation_time() {
    let store = MemoryStore::new();
    let mut other = record("b");
    other.agent_id = AgentId::new("other");
    other.created_at = Timestamp::from_millis(5);
    for r in [record("a"), other] {
        store.create_run(&r, &[event(1)], &machine()).await.unwrap();
    }
    let of = |agent: &str| RunFilter {
        agent_id: Some(AgentId::new(agent)),
        ..RunFilter::default()
    };
    let ids = |v: Vec<RunRecord>| {
        v.into_iter()
            .map(|r| r.run_id.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(store.list_runs(&of("other")).await.unwrap()), ["b"]);
    assert_eq!(ids(store.list_runs(&of("a")).await.unwrap()), ["a"]);
    assert!(store.list_runs(&of("nobody")).await.unwrap().is_empty());
    let since = |millis| RunFilter {
        created_since: Some(Timestamp::from_millis(millis)),
        ..RunFilter::default()
    };
    assert_eq!(ids(store.list_runs(&since(5)).await.unwrap()), ["b"]);
    assert_eq!(ids(store.list_runs(&since(1)).await.unwrap()), ["b", "a"]);
}
