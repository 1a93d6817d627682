//! Controlling runs: answers to awaits, pause, continue and cancel. Each
//! takes the run's own control lock, which a driver also holds across its
//! last commit and its release of the run, so a control call sees the run
//! either driven here (and signals its driver) or stored (and changes the
//! stored run under the run's lease, see `stored`), never in between. A
//! pause or cancel of a run another process drives reaches that process
//! through the store (see `remote`), and so does an answer to one of its
//! running tools' questions; a continue of such a run is
//! [`RuntimeError::DrivenElsewhere`].

use weft_core::lease::ControlRequest;
use weft_core::run::RunError;

use super::*;
use crate::inbox::DriverMsg;

impl Runtime {
    /// Answers one item of a paused run's await; continues the run once every
    /// item is answered. A rejected answer leaves the run paused and intact.
    ///
    /// An elicitation (a running tool's question) of a run driven here goes
    /// to its driver, which records and commits the answer and then hands it
    /// to the tool; one of a run driven by another process is checked
    /// against the stored question and goes to that process through the
    /// store (see `remote`). One of a run whose driver died is
    /// [`RuntimeError::DrivenElsewhere`]: recovery withdraws the question.
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
        let mut leased = false;
        let updated = self
            .inner
            .update_stored(run_id, |machine, now| {
                leased = true;
                if machine.elicitations().iter().any(|e| &e.id == item) {
                    // Its driver died: recovery withdraws the question.
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
                progress = machine.answer(item, answer.clone(), now)?;
                Ok(())
            })
            .await;
        let updated = match updated {
            Err(RuntimeError::DrivenElsewhere(_)) if !leased => {
                drop(entry);
                return self.inner.answer_remote(run_id, item, answer).await;
            }
            other => other?,
        };
        drop(entry);
        self.inner.drive_stored(updated).await?;
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
        self.inner
            .control_stored(run_id, ControlRequest::Pause, || {
                self.inner.pause_stored(run_id)
            })
            .await
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
        let updated = self
            .inner
            .update_stored(run_id, |machine, now| {
                machine
                    .continue_run(now)
                    .map_err(|_| RuntimeError::NotPaused(run_id.clone()))?;
                Ok(())
            })
            .await?;
        self.inner.drive_stored(updated).await
    }

    /// Cancels a run: a live run stops its tools and finishes; a paused run
    /// finishes at once. `Ok` means the run ended cancelled (or, driven by
    /// another process, that the cancel is stored for it): a run driven
    /// here is asked to cancel and waited for, so a run that finished
    /// otherwise first (its last plan was already taken) is
    /// [`RuntimeError::Finished`], never a cancel answered and ignored.
    pub async fn cancel(&self, run_id: &RunId, reason: &str) -> Result<(), RuntimeError> {
        loop {
            let shared = {
                let (_guard, shared) = self.inner.lock_run(run_id).await;
                if !shared.is_driven() {
                    let request = ControlRequest::Cancel {
                        reason: reason.to_owned(),
                    };
                    return self
                        .inner
                        .control_stored(run_id, request, || {
                            self.inner.cancel_stored(run_id, reason)
                        })
                        .await;
                }
                shared.request_cancel(reason);
                shared
            };
            match cancel_taken(run_id, &shared).await {
                // The driver let the run go without ending it (its lease
                // passed on): ask again, now of the stored run.
                None => continue,
                Some(taken) => return taken,
            }
        }
    }
}

/// How long a cancel waits for the driver it asked to end the run. The
/// driver drops its planner call and its tools' calls at once, so only a
/// store that does not answer makes it wait this long; the cancel stands.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Waits for the driver asked to cancel the run to end it: `Ok` when it
/// ended cancelled, [`RuntimeError::Finished`] when it ended otherwise
/// first, `None` when the driver let the run go unended.
async fn cancel_taken(run_id: &RunId, shared: &Arc<RunShared>) -> Option<Result<(), RuntimeError>> {
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    loop {
        let notified = shared.done.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(taken) = taken(run_id, shared) {
            return Some(taken);
        }
        if !shared.is_driven() {
            // A driver ends the run under the control lock: once it is
            // free, the run either ended or was let go.
            let _lock = shared.control.lock().await;
            return taken(run_id, shared);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Some(Ok(()));
        }
        // A driver released without a wake-up is seen at the next look.
        let wait = (deadline - now).min(std::time::Duration::from_millis(50));
        let _ = tokio::time::timeout(wait, notified).await;
    }
}

/// What a driver's end says of a cancel asked of it, once it ended.
fn taken(run_id: &RunId, shared: &RunShared) -> Option<Result<(), RuntimeError>> {
    match shared.finished.get()? {
        Ok(RunOutcome::Cancelled { .. }) => Some(Ok(())),
        Ok(_) => Some(Err(RuntimeError::Finished(run_id.clone()))),
        // The store failed: the run stays at its last commit, uncancelled.
        Err(e) => Some(Err(e.clone())),
    }
}
