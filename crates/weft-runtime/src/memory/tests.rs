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
    let seqs: Vec<u64> = store
        .read_events(&id, 0, None)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
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
