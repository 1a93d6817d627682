//! Taking runs over: after a crash, from a process that stalled, or from
//! the queue of runs nobody drives. A run is taken only with its lease, so
//! no two processes ever drive it at once; a sweeper claims orphaned runs
//! (running, with a lease that is free or lapsed) every half lease TTL and
//! when a driver here ends, never more than the process has room for
//! (`RuntimeBuilder::max_driven_runs`).
//! A run whose stored state cannot be read is quarantined, not retried;
//! one that no sweep claims (awaiting, paused) is quarantined when someone
//! asks ([`Runtime::quarantine_if_unreadable`]).
//! Also the end of a driver task, and shutting down.

use super::*;
use weft_core::store::{CORRUPT_STATE, StoreError};

use crate::observe::DriveFailure;

/// Most orphans one claim takes.
const CLAIM_BATCH: u32 = 64;

impl Runtime {
    /// Takes over every running run nobody holds (its driver died, or it was
    /// queued) and drives it here; returns how many. Calls that were pending
    /// are re-executed only when their tool is idempotent.
    pub async fn recover_unfinished(&self) -> Result<usize, RuntimeError> {
        let mut recovered = 0;
        loop {
            // Only as many as this process has room for; the others stay
            // queued for a process that has. The places are reserved before
            // the store is asked, so that starts meanwhile cannot take them.
            let mut places = self
                .inner
                .leases
                .reserve(self.inner.max_driven, CLAIM_BATCH as usize);
            let batch = u32::try_from(places.len()).unwrap_or(CLAIM_BATCH);
            if batch == 0 {
                return Ok(recovered);
            }
            let now = self.inner.clock.now();
            let claimed = self
                .inner
                .store
                .claim_orphans(self.inner.leases.request(now), now, batch)
                .await?;
            let full = claimed.len() == batch as usize;
            for held in claimed {
                let (guard, shared) = self.inner.lock_run(&held.run_id).await;
                let place = places.pop();
                match self.inner.drive_claimed(&shared, held.epoch, place).await {
                    Ok(true) => recovered += 1,
                    Ok(false) => {}
                    // One run this process cannot drive (e.g. its agent is not
                    // registered here) must not keep the others from being recovered.
                    Err(e) => {
                        tracing::warn!(run_id = %held.run_id, error = %e, "run not recovered")
                    }
                }
                drop(guard);
            }
            if !full {
                return Ok(recovered);
            }
        }
    }

    /// Takes over one run the store says is running and nobody drives here;
    /// false when it is not in that state, [`RuntimeError::DrivenElsewhere`]
    /// while another process holds its lease.
    pub async fn recover(&self, run_id: &RunId) -> Result<bool, RuntimeError> {
        let (guard, shared) = self.inner.lock_run(run_id).await;
        if shared.is_driven() {
            return Ok(false);
        }
        if self.inner.stored(run_id).await?.record.status != RunStatus::Running {
            return Ok(false);
        }
        let epoch = self.inner.acquire(run_id).await?;
        let driven = self.inner.drive_claimed(&shared, epoch, None).await;
        drop(guard);
        driven
    }

    /// Quarantines run `run_id` when its stored state cannot be read and
    /// no process drives it (an awaiting or paused run, which no sweep
    /// claims): it is failed with reason [`CORRUPT_STATE`] under its lease,
    /// so it leaves its tenant's unfinished runs. True when it was; false
    /// when its state reads, it has ended, or another process holds it.
    pub async fn quarantine_if_unreadable(&self, run_id: &RunId) -> Result<bool, RuntimeError> {
        let (guard, shared) = self.inner.lock_run(run_id).await;
        if shared.is_driven() {
            return Ok(false);
        }
        let error = match self.inner.store.load_run(run_id).await {
            Err(e @ StoreError::Corrupt { .. }) => e,
            Ok(_) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        let epoch = match self.inner.acquire(run_id).await {
            Ok(epoch) => epoch,
            Err(RuntimeError::DrivenElsewhere(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        let quarantined = self.inner.quarantine(run_id, epoch, &error).await;
        drop(guard);
        Ok(quarantined)
    }

    /// Starts a task that takes over orphaned and queued runs now, every
    /// half lease TTL, and whenever a run driven here ends (so a queued run
    /// takes the freed place at once); it ends with the runtime.
    pub fn start_sweeper(&self) -> tokio::task::JoinHandle<()> {
        let inner = Arc::downgrade(&self.inner);
        let period = self.inner.leases.ttl / 2;
        tokio::spawn(async move {
            loop {
                let Some(inner) = inner.upgrade() else {
                    return;
                };
                let runtime = Runtime { inner };
                match runtime.recover_unfinished().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(runs = n, "orphaned runs taken over"),
                    Err(e) => tracing::warn!(error = %e, "looking for orphaned runs failed"),
                }
                let freed = Arc::clone(&runtime.inner);
                drop(runtime);
                let _ = tokio::time::timeout(period, freed.capacity_freed.notified()).await;
            }
        })
    }

    /// Waits, at most `within`, until this process drives no run and every
    /// cancellation it started in the background (of a child run whose
    /// parent's call ended) is stored. A process about to exit calls it
    /// after its last run ends, so a cancelled run's children are cancelled
    /// too rather than left waiting. `false` when `within` passed first.
    pub async fn settle(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let cancelling = self
                .inner
                .cancelling
                .load(std::sync::atomic::Ordering::Acquire);
            if cancelling == 0 && self.inner.leases.is_empty() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops driving every run here at once, as a crash would: driver tasks
    /// are aborted mid-step (what they had not committed is lost) and their
    /// leases are freed, so other processes take the runs over at once.
    pub async fn shutdown(&self) {
        self.inner.stop_control_poll();
        for (held, task) in self.inner.leases.take_all() {
            if let Some(task) = task {
                task.abort();
            }
            if let Some(shared) = self.inner.live_get(&held.run_id) {
                shared.release(held.epoch);
                self.inner.forget(&held.run_id);
                shared.done.notify_waiters();
            }
            if let Err(e) = self
                .inner
                .store
                .release_lease(&held.run_id, held.epoch)
                .await
            {
                tracing::warn!(run_id = %held.run_id, error = %e, "freeing a lease failed; it lapses on its own");
            }
        }
    }
}

impl Inner {
    /// Drives a run whose lease this process just took at `epoch`, from its
    /// stored state; frees the lease when the run cannot be driven here.
    async fn drive_claimed(
        self: &Arc<Self>,
        shared: &Arc<RunShared>,
        epoch: u64,
        place: Option<crate::leases::Place<'_>>,
    ) -> Result<bool, RuntimeError> {
        let run_id = &shared.run_id;
        if shared.is_driven() {
            // A stalled task here held it before: it is fenced now, and the
            // run is claimed again once that task has stopped.
            self.release(run_id, epoch).await;
            return Ok(false);
        }
        let found = async {
            let stored = self.stored(run_id).await?;
            if stored.record.status != RunStatus::Running {
                return Ok(None);
            }
            let agent = self.agent(stored.record.agent_id.as_str())?;
            let tools = self.tools(&agent).await?;
            Ok::<_, RuntimeError>(Some((stored, agent, tools)))
        };
        let (stored, agent, tools) = match found.await {
            Ok(Some(found)) => found,
            Ok(None) => {
                self.release(run_id, epoch).await;
                return Ok(false);
            }
            // A state that cannot be read never will be: retried, it would
            // fail every sweep and hold its tenant's quota for good.
            Err(RuntimeError::Store(e @ StoreError::Corrupt { .. })) => {
                if !self.quarantine(run_id, epoch, &e).await {
                    return Err(e.into());
                }
                return Ok(false);
            }
            Err(e) => {
                self.release(run_id, epoch).await;
                return Err(e);
            }
        };
        self.leases.hold(run_id, epoch, place);
        shared.reset_log_to(stored.last_seq);
        // Only calls pending in the stored snapshot may have been in flight;
        // a run stored while planning starts its next batch afresh.
        let recovering = stored.snapshot.phase_name() == weft_core::run::PhaseName::Executing;
        let drive = Drive { epoch, recovering };
        self.spawn(
            agent,
            tools,
            shared.clone(),
            stored.record.session_id,
            stored.record.labels,
            stored.snapshot,
            drive,
        );
        Ok(true)
    }

    /// Quarantines run `run_id`, whose stored state cannot be read
    /// (`error`), under its lease at `epoch`: the store fails it with reason
    /// [`CORRUPT_STATE`] without reading it, so it leaves its tenant's quota
    /// and is never claimed again. False (and the lease freed) when the
    /// store did not (the run has ended, or the lease moved on).
    pub(super) async fn quarantine(&self, run_id: &RunId, epoch: u64, error: &StoreError) -> bool {
        self.leases.forget(run_id, epoch);
        let now = self.clock.now();
        match self
            .store
            .quarantine_run(run_id, CORRUPT_STATE, epoch, now)
            .await
        {
            Ok(true) => {
                tracing::error!(%run_id, %error, reason = CORRUPT_STATE, "run quarantined: failed, its stored state cannot be read");
                return true;
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(%run_id, error = %e, "quarantining a corrupt run failed"),
        }
        self.release(run_id, epoch).await;
        false
    }

    /// Bookkeeping when the driver task with `epoch` ends, under the run's
    /// control lock (`guard`, taken before the driver's last commit). A pause
    /// or cancel requested while the driver was handing the run back is
    /// applied here, so no request is lost.
    pub(crate) async fn driver_done(
        self: &Arc<Self>,
        shared: &Arc<RunShared>,
        epoch: u64,
        end: &DriveEnd,
        guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    ) {
        self.leases.forget(&shared.run_id, epoch);
        // A queued run may take the place now free.
        self.capacity_freed.notify_one();
        match end {
            DriveEnd::Finished(outcome) => {
                let kind = crate::observe::outcome_kind(outcome);
                tracing::info!(outcome = kind, "run finished");
                shared.release(epoch);
                self.finished(shared, Ok(outcome.clone()));
            }
            DriveEnd::StoreFailed(e) => {
                self.drive_failed(DriveFailure::Store);
                tracing::error!(error = %e, "run left at its last commit: the store failed");
                shared.release(epoch);
                // Free the lease so that a process (this one included) takes
                // the run over once the store is back.
                self.release(&shared.run_id, epoch).await;
                self.finished(shared, Err(e.clone()));
            }
            DriveEnd::LeaseLost => {
                self.drive_failed(DriveFailure::LeaseLost);
                tracing::warn!("run dropped here: its lease lapsed; its new holder drives it");
                self.let_go(shared, epoch);
            }
            DriveEnd::Panicked(message) => {
                self.drive_failed(DriveFailure::Panic);
                tracing::error!(panic = %message, "run driver panicked; the run is paused at its last commit");
                self.let_go(shared, epoch);
                self.release(&shared.run_id, epoch).await;
                // Paused, it waits for a human instead of panicking again in
                // whichever process takes it next.
                if let Err(e) = self.pause_stored(&shared.run_id).await {
                    tracing::warn!(run_id = %shared.run_id, error = %e, "pausing after a panic failed");
                }
            }
            DriveEnd::Paused => {
                tracing::info!("run paused");
                let _guard = match guard {
                    Some(g) => g,
                    None => shared.control.clone().lock_owned().await,
                };
                if !shared.release(epoch) {
                    return;
                }
                if shared.cancel.is_cancelled() {
                    let reason = shared.cancel_reason();
                    if let Err(e) = self.cancel_stored(&shared.run_id, &reason).await {
                        tracing::warn!(run_id = %shared.run_id, error = %e, "late cancel failed");
                    }
                } else if shared.pause_requested.swap(false, Ordering::AcqRel)
                    && let Err(e) = self.pause_stored(&shared.run_id).await
                {
                    tracing::debug!(run_id = %shared.run_id, error = %e, "late pause not applied");
                }
                // Keep the entry only while someone subscribes or waits.
                let mut live = self.live();
                if Arc::strong_count(shared) <= 2 && !shared.has_subscribers() {
                    live.remove(&shared.run_id);
                }
                drop(live);
            }
        }
    }

    /// Tells the observer a driver task ended without an outcome.
    fn drive_failed(&self, reason: DriveFailure) {
        self.observer
            .observe(&crate::observe::Observation::DriveFailed { reason });
    }

    /// Stops treating the run as driven here without an outcome: waiters and
    /// subscribers go on following it from the store.
    fn let_go(&self, shared: &Arc<RunShared>, epoch: u64) {
        if shared.release(epoch) {
            self.forget(&shared.run_id);
        }
        shared.done.notify_waiters();
    }
}
