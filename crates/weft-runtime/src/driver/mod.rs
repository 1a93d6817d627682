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

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::OwnedMutexGuard;
use weft_core::event::EventKind;
use weft_core::planner::{
    Decision, PlanInput, PlanResumeInput, PlannerError, RunContext, Termination,
};
use weft_core::run::{
    InvalidToolCallContext, PhaseName, PlanKind, PlanOutcome, Resolution, RunError, RunFailure,
    RunMachine, RunOutcome, Step, ToolCall,
};
use weft_core::store::{Commit, RunStatus, RunStore};
use weft_core::tool::{
    Labels, OutputSink, RetryHint, RetryReason, ToolError, ToolOutput, ToolRequest, ToolSpec,
};
use weft_core::{RunId, SessionId, Timestamp, ToolCallId, TurnId};

use crate::agent::Agent;
use crate::clock::Clock;
use crate::context::Ctx;
use crate::error::RuntimeError;
use crate::events::{RunShared, Sink};
use crate::tools::{AgentTools, Limits};
use crate::toolsets::remind_availability;

/// How a driver task ended.
#[derive(Debug)]
pub(crate) enum DriveEnd {
    /// The run finished.
    Finished(RunOutcome),
    /// The run is waiting for await answers; no task remains.
    Paused,
    /// The store failed; the run stays at its last committed snapshot.
    StoreFailed(RuntimeError),
}

/// One run being driven.
pub(crate) struct RunTask {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) payload_budget: u64,
    pub(crate) agent: Arc<Agent>,
    pub(crate) tools: Arc<AgentTools>,
    pub(crate) shared: Arc<RunShared>,
    pub(crate) session_id: SessionId,
    pub(crate) labels: Arc<Labels>,
    pub(crate) machine: RunMachine,
    /// Set when recovering after a crash: pending calls may have been in flight.
    pub(crate) recovering: bool,
    /// Whether the last tool refresh found every toolset available and
    /// brought the run's reminders in line with that.
    pub(crate) tools_settled: bool,
    /// The run's control lock, taken before the commit that ends this task
    /// and held until the task has released the run.
    pub(crate) held: Option<OwnedMutexGuard<()>>,
}

/// Whether the previous commit failed and how often to retry a commit.
const COMMIT_ATTEMPTS: u32 = 3;

impl RunTask {
    /// Drives the run until it finishes, pauses or the store fails; returns
    /// how it ended and the run's control lock if the task took it.
    pub(crate) async fn drive(mut self) -> (DriveEnd, Option<OwnedMutexGuard<()>>) {
        let end = self.drive_inner().await;
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
    async fn final_commit(&mut self, end: DriveEnd) -> DriveEnd {
        self.hold_control().await;
        match self.commit().await {
            Ok(()) => end,
            Err(e) => DriveEnd::StoreFailed(e),
        }
    }

    async fn drive_inner(&mut self) -> DriveEnd {
        loop {
            let now = self.clock.now();
            // The pause is taken under the run's control lock, so a
            // `continue` either withdraws it first or finds the run stored
            // as paused.
            if self.shared.pause_requested.load(Ordering::Acquire) {
                self.hold_control().await;
                if self.shared.pause_requested.swap(false, Ordering::AcqRel)
                    && self.machine.outcome().is_none()
                    && self.machine.pause(now).is_ok()
                {
                    return self.final_commit(DriveEnd::Paused).await;
                }
                self.held = None;
            }
            match self.machine.next_step(now) {
                Step::Plan { kind, finalize } => {
                    let finalize = finalize.cloned();
                    self.plan(kind, finalize).await;
                }
                Step::Resolve { context } => {
                    let context = context.clone();
                    self.resolve(context);
                }
                Step::ExecuteTools { calls } => {
                    let calls: Vec<ToolCall> = calls.iter().cloned().collect();
                    if let Err(e) = self.execute(calls).await {
                        return DriveEnd::StoreFailed(e);
                    }
                    continue;
                }
                // The await's or the outcome's events are committed in the
                // same write that stores the new status.
                Step::Await { .. } => return self.final_commit(DriveEnd::Paused).await,
                Step::Finish { outcome } => {
                    let outcome = outcome.clone();
                    return self.final_commit(DriveEnd::Finished(outcome)).await;
                }
            }
            // A step that stored an outcome or an await ends the task
            // without another write.
            if let Some(outcome) = self.machine.outcome() {
                let outcome = outcome.clone();
                return self.final_commit(DriveEnd::Finished(outcome)).await;
            }
            if self.machine.phase_name() == PhaseName::Awaiting {
                return self.final_commit(DriveEnd::Paused).await;
            }
            if let Err(e) = self.commit().await {
                return DriveEnd::StoreFailed(e);
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

    /// Commits pending events with the current snapshot, retrying briefly.
    async fn commit(&mut self) -> Result<(), RuntimeError> {
        self.collect();
        let events = self.shared.begin_commit();
        self.machine.set_event_seq(self.shared.seq());
        let status = status_of(&self.machine);
        let mut attempt = 0;
        let result = loop {
            attempt += 1;
            let commit = Commit {
                run_id: &self.shared.run_id,
                events: &events,
                snapshot: Some(&self.machine),
                status,
                now: self.now(),
            };
            match self.store.commit(commit).await {
                Ok(()) => break Ok(()),
                Err(e) if attempt < COMMIT_ATTEMPTS => {
                    tracing::warn!(run_id = %self.shared.run_id, error = %e, attempt, "commit failed; retrying");
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt))).await;
                }
                Err(e) => break Err(RuntimeError::Store(e)),
            }
        };
        self.shared.end_commit();
        result
    }

    async fn plan(&mut self, kind: PlanKind, finalize: Option<Termination>) {
        // The planner streams its events straight into the log: what the
        // machine said before (a termination) goes first.
        self.collect();
        self.refresh_tools().await;
        let run_id: &RunId = &self.shared.run_id;
        let run = RunContext {
            agent_id: self.agent.id.clone(),
            run_id: run_id.clone(),
            session_id: self.session_id.clone(),
            turn_id: TurnId::new(format!("{run_id}/{}", self.machine.turn() + 1)),
            labels: self.labels.clone(),
        };
        let tools: Cow<'_, [ToolSpec]> = if self
            .tools
            .specs
            .iter()
            .all(|s| self.machine.is_allowed(&s.name))
        {
            Cow::Borrowed(&self.tools.specs)
        } else {
            Cow::Owned(
                self.tools
                    .specs
                    .iter()
                    .filter(|s| self.machine.is_allowed(&s.name))
                    .cloned()
                    .collect(),
            )
        };
        let ctx = Ctx::new(&self.agent, run_id, self.machine.state());
        let sink = Sink {
            shared: &self.shared,
            clock: &*self.clock,
        };
        let base = PlanInput {
            messages: self.machine.transcript(),
            run: &run,
            context: &ctx,
            events: &sink,
            reminders: self.machine.reminders(),
            tools: &tools,
        };
        let planner = &self.agent.planner;
        let fut = async {
            match kind {
                PlanKind::Start => planner.plan_start(base).await,
                PlanKind::Resume => {
                    planner
                        .plan_resume(PlanResumeInput {
                            base,
                            tool_outputs: self.machine.tool_outputs(),
                            finalize: finalize.as_ref(),
                        })
                        .await
                }
            }
        };
        let deadline = self.machine.poll_timeout().map(|d| (d, self.clock.now()));
        let cancel = self.shared.cancel.clone();
        let result = tokio::select! {
            r = fut => Some(r),
            () = cancel.cancelled() => None,
            // The deadline passed while planning: the plan is dropped and the
            // next step (finalize, or a finalizer timeout) takes over.
            () = sleep_until(deadline) => return,
        };
        let changes = ctx.into_changes();
        drop(tools);
        if let Some(changes) = changes {
            changes.apply(&mut self.machine);
        }
        let now = self.now();
        match result {
            None => {
                let _ = self.machine.cancel(self.shared.cancel_reason());
            }
            Some(Err(e)) => self.planner_failed(e),
            Some(Ok(result)) => {
                // An answer that was not streamed is shown whole, before
                // the machine records the run's end.
                if let Decision::FinalResponse { message } = &result.decision
                    && !result.streamed
                {
                    let text = message.joined_text();
                    if !text.is_empty() {
                        self.emit(EventKind::AssistantChunk { text });
                    }
                }
                match self.machine.plan_result(result, now, &self.tools.catalog) {
                    Ok(PlanOutcome::Continue { .. } | PlanOutcome::TurnRetried) => {}
                    Ok(PlanOutcome::NeedsResolution(context)) => self.resolve(*context),
                    Err(e) => {
                        let _ = self.machine.fail(RunFailure::Planner {
                            message: format!("the planner broke the run protocol: {e}"),
                        });
                    }
                }
            }
        }
    }

    /// Picks up tool-list changes and toolsets that started or stopped
    /// working, and tells the model through reminders.
    async fn refresh_tools(&mut self) {
        // Every toolset was up at the last look, the reminders say so, and
        // no toolset can change its list: nothing to list again.
        if self.tools_settled && !self.agent.started.can_change() {
            return;
        }
        match self.agent.current_tools(false).await {
            Ok(tools) => self.tools = tools,
            Err(e) => {
                tracing::warn!(run_id = %self.shared.run_id, error = %e, "listing tools failed; keeping the previous list")
            }
        }
        remind_availability(&mut self.machine, &self.tools);
        self.tools_settled = self.tools.unavailable.is_empty();
    }

    fn planner_failed(&mut self, e: PlannerError) {
        let _ = self
            .machine
            .fail(RunFailure::Planner { message: e.message });
    }

    /// Answers invalid tool calls with the agent's policy until none is left.
    fn resolve(&mut self, mut context: InvalidToolCallContext) {
        loop {
            let resolution = self.agent.invalid_calls.resolve(&context);
            let mut labels = Labels::new();
            labels.insert("kind".to_owned(), "invalid_tool_call".to_owned());
            self.emit(EventKind::PlannerThought {
                text: format!(
                    "invalid call `{}` ({}): {}; resolution: {}",
                    context.tool_name,
                    context.tool_call_id,
                    context.reason.describe(&context.tool_name),
                    resolution_name(&resolution)
                ),
                labels,
            });
            let now = self.now();
            let outcome = match self.machine.resolve(resolution, now, &self.tools.catalog) {
                Err(RunError::RetryLimitReached { .. } | RunError::RepairNotAllowed(_)) => self
                    .machine
                    .resolve(Resolution::Fail, now, &self.tools.catalog),
                other => other,
            };
            match outcome {
                Ok(PlanOutcome::NeedsResolution(next)) => context = *next,
                Ok(_) => return,
                Err(e) => {
                    let _ = self.machine.fail(RunFailure::Other {
                        message: format!("invalid-call resolution failed: {e}"),
                    });
                    return;
                }
            }
        }
    }
}

fn resolution_name(r: &Resolution) -> &'static str {
    match r {
        Resolution::Fail => "fail",
        Resolution::Retry { .. } => "retry",
        Resolution::Repair { .. } => "repair",
        Resolution::Skip { .. } => "skip",
    }
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
