//! The in-memory [`RunStore`]: for tests, benchmarks and embedded use where
//! runs need not survive the process. Same semantics as the durable stores,
//! leases included (`lease`).

mod lease;

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use weft_core::RunId;
use weft_core::Timestamp;
use weft_core::event::RunEvent;
use weft_core::lease::{HeldLease, LeaseClaim, LeaseRequest};
use weft_core::run::RunMachine;
use weft_core::store::{Commit, RunFilter, RunRecord, RunStatus, RunStore, StoreError, StoredRun};

use lease::Lease;

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
    lease: Lease,
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

    /// Inserts a new run with `lease`.
    fn insert(
        &self,
        record: &RunRecord,
        events: &[RunEvent],
        snapshot: &RunMachine,
        lease: Lease,
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
                lease,
            },
        );
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Entry>> {
        // A panic while holding the lock cannot leave an entry half-written:
        // every mutation below validates first and then writes.
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn not_found(run_id: &RunId) -> StoreError {
    StoreError::RunNotFound {
        run_id: run_id.clone(),
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
        self.insert(record, events, snapshot, Lease::default())
    }

    async fn create_leased_run(
        &self,
        record: &RunRecord,
        events: &[RunEvent],
        snapshot: &RunMachine,
        lease: LeaseRequest<'_>,
    ) -> Result<u64, StoreError> {
        let lease = Lease::granted(lease, 1);
        self.insert(record, events, snapshot, lease)?;
        Ok(1)
    }

    async fn acquire_lease(
        &self,
        run_id: &RunId,
        lease: LeaseRequest<'_>,
        now: Timestamp,
    ) -> Result<LeaseClaim, StoreError> {
        let mut runs = self.lock();
        let entry = runs.get_mut(run_id).ok_or_else(|| not_found(run_id))?;
        Ok(entry.lease.acquire(lease, now))
    }

    async fn renew_leases(
        &self,
        owner: &str,
        leases: &[HeldLease],
        expires_at: Timestamp,
    ) -> Result<Vec<RunId>, StoreError> {
        let mut runs = self.lock();
        let mut lost = Vec::new();
        for held in leases {
            let renewed = runs
                .get_mut(&held.run_id)
                .is_some_and(|e| e.lease.renew(owner, held.epoch, expires_at));
            if !renewed {
                lost.push(held.run_id.clone());
            }
        }
        Ok(lost)
    }

    async fn release_lease(&self, run_id: &RunId, epoch: u64) -> Result<(), StoreError> {
        if let Some(e) = self.lock().get_mut(run_id) {
            e.lease.release(epoch);
        }
        Ok(())
    }

    async fn claim_orphans(
        &self,
        lease: LeaseRequest<'_>,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<HeldLease>, StoreError> {
        let mut runs = self.lock();
        let mut orphans: Vec<(Timestamp, &RunId, &mut Entry)> = runs
            .iter_mut()
            .filter(|(_, e)| e.record.status == RunStatus::Running && e.lease.is_free(now))
            .map(|(id, e)| (e.lease.expires_at, id, e))
            .collect();
        orphans.sort_by_key(|o| o.0);
        Ok(orphans
            .into_iter()
            .take(limit as usize)
            .map(|(_, run_id, e)| HeldLease {
                run_id: run_id.clone(),
                epoch: e.lease.take(lease),
            })
            .collect())
    }

    async fn commit(&self, commit: Commit<'_>) -> Result<(), StoreError> {
        let mut runs = self.lock();
        let entry = runs
            .get_mut(commit.run_id)
            .ok_or_else(|| not_found(commit.run_id))?;
        if let Some(epoch) = commit.fence
            && entry.lease.epoch != epoch
        {
            return Err(StoreError::LeaseLost {
                run_id: commit.run_id.clone(),
                epoch,
            });
        }
        append(commit.run_id, &mut entry.events, commit.events)?;
        if let Some(s) = commit.snapshot {
            entry.snapshot = s.clone();
        }
        if commit.fence.is_some() && commit.status != RunStatus::Running {
            entry.lease.free();
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
            last_seq: e.events.last().map_or(0, |e| e.seq),
            lease_owner: e.lease.owner().map(str::to_owned),
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
            .filter(|r| {
                filter
                    .labels
                    .iter()
                    .all(|(k, v)| r.labels.get(k) == Some(v))
            })
            .filter(|r| {
                filter
                    .before
                    .as_ref()
                    .is_none_or(|c| c.is_before(r.created_at, r.run_id.as_str()))
            })
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
mod tests;
