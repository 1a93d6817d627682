//! Status tests: a run's status as listings filter it, through every
//! transition a commit makes.

use weft_core::session::FullStore;
use weft_core::store::{RunFilter, RunStatus};

use super::{commit, events, record, stored_run};

fn seq_of(evs: &[weft_core::event::RunEvent]) -> u64 {
    evs.last().map_or(0, |e| e.seq)
}

async fn listed(store: &dyn FullStore, status: RunStatus) -> Vec<String> {
    let filter = RunFilter {
        statuses: vec![status],
        ..RunFilter::default()
    };
    let runs = store.list_runs(&filter).await.unwrap();
    runs.into_iter().map(|r| r.run_id.to_string()).collect()
}

/// A step of a running run writes only what a step changes; a commit that
/// changes the status (awaiting, running again, finished) still moves the
/// run between the listings of each status.
pub async fn statuses_follow_every_transition(store: &dyn FullStore) {
    let rec = stored_run(store, record("st", "s1", 10), 1).await;
    let run = &rec.run_id;
    let mut seq = 1;
    let mut step = |status: RunStatus| {
        seq += 1;
        (events(seq, seq), status, 10 + seq)
    };
    for status in [
        RunStatus::Running,
        RunStatus::Awaiting,
        RunStatus::Running,
        RunStatus::Running,
        RunStatus::Paused,
        RunStatus::Running,
        RunStatus::Completed,
    ] {
        let (evs, status, now) = step(status);
        store.commit(commit(run, &evs, status, now)).await.unwrap();
        for other in [
            RunStatus::Running,
            RunStatus::Awaiting,
            RunStatus::Paused,
            RunStatus::Completed,
        ] {
            let expected: Vec<String> = if other == status {
                vec!["st".into()]
            } else {
                vec![]
            };
            assert_eq!(
                listed(store, other).await,
                expected,
                "after a commit to {status:?}"
            );
        }
        let got = store.load_run(run).await.unwrap().unwrap();
        assert_eq!(got.record.status, status);
        assert_eq!(got.record.updated_at.as_millis(), now);
        assert_eq!(got.last_seq, seq_of(&evs));
    }
}
