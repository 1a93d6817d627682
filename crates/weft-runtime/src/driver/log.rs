//! Writing a run's log: commits fenced by the driver's lease epoch, retried
//! briefly, and, while the planner streams, events committed as they come
//! (coalesced every [`FLUSH_EVERY`]) so subscribers see model text live but
//! never before it is stored.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use weft_core::message::Message;
use weft_core::run::RunMachine;
use weft_core::store::{Commit, RunStatus, RunStore, StoreError};

use crate::clock::Clock;
use crate::error::RuntimeError;
use crate::events::RunShared;
use crate::observe::{Observation, Observer};

/// How often streamed events are committed while the planner runs.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(20);

/// How often a failed commit is tried in all.
const COMMIT_ATTEMPTS: u32 = 3;

/// What a driver writes its run's log with.
pub(super) struct LogWriter<'a> {
    pub(super) store: &'a dyn RunStore,
    pub(super) shared: &'a RunShared,
    pub(super) clock: &'a dyn Clock,
    pub(super) epoch: u64,
    pub(super) observer: &'a dyn Observer,
}

impl LogWriter<'_> {
    /// Commits the pending events with `snapshot` (when given) and `status`,
    /// and `transcript` for the run's session, trying again briefly after a
    /// failure; a lost lease or a conflicting event is not retried.
    pub(super) async fn commit(
        &self,
        snapshot: Option<&RunMachine>,
        status: RunStatus,
        transcript: &[Message],
    ) -> Result<(), RuntimeError> {
        let events = self.shared.begin_commit();
        let started = self
            .observer
            .wants_durations()
            .then(std::time::Instant::now);
        let mut attempt = 0;
        let result = loop {
            attempt += 1;
            let commit = Commit {
                run_id: &self.shared.run_id,
                events: &events,
                snapshot,
                status,
                now: self.clock.now(),
                fence: Some(self.epoch),
            };
            let committed = if transcript.is_empty() {
                self.store.commit(commit).await
            } else {
                self.store.commit_with_transcript(commit, transcript).await
            };
            match committed {
                Ok(()) => break Ok(()),
                // Neither changes on a retry.
                Err(e @ (StoreError::LeaseLost { .. } | StoreError::SequenceConflict { .. })) => {
                    break Err(RuntimeError::Store(e));
                }
                Err(e) if attempt < COMMIT_ATTEMPTS => {
                    tracing::warn!(run_id = %self.shared.run_id, error = %e, attempt, "commit failed; retrying");
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                }
                Err(e) => break Err(RuntimeError::Store(e)),
            }
        };
        self.shared.end_commit(result.is_ok());
        if result.is_ok() {
            self.observer.observe(&Observation::Commit {
                elapsed: started.map_or(Duration::ZERO, |s| s.elapsed()),
                events: events.len(),
            });
        }
        result
    }

    /// Commits the pending events, if any, without a snapshot (the machine
    /// has not moved). Only a lost lease is an error: after any other
    /// failure the events wait for the next commit.
    pub(super) async fn flush(&self) -> Result<(), RuntimeError> {
        if !self.shared.has_pending() {
            return Ok(());
        }
        match self.commit(None, RunStatus::Running, &[]).await {
            Err(e @ RuntimeError::Store(StoreError::LeaseLost { .. })) => Err(e),
            Err(e) => {
                tracing::warn!(run_id = %self.shared.run_id, error = %e, "events not stored yet");
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }

    /// Runs `plan`, committing the events it streams every [`FLUSH_EVERY`]
    /// (without a snapshot: the machine has not moved, except for a step
    /// whose commit was `deferred`, whose snapshot the first flush writes).
    /// `None` when the lease was lost meanwhile; a failed flush otherwise
    /// keeps its events for the next commit.
    pub(super) async fn streaming<T>(
        &self,
        plan: impl Future<Output = T>,
        mut deferred: Option<&RunMachine>,
    ) -> Option<T> {
        tokio::pin!(plan);
        // A plan that is ready at once (a scripted planner) makes no timer
        // (making one reads the clock).
        let first = std::future::poll_fn(|cx| Poll::Ready(plan.as_mut().poll(cx))).await;
        if let Poll::Ready(r) = first {
            return Some(r);
        }
        let timer = tokio::time::sleep(FLUSH_EVERY);
        tokio::pin!(timer);
        loop {
            tokio::select! {
                biased;
                r = &mut plan => return Some(r),
                () = &mut timer => {
                    let flushed = match deferred {
                        Some(machine) => self.commit(Some(machine), RunStatus::Running, &[]).await,
                        None => self.flush().await,
                    };
                    match flushed {
                        Err(RuntimeError::Store(StoreError::LeaseLost { .. })) => return None,
                        // Only the deferred step's commit fails here (a flush
                        // keeps its events itself): the step stays for the
                        // commit after the plan.
                        Err(e) => {
                            tracing::warn!(run_id = %self.shared.run_id, error = %e, "step not stored yet");
                        }
                        Ok(()) => deferred = None,
                    }
                    timer.as_mut().reset(tokio::time::Instant::now() + FLUSH_EVERY);
                }
            }
        }
    }
}
