//! The in-memory [`RunStore`]: for tests, benchmarks and embedded use where
//! runs need not survive the process. Same semantics as the durable stores.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use weft_core::RunId;
use weft_core::event::RunEvent;
use weft_core::run::RunMachine;
use weft_core::store::{Commit, RunFilter, RunRecord, RunStore, StoreError, StoredRun};

/// Keeps runs, events and snapshots in process memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Mutex<HashMap<RunId, Entry>>,
}

#[derive(Debug)]
struct Entry {
    record: RunRecord,
    snapshot: RunMachine,
    events: Vec<RunEvent>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
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
        entry.record.status = commit.status;
        entry.record.updated_at = commit.now;
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
