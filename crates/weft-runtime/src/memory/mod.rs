//! The in-memory [`RunStore`]: for tests, benchmarks and embedded use where
//! runs need not survive the process. Same semantics as the durable stores,
//! leases included (`lease`).

mod lease;
mod log;
mod sealed;
mod sealer;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use weft_core::Timestamp;
use weft_core::awaiting::AwaitAnswer;
use weft_core::event::RunEvent;
use weft_core::lease::{ControlRequest, HeldLease, LeaseClaim, LeaseRequest, RemoteAnswer};
use weft_core::run::RunMachine;
use weft_core::store::{Commit, RunFilter, RunRecord, RunStatus, RunStore, StoreError, StoredRun};
use weft_core::{AwaitItemId, RunId};

use lease::Lease;
use log::{EventLog, not_found};
use sealed::Snapshot;

/// Keeps runs, events and snapshots in process memory.
///
/// By default every run is kept for the life of the store. With
/// [`MemoryStore::keep_finished`] only the most recently finished runs are
/// kept, for long-lived processes that need no history.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: sealer::Runs,
    finished: Mutex<VecDeque<RunId>>,
    keep_finished: Option<usize>,
}

#[derive(Debug)]
struct Entry {
    record: RunRecord,
    snapshot: Snapshot,
    events: EventLog,
    lease: Lease,
    /// A pause or cancel asked by a process that does not drive the run.
    control: Option<ControlRequest>,
    /// Answers to running tools' questions, asked by such a process.
    answers: Vec<(AwaitItemId, AwaitAnswer)>,
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
        let mut log = EventLog::default();
        log.append(&record.run_id, events)?;
        runs.insert(
            record.run_id.clone(),
            Entry {
                record: record.clone(),
                snapshot: Snapshot::Live(Arc::new(snapshot.clone())),
                events: log,
                lease,
                control: None,
                answers: Vec::new(),
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

    async fn request_control(
        &self,
        run_id: &RunId,
        request: &ControlRequest,
    ) -> Result<bool, StoreError> {
        let mut runs = self.lock();
        let entry = runs.get_mut(run_id).ok_or_else(|| not_found(run_id))?;
        if entry.record.status != RunStatus::Running {
            return Ok(false);
        }
        if entry.control.is_none() || request.is_cancel() {
            entry.control = Some(request.clone());
        }
        Ok(true)
    }

    async fn pending_controls(
        &self,
        owner: &str,
    ) -> Result<Vec<(HeldLease, ControlRequest)>, StoreError> {
        Ok(self
            .lock()
            .iter()
            .filter(|(_, e)| e.lease.owner() == Some(owner))
            .filter_map(|(id, e)| {
                let held = HeldLease {
                    run_id: id.clone(),
                    epoch: e.lease.epoch,
                };
                Some((held, e.control.clone()?))
            })
            .collect())
    }

    async fn request_answer(
        &self,
        run_id: &RunId,
        item: &AwaitItemId,
        answer: &AwaitAnswer,
    ) -> Result<bool, StoreError> {
        let mut runs = self.lock();
        let entry = runs.get_mut(run_id).ok_or_else(|| not_found(run_id))?;
        if entry.record.status != RunStatus::Running || entry.answers.iter().any(|(i, _)| i == item)
        {
            return Ok(false);
        }
        entry.answers.push((item.clone(), answer.clone()));
        Ok(true)
    }

    async fn pending_answers(
        &self,
        owner: &str,
        limit: u32,
    ) -> Result<Vec<RemoteAnswer>, StoreError> {
        Ok(self
            .lock()
            .iter()
            .filter(|(_, e)| e.lease.owner() == Some(owner))
            .flat_map(|(id, e)| {
                e.answers.iter().map(|(item, answer)| RemoteAnswer {
                    held: HeldLease {
                        run_id: id.clone(),
                        epoch: e.lease.epoch,
                    },
                    item: item.clone(),
                    answer: answer.clone(),
                })
            })
            .take(limit as usize)
            .collect())
    }

    async fn delete_answer(&self, run_id: &RunId, item: &AwaitItemId) -> Result<(), StoreError> {
        if let Some(entry) = self.lock().get_mut(run_id) {
            entry.answers.retain(|(i, _)| i != item);
        }
        Ok(())
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
        entry.events.append(commit.run_id, commit.events)?;
        if let Some(s) = commit.snapshot {
            entry.snapshot = Snapshot::Live(Arc::new(s.clone()));
        }
        if commit.status != RunStatus::Running {
            entry.control = None;
            entry.answers.clear();
            if commit.fence.is_some() {
                entry.lease.free();
            }
        }
        let newly_finished = commit.status.is_finished() && !entry.record.status.is_finished();
        entry.record.status = commit.status;
        entry.record.updated_at = commit.now;
        drop(runs);
        if newly_finished {
            // The log and the snapshot are complete: keep them compact,
            // unless the store forgets them at once.
            if self.keep_finished != Some(0) {
                sealer::seal(&self.runs, commit.run_id);
            }
            self.note_finished(commit.run_id);
        }
        Ok(())
    }

    async fn load_run(&self, run_id: &RunId) -> Result<Option<StoredRun>, StoreError> {
        let runs = self.lock();
        let Some(e) = runs.get(run_id) else {
            return Ok(None);
        };
        Ok(Some(StoredRun {
            record: e.record.clone(),
            snapshot: e.snapshot.get(run_id)?,
            last_seq: e.events.last_seq(),
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
        entry.events.read(run_id, after, limit)
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
            .filter(|r| filter.agent_id.as_ref().is_none_or(|a| &r.agent_id == a))
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
            .filter(|r| filter.created_since.is_none_or(|t| r.created_at >= t))
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
