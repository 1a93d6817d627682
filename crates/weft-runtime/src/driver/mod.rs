//! The driver: one task per active run, looping on `machine.next_step(now)`.
//!
//! Each iteration does what the step says (plan, resolve, execute, pause or
//! finish), feeds the result back to the machine and commits the step's
//! events with the new snapshot in one store write. The events are the
//! machine's own (collected in order) plus what the driver saw happen (tool
//! starts, streamed text, usage); the driver infers nothing from the
//! machine's state. Tool calls of a batch run
//! concurrently inside the task; cancellation and the machine's deadline are
//! raced against them ([`execute`]); a running call's questions to the
//! human and their answers reach the task through the run's inbox
//! ([`elicit`]). A paused run's task ends; `answer` starts a new one.

mod elicit;
mod execute;
mod log;
mod plan;
pub(crate) mod spans;

use log::LogWriter;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use weft_core::event::EventKind;
use weft_core::planner::{PlanInput, Termination};
use weft_core::run::{PhaseName, PlanKind, RunFailure, RunMachine, RunOutcome, Step, ToolCall};
use weft_core::session::FullStore;
use weft_core::session::{PromptOverride, PromptStore};
use weft_core::store::{RunStatus, RunStore, StoreError};
use weft_core::tool::{Labels, OutputSink, ToolOutput, ToolRequest};
use weft_core::{RunId, SessionId, Timestamp, ToolCallId, TurnId};

use crate::agent::Agent;
use crate::clock::Clock;
use crate::context::Ctx;
use crate::error::RuntimeError;
use crate::events::{RunShared, Sink};
use crate::leases::Leases;
use crate::observe::{Observation, Observer, StepKind};
use crate::session::{self, SessionMemory};
use crate::tools::{AgentTools, Limits};
use crate::toolsets::remind_availability;
use crate::turn;

/// How a driver task ended.
#[derive(Debug)]
pub(crate) enum DriveEnd {
    /// The run finished.
    Finished(RunOutcome),
    /// The run is waiting for await answers; no task remains.
    Paused,
    /// The store failed; the run stays at its last committed snapshot.
    StoreFailed(RuntimeError),
    /// The run's lease was lost (or could no longer be trusted): another
    /// process may drive it now, so this task stopped without another write.
    LeaseLost,
    /// The task panicked; the run stays at its last committed snapshot.
    Panicked(String),
}

impl DriveEnd {
    /// How a failed commit ends the task.
    fn failed(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Store(StoreError::LeaseLost { .. }) => DriveEnd::LeaseLost,
            e => DriveEnd::StoreFailed(e),
        }
    }
}

/// One run being driven.
pub(crate) struct RunTask {
    pub(crate) store: Arc<dyn RunStore>,
    /// Where the run's prompt overrides are kept, when anywhere.
    pub(crate) prompts: Option<Arc<dyn PromptStore>>,
    /// The same store, when it keeps sessions (history, memory, transcript).
    pub(crate) sessions: Option<Arc<dyn FullStore>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) payload_budget: u64,
    pub(crate) agent: Arc<Agent>,
    pub(crate) tools: Arc<AgentTools>,
    pub(crate) shared: Arc<RunShared>,
    pub(crate) session_id: SessionId,
    pub(crate) labels: Arc<Labels>,
    pub(crate) machine: RunMachine,
    /// Set when recovering after a crash: pending calls may have been in
    /// flight ([`RunMachine::recover`] is fed before the first step).
    pub(crate) recovering: bool,
    /// Whether the last tool refresh found every toolset available and
    /// brought the run's reminders in line with that.
    pub(crate) tools_settled: bool,
    /// The run's control lock, taken before the commit that ends this task
    /// and held until the task has released the run.
    pub(crate) held: Option<OwnedMutexGuard<()>>,
    /// The lease epoch this task drives under: every commit carries it.
    pub(crate) epoch: u64,
    pub(crate) leases: Arc<Leases>,
    /// Set when a commit while planning found the lease gone.
    pub(crate) lease_lost: bool,
    /// Set when the machine moved past its last commit on purpose: a
    /// batch's last result waits to be committed with the next plan
    /// ([`RunTask::defer`]).
    pub(crate) deferred: bool,
    pub(crate) observer: Arc<dyn Observer>,
    /// Starts the child runs of agents called as tools.
    pub(crate) children: Arc<dyn weft_core::child::ChildRunner>,
    /// The id of the turn last planned or executed: a turn's plan and its
    /// calls share one.
    pub(crate) turn: Option<(u32, TurnId)>,
    /// This task's `invoke_agent` span, once [`RunTask::drive`] opened it:
    /// the run's GenAI events go on it.
    pub(crate) span: tracing::Span,
}

impl RunTask {
    /// Drives the run until it finishes, pauses or the store fails; returns
    /// how it ended and the run's control lock if the task took it.
    ///
    /// By `&mut self`, so the future that owns the task (the spawned one)
    /// holds it once: consuming `self` kept a second copy of the task in
    /// this future's state for its whole life.
    pub(crate) async fn drive(&mut self) -> (DriveEnd, Option<OwnedMutexGuard<()>>) {
        use tracing::Instrument as _;
        let span = spans::invoke_agent(&self.agent.id, &self.shared.run_id, &self.session_id);
        spans::join_run_trace(&span, &mut self.machine);
        self.span = span.clone();
        let end = self.drive_inner().instrument(span.clone()).await;
        // The span ends with this function, as the task's work does.
        self.span = tracing::Span::none();
        spans::drive_ended(&span, &end);
        if let DriveEnd::Finished(outcome) = &end {
            self.observer.observe(&Observation::RunFinished {
                agent: &self.agent.id,
                outcome,
            });
        }
        (end, self.held.take())
    }

    /// Takes the run's control lock (once) before a commit that ends the
    /// task, so no control call sees the run between that commit and the
    /// task's release of it.
    async fn hold_control(&mut self) {
        if self.held.is_none() {
            self.held = Some(self.shared.control.clone().lock_owned().await);
        }
    }

    /// Commits the step that ends this task, under the run's control lock.
    async fn final_commit(&mut self, mut end: DriveEnd) -> DriveEnd {
        self.hold_control().await;
        // A cancel that came while the run was about to await is taken
        // now: under the control lock no other can come before the commit.
        if matches!(end, DriveEnd::Paused)
            && self.shared.cancel.is_cancelled()
            && self.machine.outcome().is_none()
            && self.machine.cancel(self.shared.cancel_reason()).is_ok()
            && let Some(outcome) = self.machine.outcome()
        {
            end = DriveEnd::Finished(outcome.clone());
        }
        match self.commit().await {
            Ok(()) => end,
            Err(e) => DriveEnd::failed(e),
        }
    }

    async fn drive_inner(&mut self) -> DriveEnd {
        if std::mem::take(&mut self.recovering) {
            // The process that drove the run died in its batch: the
            // machine says which calls run again. What it recorded (the
            // interrupted calls' results, the withdrawn questions) is
            // stored with its state before any call runs: the batch's
            // flushes store events without a snapshot, and a crash after
            // one would have the next process record them again.
            self.machine.recover(&self.tools.catalog, self.clock.now());
            if self.machine.has_events()
                && let Err(e) = self.commit().await
            {
                return DriveEnd::failed(e);
            }
        }
        loop {
            let now = self.clock.now();
            // A cancel is taken before any further step: once it is asked
            // for, no planner or tool step starts.
            if self.shared.cancel.is_cancelled() && self.machine.outcome().is_none() {
                let _ = self.machine.cancel(self.shared.cancel_reason());
            }
            // The pause is taken under the run's control lock, so a
            // `continue` either withdraws it first or finds the run stored
            // as paused.
            if self.shared.pause_requested.load(Ordering::Acquire) {
                self.hold_control().await;
                if self.shared.pause_requested.swap(false, Ordering::AcqRel)
                    && self.machine.outcome().is_none()
                    && self.machine.pause(now).is_ok()
                {
                    spans::paused(&self.span);
                    return self.final_commit(DriveEnd::Paused).await;
                }
                self.held = None;
            }
            match self.machine.next_step(now) {
                Step::Plan { kind, finalize } => {
                    step(&*self.observer, StepKind::Plan);
                    let finalize = finalize.cloned();
                    self.plan(kind, finalize).await;
                }
                Step::Resolve { context } => {
                    step(&*self.observer, StepKind::Resolve);
                    let context = context.clone();
                    let catalog = &self.tools.catalog;
                    turn::resolve(&mut self.machine, &self.agent, context, now, catalog);
                }
                Step::ExecuteTools { calls } => {
                    // No tool starts under a lease that may have passed to
                    // another process.
                    if !self.leases.is_trusted(&self.shared.run_id, self.epoch) {
                        return DriveEnd::LeaseLost;
                    }
                    let calls: Vec<ToolCall> = calls.iter().cloned().collect();
                    step(&*self.observer, StepKind::ExecuteTools);
                    if let Err(e) = self.execute(calls).await {
                        return DriveEnd::failed(e);
                    }
                    continue;
                }
                // The await's or the outcome's events are committed in the
                // same write that stores the new status.
                Step::Await { items, .. } => {
                    step(&*self.observer, StepKind::Await);
                    spans::awaiting(&self.span, items);
                    return self.final_commit(DriveEnd::Paused).await;
                }
                Step::Finish { outcome } => {
                    step(&*self.observer, StepKind::Finish);
                    let outcome = outcome.clone();
                    return self.final_commit(DriveEnd::Finished(outcome)).await;
                }
            }
            if self.lease_lost {
                return DriveEnd::LeaseLost;
            }
            // A step that stored an outcome or an await ends the task
            // without another write.
            if let Some(outcome) = self.machine.outcome() {
                let outcome = outcome.clone();
                return self.final_commit(DriveEnd::Finished(outcome)).await;
            }
            if self.machine.phase_name() == PhaseName::Awaiting {
                step(&*self.observer, StepKind::Await);
                spans::awaiting(&self.span, self.machine.await_items());
                return self.final_commit(DriveEnd::Paused).await;
            }
            if let Err(e) = self.commit().await {
                return DriveEnd::failed(e);
            }
        }
    }

    /// Records what the driver saw, after the machine's events so far.
    fn emit(&mut self, kind: EventKind) {
        self.collect();
        self.shared.emit(&*self.clock, kind);
    }

    /// Records the events the machine produced since the last collection.
    fn collect(&mut self) {
        self.shared.collect(&*self.clock, &mut self.machine);
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The id of turn `n` of this run, `<run id>/<n>`.
    fn turn_id(&mut self, n: u32) -> TurnId {
        match &self.turn {
            Some((cached, id)) if *cached == n => id.clone(),
            _ => {
                let id = TurnId::from_fmt(format_args!("{}/{n}", self.shared.run_id));
                self.turn = Some((n, id.clone()));
                id
            }
        }
    }

    /// Leaves the step just taken (a batch's last result, the machine now
    /// planning) to be committed with the next: when the plan comes at once
    /// both share one write, and one sync to disk. A plan that takes longer
    /// commits it at its first flush, [`log::FLUSH_EVERY`] later, with the
    /// same snapshot (the machine does not move while it plans). So a crash
    /// in that window takes the result back as if the crash came just
    /// before it: the call counts as in flight, as the crash rules say.
    fn defer(&mut self) {
        self.collect();
        self.machine.set_event_seq(self.shared.seq());
        self.deferred = true;
    }

    /// Commits pending events with the current snapshot, retrying briefly.
    async fn commit(&mut self) -> Result<(), RuntimeError> {
        self.deferred = false;
        self.collect();
        self.machine.set_event_seq(self.shared.seq());
        let status = status_of(&self.machine);
        // The commit that completes the run adds its conversation to the
        // session's transcript, in the same write.
        let transcript = match status {
            RunStatus::Completed => session::transcript_of(&self.machine),
            _ => Vec::new(),
        };
        self.log()
            .commit(Some(&self.machine), status, &transcript)
            .await
    }

    /// The writer of this task's log, fenced by its lease.
    fn log(&self) -> LogWriter<'_> {
        LogWriter {
            store: &*self.store,
            shared: &self.shared,
            clock: &*self.clock,
            epoch: self.epoch,
            observer: &*self.observer,
        }
    }
}

/// Tells the observer the driver takes a step.
fn step(observer: &dyn Observer, kind: StepKind) {
    observer.observe(&Observation::Step { kind });
}

/// The store status for the machine's phase.
pub(crate) fn status_of(machine: &RunMachine) -> RunStatus {
    match machine.outcome() {
        Some(RunOutcome::Response { .. } | RunOutcome::ToolResult { .. }) => RunStatus::Completed,
        Some(RunOutcome::Failed { .. }) => RunStatus::Failed,
        Some(RunOutcome::Cancelled { .. }) => RunStatus::Cancelled,
        None if machine.is_paused() => RunStatus::Paused,
        None if machine.phase_name() == PhaseName::Awaiting => RunStatus::Awaiting,
        None => RunStatus::Running,
    }
}

/// Sleeps until the machine's deadline (never when there is none).
/// `deadline` is the deadline and the time it was read at.
async fn sleep_until(deadline: Option<(Timestamp, Timestamp)>) {
    match deadline {
        Some((d, now)) => {
            let wait = Duration::from_millis(d.as_millis().saturating_sub(now.as_millis()));
            tokio::time::sleep(wait).await;
        }
        None => std::future::pending().await,
    }
}
