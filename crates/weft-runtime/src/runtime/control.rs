//! Controlling runs: answers to awaits, pause, continue, cancel and
//! recovery after a crash. Each takes the run's own control lock, which a
//! driver also holds across its last commit and its release of the run, so
//! a control call sees the run either driven (and signals its driver) or
//! stored (and changes the stored run), never in between.

use weft_core::run::RunError;

use super::*;
use crate::inbox::DriverMsg;

impl Runtime {
    /// Answers one item of a paused run's await; continues the run once every
    /// item is answered. A rejected answer leaves the run paused and intact.
    ///
    /// An elicitation (a running tool's question) of a run driven here goes
    /// to its driver, which records and commits the answer and then hands it
    /// to the tool; one of a run driven by another process is
    /// [`RuntimeError::DrivenElsewhere`].
    pub async fn answer(
        &self,
        run_id: &RunId,
        item: &AwaitItemId,
        answer: AwaitAnswer,
    ) -> Result<AwaitProgress, RuntimeError> {
        let (guard, entry) = self.inner.lock_run(run_id).await;
        if entry.is_driven() {
            let (reply, progress) = tokio::sync::oneshot::channel();
            let msg = DriverMsg::Answer {
                item: item.clone(),
                answer,
                reply,
            };
            let sent = entry
                .inbox
                .sender()
                .is_some_and(|inbox| inbox.send(msg).is_ok());
            // The driver may need the lock to end the batch: never wait on it holding the lock.
            drop(guard);
            drop(entry);
            if !sent {
                return Err(RuntimeError::NotAwaiting {
                    run_id: run_id.clone(),
                    status: RunStatus::Running.as_str(),
                });
            }
            // A driver that ended the batch first dropped the question with it.
            return progress
                .await
                .unwrap_or_else(|_| Err(RunError::UnknownAwaitItem(item.clone()).into()));
        }
        let mut progress = AwaitProgress::Satisfied;
        let (record, machine, shared) = self
            .inner
            .update_stored(run_id, |machine, now| {
                if machine.elicitations().iter().any(|e| &e.id == item) {
                    return Err(RuntimeError::DrivenElsewhere(run_id.clone()));
                }
                if machine.is_paused()
                    || machine.phase_name() != weft_core::run::PhaseName::Awaiting
                {
                    return Err(RuntimeError::NotAwaiting {
                        run_id: run_id.clone(),
                        status: status_of(machine).as_str(),
                    });
                }
                progress = machine.answer(item, answer, now)?;
                Ok(())
            })
            .await?;
        drop(entry);
        self.inner.agent(record.agent_id.as_str())?;
        if progress == AwaitProgress::Satisfied {
            self.inner.drive_stored(record, machine, shared).await?;
        }
        Ok(progress)
    }

    /// Pauses a run. A driven run pauses at its next step (a running planner
    /// call or tool batch completes first); a run awaiting answers pauses at
    /// once. Paused time does not count against the time budget.
    pub async fn pause(&self, run_id: &RunId) -> Result<(), RuntimeError> {
        let (_guard, shared) = self.inner.lock_run(run_id).await;
        if shared.is_driven() {
            shared.pause_requested.store(true, Ordering::Release);
            return Ok(());
        }
        self.inner.pause_stored(run_id).await
    }

    /// Continues a paused run.
    pub async fn continue_run(&self, run_id: &RunId) -> Result<(), RuntimeError> {
        let (_guard, shared) = self.inner.lock_run(run_id).await;
        if shared.is_driven() {
            // Still driving: withdraw a pause that has not happened yet.
            if shared.pause_requested.swap(false, Ordering::AcqRel) {
                return Ok(());
            }
            return Err(RuntimeError::NotPaused(run_id.clone()));
        }
        let (record, machine, shared) = self
            .inner
            .update_stored(run_id, |machine, now| {
                machine
                    .continue_run(now)
                    .map_err(|_| RuntimeError::NotPaused(run_id.clone()))?;
                Ok(())
            })
            .await?;
        if machine.phase_name() != weft_core::run::PhaseName::Awaiting {
            self.inner.drive_stored(record, machine, shared).await?;
        }
        Ok(())
    }

    /// Cancels a run: a live run stops its tools and finishes; a paused run
    /// finishes at once.
    pub async fn cancel(&self, run_id: &RunId, reason: &str) -> Result<(), RuntimeError> {
        let (_guard, shared) = self.inner.lock_run(run_id).await;
        if shared.is_driven() {
            shared.request_cancel(reason);
            return Ok(());
        }
        self.inner.cancel_stored(run_id, reason).await
    }

    /// Recovers every run the store says is running (after a restart). Calls
    /// that were pending are re-executed only when their tool is idempotent.
    pub async fn recover_unfinished(&self) -> Result<usize, RuntimeError> {
        let runs = self
            .inner
            .store
            .list_runs(&RunFilter {
                statuses: vec![RunStatus::Running],
                ..RunFilter::default()
            })
            .await?;
        let mut recovered = 0;
        for record in runs {
            match self.recover(&record.run_id).await {
                Ok(true) => recovered += 1,
                Ok(false) => {}
                // One run this process cannot drive (e.g. its agent is not
                // registered here) must not keep the others from being recovered.
                Err(e) => tracing::warn!(run_id = %record.run_id, error = %e, "run not recovered"),
            }
        }
        Ok(recovered)
    }

    /// Recovers one run the store says is running and nobody drives here
    /// (after a crash); false when it is not in that state.
    pub async fn recover(&self, run_id: &RunId) -> Result<bool, RuntimeError> {
        let (_guard, shared) = self.inner.lock_run(run_id).await;
        if shared.is_driven() {
            return Ok(false);
        }
        let Some(stored) = self.inner.store.load_run(run_id).await? else {
            return Err(RuntimeError::RunNotFound(run_id.clone()));
        };
        if stored.record.status != RunStatus::Running {
            return Ok(false);
        }
        let agent = self.inner.agent(stored.record.agent_id.as_str())?;
        let tools = self.inner.tools(&agent).await?;
        let seq = stored.snapshot.event_seq();
        shared.continue_log_after(seq);
        // Only calls pending in the stored snapshot may have been in flight;
        // a run stored while planning starts its next batch afresh.
        let in_flight = stored.snapshot.phase_name() == weft_core::run::PhaseName::Executing;
        self.inner.spawn(
            agent,
            tools,
            shared,
            stored.record.session_id,
            stored.record.labels,
            stored.snapshot,
            in_flight,
        );
        Ok(true)
    }
}

impl Inner {
    /// Drives a stored run that can go on (an await answered, a pause lifted)
    /// on a new task.
    async fn drive_stored(
        self: &Arc<Self>,
        record: RunRecord,
        machine: RunMachine,
        shared: Arc<RunShared>,
    ) -> Result<(), RuntimeError> {
        let agent = self.agent(record.agent_id.as_str())?;
        let tools = self.tools(&agent).await?;
        self.spawn(
            agent,
            tools,
            shared,
            record.session_id,
            record.labels,
            machine,
            false,
        );
        Ok(())
    }

    /// Loads a run that no task drives, changes its machine, and commits the
    /// change with the events the machine produced.
    async fn update_stored(
        &self,
        run_id: &RunId,
        change: impl FnOnce(&mut RunMachine, weft_core::Timestamp) -> Result<(), RuntimeError>,
    ) -> Result<(RunRecord, RunMachine, Arc<RunShared>), RuntimeError> {
        let stored = self.stored(run_id).await?;
        if stored.record.status.is_finished() {
            return Err(RuntimeError::Finished(run_id.clone()));
        }
        let mut machine = stored.snapshot;
        let now = self.clock.now();
        change(&mut machine, now)?;
        let shared = self.live_entry(run_id, machine.event_seq());
        shared.continue_log_after(machine.event_seq());
        shared.collect(&*self.clock, &mut machine);
        let pending = shared.begin_commit();
        machine.set_event_seq(shared.seq());
        let result = self
            .store
            .commit(Commit {
                run_id,
                events: &pending,
                snapshot: Some(&machine),
                status: status_of(&machine),
                now,
            })
            .await;
        shared.end_commit();
        result?;
        Ok((stored.record, machine, shared))
    }

    /// Cancels a run no task drives.
    async fn cancel_stored(
        self: &Arc<Self>,
        run_id: &RunId,
        reason: &str,
    ) -> Result<(), RuntimeError> {
        let status = self.stored(run_id).await?.record.status;
        if status == RunStatus::Running {
            // Driven by another process, or by none after a crash before
            // `recover_unfinished`: only its driver may change it.
            return Err(RuntimeError::NotAwaiting {
                run_id: run_id.clone(),
                status: status.as_str(),
            });
        }
        let (_, machine, shared) = self
            .update_stored(run_id, |machine, _| Ok(machine.cancel(reason.to_owned())?))
            .await?;
        if let Some(outcome) = machine.outcome() {
            self.finished(&shared, Ok(outcome.clone()));
        }
        Ok(())
    }

    /// Pauses a run no task drives.
    async fn pause_stored(self: &Arc<Self>, run_id: &RunId) -> Result<(), RuntimeError> {
        self.update_stored(run_id, |machine, now| Ok(machine.pause(now)?))
            .await
            .map(|_| ())
    }

    /// Takes the run's control lock. The guard comes first so that it is
    /// dropped last, after the caller's clone of the entry: an entry nobody
    /// uses any more is then dropped from the live map.
    async fn lock_run(self: &Arc<Self>, run_id: &RunId) -> (RunGuard, Arc<RunShared>) {
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
        match end {
            DriveEnd::Finished(outcome) => {
                let kind = match outcome {
                    RunOutcome::Response { .. } | RunOutcome::ToolResult { .. } => "completed",
                    RunOutcome::Failed { .. } => "failed",
                    RunOutcome::Cancelled { .. } => "cancelled",
                };
                tracing::info!(outcome = kind, "run finished");
                shared.release(epoch);
                self.finished(shared, Ok(outcome.clone()));
            }
            DriveEnd::StoreFailed(e) => {
                tracing::error!(error = %e, "run left at its last commit: the store failed");
                shared.release(epoch);
                self.finished(shared, Err(e.clone()));
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
}

/// A held control lock on one run; dropping it also drops the run's live
/// entry when nothing else uses it.
struct RunGuard {
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
