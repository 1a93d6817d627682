//! Pauses, cancels and answers to running tools' questions of runs another
//! process drives. The asking process records the request on the run in the
//! store (see `weft_core::lease::ControlRequest` and `RemoteAnswer`); the
//! process holding the run's lease polls for the requests on its runs every
//! [`CONTROL_POLL`] while it holds any, and applies each as if it had been
//! asked directly. A pause or cancel outlives its driver: whoever takes the
//! run over next picks it up. An answer is checked against the stored
//! question before it is recorded, so a wrong one is refused to its sender.

use std::sync::Weak;

use weft_core::lease::{ControlRequest, HeldLease, RemoteAnswer};
use weft_core::run::RunError;

use crate::inbox::DriverMsg;

use super::*;

/// How often a process holding leases looks for control requests on its runs.
pub(crate) const CONTROL_POLL: Duration = Duration::from_millis(250);

/// At most this many answers are handed on per poll.
const ANSWERS_PER_POLL: u32 = 64;

/// How often a request is retried when the run changes hands meanwhile.
const ATTEMPTS: usize = 3;

impl Inner {
    /// Pauses or cancels a run no task here drives: under its lease when
    /// nobody else holds it (`here`), else by a request to its holder.
    pub(super) async fn control_stored<F, Fut>(
        self: &Arc<Self>,
        run_id: &RunId,
        request: ControlRequest,
        here: F,
    ) -> Result<(), RuntimeError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<(), RuntimeError>>,
    {
        for _ in 0..ATTEMPTS {
            match here().await {
                Err(RuntimeError::DrivenElsewhere(_)) => {
                    if self.store.request_control(run_id, &request).await? {
                        return Ok(());
                    }
                    // The run stopped running in between: change it here.
                }
                other => return other,
            }
        }
        Err(RuntimeError::DrivenElsewhere(run_id.clone()))
    }

    /// Answers a running tool's question of a run another process drives:
    /// checked against the question in the stored run, then recorded for
    /// the driver, which hands it to the tool after committing it.
    pub(super) async fn answer_remote(
        &self,
        run_id: &RunId,
        item: &AwaitItemId,
        answer: AwaitAnswer,
    ) -> Result<AwaitProgress, RuntimeError> {
        let stored = self.stored(run_id).await?;
        if stored.record.status.is_finished() {
            return Err(RuntimeError::Finished(run_id.clone()));
        }
        let mut machine = stored.snapshot;
        if !machine.elicitations().iter().any(|e| &e.id == item) {
            // An await of a run that is changing hands: answer it once stored.
            return Err(RuntimeError::DrivenElsewhere(run_id.clone()));
        }
        let progress = machine.answer(item, answer.clone(), self.clock.now())?;
        if self.store.request_answer(run_id, item, &answer).await? {
            Ok(progress)
        } else {
            // The run stopped meanwhile, or the question has an answer waiting.
            Err(RunError::UnknownAwaitItem(item.clone()).into())
        }
    }

    /// Hands a recorded answer to the driver of its run, if it still drives
    /// the run at the answer's epoch; the driver refuses it if the question
    /// is gone.
    fn apply_answer(&self, remote: RemoteAnswer) {
        let Some(shared) = self.live_get(&remote.held.run_id) else {
            return;
        };
        if shared.driven_at() != remote.held.epoch {
            return;
        }
        // Nobody waits for the driver's reply: the sender was answered already.
        let (reply, _) = tokio::sync::oneshot::channel();
        if let Some(inbox) = shared.inbox.sender() {
            let _ = inbox.send(DriverMsg::Answer {
                item: remote.item,
                answer: remote.answer,
                reply,
            });
        }
    }

    /// Starts the poll for control requests once, on the current tokio runtime.
    pub(super) fn start_control_poll(self: &Arc<Self>) {
        self.control_poll
            .get_or_init(|| tokio::spawn(poll(Arc::downgrade(self))).abort_handle());
    }

    /// Stops the poll (on shutdown).
    pub(super) fn stop_control_poll(&self) {
        if let Some(task) = self.control_poll.get() {
            task.abort();
        }
    }

    /// Applies `request` to the driver of `held.run_id` if it still drives
    /// the run at `held.epoch`.
    fn apply_control(&self, held: &HeldLease, request: &ControlRequest) {
        let Some(shared) = self.live_get(&held.run_id) else {
            return;
        };
        if shared.driven_at() != held.epoch {
            return;
        }
        match request {
            ControlRequest::Pause => shared.pause_requested.store(true, Ordering::Release),
            ControlRequest::Cancel { reason } => shared.request_cancel(reason),
        }
    }
}

async fn poll(inner: Weak<Inner>) {
    loop {
        tokio::time::sleep(CONTROL_POLL).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.leases.is_empty() {
            continue;
        }
        match inner.store.pending_controls(&inner.leases.owner).await {
            Ok(requests) => {
                for (held, request) in &requests {
                    inner.apply_control(held, request);
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading control requests failed"),
        }
        let answers = match inner
            .store
            .pending_answers(&inner.leases.owner, ANSWERS_PER_POLL)
            .await
        {
            Ok(answers) => answers,
            Err(e) => {
                tracing::warn!(error = %e, "reading answers failed");
                continue;
            }
        };
        for answer in answers {
            let (run_id, item) = (answer.held.run_id.clone(), answer.item.clone());
            inner.apply_answer(answer);
            if let Err(e) = inner.store.delete_answer(&run_id, &item).await {
                tracing::warn!(%run_id, error = %e, "deleting a handed-on answer failed");
            }
        }
    }
}
