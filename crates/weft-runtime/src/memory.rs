//! The in-memory [`RunStore`]: for tests, benchmarks and embedded use where
//! runs need not survive the process. Same semantics as the durable stores.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use weft_core::RunId;
use weft_core::event::RunEvent;
use weft_core::run::RunMachine;
use weft_core::store::{Commit, RunFilter, RunRecord, RunStore, StoreError, StoredRun};

/// Keeps runs, events and snapshots in process memory.
///
/// By default every run is kept for the life of the store. With
/// [`MemoryStore::keep_finished`] only the most recently finished runs are
/// kept, for long-lived processes that need no history.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Mutex<HashMap<RunId, Entry>>,
    finished: Mutex<VecDeque<RunId>>,
    keep_finished: Option<usize>,
}

#[derive(Debug)]
struct Entry {
    record: RunRecord,
    snapshot: RunMachine,
    events: Vec<RunEvent>,
}

impl MemoryStore {
    /// An empty store keeping every run.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that forgets finished runs beyond the `n` most recent.
    pub fn keep_finished(n: usize) -> Self {
        Self {
            keep_finished: Some(n),
            ..Self::default()
        }
    }

    fn note_finished(&self, run_id: &RunId) {
        let Some(keep) = self.keep_finished else {
            return;
        };
        let mut finished = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        finished.push_back(run_id.clone());
        while finished.len() > keep {
            if let Some(old) = finished.pop_front() {
                self.lock().remove(&old);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Entry>> {
        // A panic while holding the lock cannot leave an entry half-written:
        // every mutation below validates first and then writes.
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn append(run_id: &RunId, log: &mut Vec<RunEvent>, events: &[RunEvent]) -> Result<(), StoreError> {
    let mut last = log.last().map_or(0, |e| e.seq);
    for e in events {
        if e.seq <= last {
            continue;
        }
        if e.seq != last + 1 {
            return Err(StoreError::SequenceGap {
                run_id: run_id.clone(),
                last,
                seq: e.seq,
            });
        }
        last = e.seq;
    }
    let first_new = log.last().map_or(0, |e| e.seq);
    log.extend(events.iter().filter(|e| e.seq > first_new).cloned());
    Ok(())
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn create_run(
        &self,
        record: &RunRecord,
        events: &[RunEvent],
        snapshot: &RunMachine,
    ) -> Result<(), StoreError> {
        let mut runs = self.lock();
        if runs.contains_key(&record.run_id) {
            return Err(StoreError::RunExists {
                run_id: record.run_id.clone(),
            });
        }
        let mut log = Vec::new();
        append(&record.run_id, &mut log, events)?;
        runs.insert(
            record.run_id.clone(),
            Entry {
                record: record.clone(),
                snapshot: snapshot.clone(),
                events: log,
            },
        );
        Ok(())
    }

    async fn commit(&self, commit: Commit<'_>) -> Result<(), StoreError> {
        let mut runs = self.lock();
        let entry = runs
            .get_mut(commit.run_id)
            .ok_or_else(|| StoreError::RunNotFound {
                run_id: commit.run_id.clone(),
            })?;
        append(commit.run_id, &mut entry.events, commit.events)?;
        if let Some(s) = commit.snapshot {
            entry.snapshot = s.clone();
        }
        let newly_finished = commit.status.is_finished() && !entry.record.status.is_finished();
        if newly_finished {
            // The log is complete: drop the growth slack.
            entry.events.shrink_to_fit();
        }
        entry.record.status = commit.status;
        entry.record.updated_at = commit.now;
        drop(runs);
        if newly_finished {
            self.note_finished(commit.run_id);
        }
        Ok(())
    }

    async fn load_run(&self, run_id: &RunId) -> Result<Option<StoredRun>, StoreError> {
        Ok(self.lock().get(run_id).map(|e| StoredRun {
            record: e.record.clone(),
            snapshot: e.snapshot.clone(),
        }))
    }

    async fn read_events(
        &self,
        run_id: &RunId,
        after: u64,
        limit: Option<u32>,
    ) -> Result<Vec<RunEvent>, StoreError> {
        let runs = self.lock();
        let entry = runs.get(run_id).ok_or_else(|| StoreError::RunNotFound {
            run_id: run_id.clone(),
        })?;
        let start = entry.events.partition_point(|e| e.seq <= after);
        let end = limit.map_or(entry.events.len(), |l| {
            (start + l as usize).min(entry.events.len())
        });
        Ok(entry.events[start..end].to_vec())
    }

    async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        let runs = self.lock();
        let mut out: Vec<RunRecord> = runs
            .values()
            .map(|e| &e.record)
            .filter(|r| {
                filter
                    .session_id
                    .as_ref()
                    .is_none_or(|s| &r.session_id == s)
            })
            .filter(|r| filter.statuses.is_empty() || filter.statuses.contains(&r.status))
            .cloned()
            .collect();
        out.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| b.run_id.cmp(&a.run_id))
        });
        if let Some(l) = filter.limit {
            out.truncate(l as usize);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
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
}
