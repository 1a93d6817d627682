//! Following runs: their events ([`Runtime::subscribe`]) and their
//! outcome ([`Runtime::outcome`]), wherever they are driven.

use super::*;
use crate::events::CATCH_UP_PAGE;

impl Runtime {
    /// The run's events after sequence number `after`: the stored ones,
    /// then live ones, wherever the run is driven.
    pub async fn subscribe(&self, run_id: &RunId, after: u64) -> Result<EventStream, RuntimeError> {
        self.subscribe_paged(run_id, after, CATCH_UP_PAGE).await
    }

    /// [`Runtime::subscribe`], reading the stored log `page` events at a
    /// time (the stream holds at most one page it has not delivered).
    pub async fn subscribe_paged(
        &self,
        run_id: &RunId,
        after: u64,
        page: std::num::NonZeroU32,
    ) -> Result<EventStream, RuntimeError> {
        let mut shared = self.inner.live_get(run_id);
        if shared.is_none() {
            // A run nobody drives now (paused, awaiting, or in another process's
            // hands) still gets live events when it is recovered here.
            let stored = self.inner.stored(run_id).await?;
            if !stored.record.status.is_finished() {
                let entry = self.inner.live_entry(run_id, stored.last_seq);
                entry.reset_log_to(stored.last_seq);
                shared = Some(entry);
            }
        }
        EventStream::open(
            self.inner.store.clone(),
            shared.as_ref(),
            run_id.clone(),
            after,
            page,
        )
        .await
    }

    /// Waits for a run's outcome, wherever it is driven: a run driven by
    /// another process (or not at all) is followed from the store, read
    /// every [`OUTCOME_POLL`].
    pub async fn outcome(&self, run_id: &RunId) -> Result<RunOutcome, RuntimeError> {
        loop {
            let shared = match self.inner.live_get(run_id) {
                Some(shared) if shared.is_driven() => shared,
                _ => {
                    let stored = self.inner.stored(run_id).await?;
                    if let Some(outcome) = stored.snapshot.outcome() {
                        return Ok(outcome.clone());
                    }
                    // Paused or driven by another process: wait on a live
                    // entry (which a driver here would wake), or until the
                    // next look at the store.
                    self.inner.live_entry(run_id, stored.last_seq)
                }
            };
            let notified = shared.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(end) = shared.finished.get() {
                return end.clone();
            }
            let _ = tokio::time::timeout(OUTCOME_POLL, notified).await;
            if let Some(end) = shared.finished.get() {
                return end.clone();
            }
        }
    }
}
