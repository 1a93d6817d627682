//! Changing runs no task here drives, under their lease: an answer, a
//! pause, a continue or a cancel first takes the run's lease (refused as
//! [`RuntimeError::DrivenElsewhere`] while another process holds it), then
//! changes the stored machine and commits it fenced by that lease. A run
//! left running is driven here under the same lease; any other status frees
//! it with the commit. Also the bookkeeping when a driver task ends.

use weft_core::lease::LeaseClaim;
use weft_core::store::{StoreError, StoredRun};

use super::*;

/// A stored run changed under its lease.
pub(super) struct Updated {
    pub(super) record: RunRecord,
    pub(super) machine: RunMachine,
    pub(super) shared: Arc<RunShared>,
    /// The lease, still held when the run is left running.
    pub(super) epoch: u64,
}

impl Inner {
    /// Takes the lease of `run_id` for this process.
    pub(super) async fn acquire(&self, run_id: &RunId) -> Result<u64, RuntimeError> {
        let now = self.clock.now();
        match self
            .store
            .acquire_lease(run_id, self.leases.request(now), now)
            .await
        {
            Ok(LeaseClaim::Granted { epoch }) => Ok(epoch),
            Ok(LeaseClaim::Held { .. }) => Err(RuntimeError::DrivenElsewhere(run_id.clone())),
            Err(StoreError::RunNotFound { .. }) => Err(RuntimeError::RunNotFound(run_id.clone())),
            Err(e) => Err(e.into()),
        }
    }

    /// Frees a lease this process took but will not drive under.
    pub(super) async fn release(&self, run_id: &RunId, epoch: u64) {
        self.leases.forget(run_id, epoch);
        if let Err(e) = self.store.release_lease(run_id, epoch).await {
            tracing::warn!(%run_id, error = %e, "freeing a lease failed; it lapses on its own");
        }
    }

    /// Drives a stored run that was left running (an await answered, a
    /// pause lifted) on a new task, under the lease it was changed with.
    pub(super) async fn drive_stored(
        self: &Arc<Self>,
        updated: Updated,
    ) -> Result<(), RuntimeError> {
        let Updated {
            record,
            machine,
            shared,
            epoch,
        } = updated;
        if status_of(&machine) != RunStatus::Running {
            return Ok(());
        }
        let tools = match self.agent(record.agent_id.as_str()) {
            Ok(agent) => self.tools(&agent).await.map(|t| (agent, t)),
            Err(e) => Err(e),
        };
        let (agent, tools) = match tools {
            Ok(found) => found,
            Err(e) => {
                self.release(&record.run_id, epoch).await;
                return Err(e);
            }
        };
        let drive = Drive {
            epoch,
            recovering: false,
        };
        self.spawn(
            agent,
            tools,
            shared,
            record.session_id,
            record.labels,
            machine,
            drive,
        );
        Ok(())
    }

    /// Takes the run's lease, changes its stored machine and commits the
    /// change with the events the machine produced. On failure the lease is
    /// freed again.
    pub(super) async fn update_stored(
        self: &Arc<Self>,
        run_id: &RunId,
        change: impl FnOnce(&mut RunMachine, weft_core::Timestamp) -> Result<(), RuntimeError>,
    ) -> Result<Updated, RuntimeError> {
        let epoch = self.acquire(run_id).await?;
        match self.update_leased(run_id, epoch, change).await {
            Ok(updated) => Ok(updated),
            Err(e) => {
                self.release(run_id, epoch).await;
                Err(e)
            }
        }
    }

    async fn update_leased(
        &self,
        run_id: &RunId,
        epoch: u64,
        change: impl FnOnce(&mut RunMachine, weft_core::Timestamp) -> Result<(), RuntimeError>,
    ) -> Result<Updated, RuntimeError> {
        let StoredRun {
            record,
            snapshot: mut machine,
            last_seq,
            ..
        } = match self.stored(run_id).await {
            // Its state cannot be read, so no change applies: it is
            // quarantined (failed), as recovery would.
            Err(RuntimeError::Store(e @ StoreError::Corrupt { .. })) => {
                return Err(match self.quarantine(run_id, epoch, &e).await {
                    true => RuntimeError::Finished(run_id.clone()),
                    false => e.into(),
                });
            }
            other => other?,
        };
        if record.status.is_finished() {
            return Err(RuntimeError::Finished(run_id.clone()));
        }
        let now = self.clock.now();
        change(&mut machine, now)?;
        let shared = self.live_entry(run_id, last_seq);
        shared.reset_log_to(last_seq);
        shared.collect(&*self.clock, &mut machine);
        let pending = shared.begin_commit();
        machine.set_event_seq(shared.seq());
        let status = status_of(&machine);
        let result = self
            .store
            .commit(Commit {
                run_id,
                events: &pending,
                snapshot: Some(&machine),
                status,
                now,
                fence: Some(epoch),
            })
            .await;
        shared.end_commit(result.is_ok());
        result?;
        if status == RunStatus::Running {
            self.leases.hold(run_id, epoch, None);
        }
        Ok(Updated {
            record,
            machine,
            shared,
            epoch,
        })
    }

    /// Cancels a run no task here drives (awaiting, paused, or queued).
    pub(super) async fn cancel_stored(
        self: &Arc<Self>,
        run_id: &RunId,
        reason: &str,
    ) -> Result<(), RuntimeError> {
        let updated = self
            .update_stored(run_id, |machine, _| Ok(machine.cancel(reason.to_owned())?))
            .await?;
        if let Some(outcome) = updated.machine.outcome() {
            // No driver ends this run, so none reports its end: counted
            // here, every run started is counted once when it ends.
            self.observer.observe(&Observation::RunFinished {
                agent: &updated.record.agent_id,
                outcome,
            });
            let kind = crate::observe::outcome_kind(outcome);
            tracing::info!(%run_id, outcome = kind, "run finished");
            self.finished(&updated.shared, Ok(outcome.clone()));
        }
        Ok(())
    }

    /// Pauses a run no task here drives.
    pub(super) async fn pause_stored(self: &Arc<Self>, run_id: &RunId) -> Result<(), RuntimeError> {
        let updated = self
            .update_stored(run_id, |machine, now| Ok(machine.pause(now)?))
            .await?;
        // A run paused while running stays leased by no one: nothing drives it.
        self.leases.forget(run_id, updated.epoch);
        Ok(())
    }

    /// Takes the run's control lock. The guard comes first so that it is
    /// dropped last, after the caller's clone of the entry: an entry nobody
    /// uses any more is then dropped from the live map.
    pub(super) async fn lock_run(self: &Arc<Self>, run_id: &RunId) -> (RunGuard, Arc<RunShared>) {
        let shared = self.live_entry(run_id, 0);
        let lock = shared.control.clone().lock_owned().await;
        let guard = RunGuard {
            inner: self.clone(),
            shared: shared.clone(),
            _lock: Some(lock),
        };
        (guard, shared)
    }

    /// Drops a run's live entry when nothing drives, watches or waits on it.
    fn drop_idle(&self, shared: &Arc<RunShared>) {
        let mut live = self.live();
        // The map's reference and the caller's.
        if Arc::strong_count(shared) <= 2
            && !shared.is_driven()
            && !shared.has_subscribers()
            && live
                .get(&shared.run_id)
                .is_some_and(|e| Arc::ptr_eq(e, shared))
        {
            live.remove(&shared.run_id);
        }
    }
}

/// A held control lock on one run; dropping it also drops the run's live
/// entry when nothing else uses it.
pub(super) struct RunGuard {
    inner: Arc<Inner>,
    shared: Arc<RunShared>,
    _lock: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self._lock = None;
        self.inner.drop_idle(&self.shared);
    }
}
