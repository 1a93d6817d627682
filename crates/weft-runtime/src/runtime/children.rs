//! The runtime's [`ChildRunner`]: starts the child run that answers a
//! parent's tool call (an agent called as a tool), or finds the one an
//! earlier attempt of the call started, and follows it to its outcome.
//!
//! - The child's id comes from the parent's run and call
//!   (`weft_core::child::child_run_id`): a call run again after a crash finds
//!   its child, which is recovered like any run (here, or by whichever
//!   process takes it over), so the child never runs twice.
//! - The child's caps are clipped to what is left of the parent's: its
//!   time budget, tool calls and turns (see `crate::children::budget`).
//! - The child is reported through the parent's link; the parent's machine
//!   records `ChildRunLinked`, and once that is committed the child's events
//!   are shown in the parent's log as `ChildEvent`s while it runs.
//! - A child that waits on a human makes the parent's call ask the same
//!   question (see `crate::children::ask`); the answer goes to the child. A
//!   question the human dismisses cancels the child.
//! - When the parent's call ends before its child (the parent is cancelled,
//!   or its time budget runs out), the child is cancelled, in the
//!   background; `Runtime::settle` waits for such cancellations. A process that
//!   stops driving the parent (a crash, a shutdown) leaves the child alone:
//!   the parent's next driver follows it.

use std::sync::Weak;

use async_trait::async_trait;
use weft_core::awaiting::AwaitItem;
use weft_core::child::{ChildEnd, ChildRequest, ChildRunner, ParentLink, child_run_id};
use weft_core::elicitation::Elicitor;
use weft_core::event::{EventKind, RunEvent};
use weft_core::run::RunProjection;
use weft_core::store::StoreError;
use weft_core::tool::ToolError;

use super::*;
use crate::children::{ask, budget};

/// Error code of a call whose child run could not be started or followed.
const CHILD_FAILED: &str = "child_run_failed";

/// Events of the child read per page while catching up.
const PAGE: u32 = 500;

/// Child runs of a runtime's calls.
pub(crate) struct ChildRuns(pub(crate) Weak<Inner>);

#[async_trait]
impl ChildRunner for ChildRuns {
    async fn run_child(
        &self,
        parent: &ParentLink,
        request: ChildRequest,
        ask: &Elicitor,
    ) -> Result<ChildEnd, ToolError> {
        let inner = self
            .0
            .upgrade()
            .ok_or_else(|| unavailable("the runtime is shutting down"))?;
        let runtime = Runtime { inner };
        let child = child_run_id(&parent.run_id, &parent.tool_call_id);
        let agent_id = request.agent.clone();
        let started = start_or_find(&runtime, parent, &child, request).await?;
        parent.linker.link(child.clone(), agent_id).await;
        let guard = CancelUnlessDone {
            runtime: runtime.clone(),
            parent: parent.run_id.clone(),
            child: child.clone(),
            done: false,
        };
        let outcome = follow(&runtime, &parent.run_id, &child, ask, started).await;
        let mut guard = guard;
        guard.done = outcome.is_ok();
        outcome.map(end_of)
    }
}

/// How the parent's call sees the child's outcome.
fn end_of(outcome: RunOutcome) -> ChildEnd {
    match outcome {
        RunOutcome::Response { message, .. } => ChildEnd::Response { message },
        RunOutcome::ToolResult { result, .. } => ChildEnd::ToolResult { result },
        RunOutcome::Failed { failure } => ChildEnd::Failed {
            reason: serde_json::to_string(&failure).unwrap_or_else(|_| format!("{failure:?}")),
        },
        RunOutcome::Cancelled { reason } => ChildEnd::Cancelled { reason },
    }
}

fn unavailable(message: impl Into<String>) -> ToolError {
    ToolError::new(ToolError::UNAVAILABLE, message)
}

fn failed(child: &RunId, e: impl std::fmt::Display) -> ToolError {
    ToolError::new(CHILD_FAILED, format!("child run `{child}`: {e}"))
}

/// Starts the child (true), or takes over the one an earlier attempt started
/// when nobody drives it any more (false).
async fn start_or_find(
    runtime: &Runtime,
    parent: &ParentLink,
    child: &RunId,
    request: ChildRequest,
) -> Result<bool, ToolError> {
    let agent = runtime
        .inner
        .agent(request.agent.as_str())
        .map_err(|e| ToolError::new(ToolError::UNAVAILABLE, e.to_string()))?;
    let policy = budget::clip(agent.policy.clone(), parent);
    let start = StartRequest {
        session_id: None,
        messages: request.messages,
        labels: request.labels,
        run_id: Some(child.clone()),
        policy: Some(policy),
    };
    match runtime.start(request.agent.as_str(), start).await {
        Ok(_) => Ok(true),
        Err(RuntimeError::Store(StoreError::RunExists { .. })) => {
            match runtime.recover(child).await {
                // Driven here or by a live process (which the store tells
                // us about), or not running (finished, awaiting, paused).
                Ok(_) | Err(RuntimeError::DrivenElsewhere(_)) => Ok(false),
                Err(e) => Err(failed(child, e)),
            }
        }
        Err(e) => Err(failed(child, e)),
    }
}

/// Follows the child to its outcome: catches up on its log (asking what
/// it still waits for), then shows its live events in the parent's log and
/// asks each new question. The events of a child this call just started,
/// made while its link was committed, are shown too (`fresh`); a child
/// found again after a crash showed them before.
async fn follow(
    runtime: &Runtime,
    parent: &RunId,
    child: &RunId,
    ask: &Elicitor,
    fresh: bool,
) -> Result<RunOutcome, ToolError> {
    let store = &runtime.inner.store;
    let mut past = RunProjection::default();
    let mut seen = 0;
    loop {
        let page = store
            .read_events(child, seen, Some(PAGE))
            .await
            .map_err(|e| failed(child, e))?;
        let Some(last) = page.last() else { break };
        seen = last.seq;
        for e in &page {
            past.apply(&e.kind);
            if fresh {
                show(runtime, parent, child, e);
            }
        }
        if page.len() < PAGE as usize {
            break;
        }
    }
    if let Some(outcome) = past.outcome {
        return Ok(outcome);
    }
    let open: Vec<AwaitItem> = past
        .awaiting
        .iter()
        .filter(|i| !past.answered.contains(i.id()))
        .cloned()
        .collect();
    for item in &open {
        ask_for_child(runtime, child, item, ask).await?;
    }
    let mut events = runtime
        .subscribe(child, seen)
        .await
        .map_err(|e| failed(child, e))?;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| failed(child, e))?;
        show(runtime, parent, child, &event);
        match event.kind {
            EventKind::RunFinished { outcome } => return Ok(outcome),
            EventKind::AwaitRequested { items } => {
                for item in &items {
                    ask_for_child(runtime, child, item, ask).await?;
                }
            }
            _ => {}
        }
    }
    runtime.outcome(child).await.map_err(|e| failed(child, e))
}

/// Shows the child's `event` in the parent's log (model outputs stay in the
/// child's own).
fn show(runtime: &Runtime, parent: &RunId, child: &RunId, event: &RunEvent) {
    if !matches!(event.kind, EventKind::ModelOutput { .. }) {
        runtime.inner.emit_to(
            parent,
            EventKind::ChildEvent {
                child_run_id: child.clone(),
                child_seq: event.seq,
                event: Box::new(event.kind.clone()),
            },
        );
    }
}

/// Asks the human the child's `item` through the parent's call and answers
/// the child; a dismissed question cancels the child.
async fn ask_for_child(
    runtime: &Runtime,
    child: &RunId,
    item: &AwaitItem,
    ask: &Elicitor,
) -> Result<(), ToolError> {
    let Some(question) = ask::question(item) else {
        let why = "it waits for external tool results, which only its caller can give";
        let _ = runtime.cancel(child, why).await;
        return Err(failed(child, why));
    };
    let response = ask
        .elicit(question)
        .await
        .map_err(|e| failed(child, format!("its question could not be asked: {e}")))?;
    let Some(answer) = ask::answer(item, response) else {
        let why = "the human dismissed its question";
        let _ = runtime.cancel(child, why).await;
        return Err(failed(child, why));
    };
    match runtime.answer(child, item.id(), answer).await {
        Ok(_) => Ok(()),
        // Answered meanwhile (by another follower, or through the API).
        Err(RuntimeError::Protocol(weft_core::run::RunError::UnknownAwaitItem(_))) => Ok(()),
        Err(e) => Err(failed(child, e)),
    }
}

/// Cancels the child when the parent's call ends before it, unless this
/// process stopped driving the parent (a crash or a shutdown), whose next
/// driver follows the child again.
struct CancelUnlessDone {
    runtime: Runtime,
    parent: RunId,
    child: RunId,
    done: bool,
}

impl Drop for CancelUnlessDone {
    fn drop(&mut self) {
        if self.done || !self.runtime.inner.leases.holds(&self.parent) {
            return;
        }
        let (runtime, child) = (self.runtime.clone(), self.child.clone());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let cancelling = &runtime.inner.cancelling;
            cancelling.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            handle.spawn(async move {
                if let Err(e) = runtime.cancel(&child, "its parent's call ended").await {
                    tracing::warn!(run_id = %child, error = %e, "cancelling a child run failed");
                }
                runtime
                    .inner
                    .cancelling
                    .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            });
        }
    }
}

impl Inner {
    /// Adds an event to the log of `run_id` if it is driven here; it is
    /// committed with the driver's next flush.
    fn emit_to(&self, run_id: &RunId, kind: EventKind) {
        if let Some(shared) = self.live_get(run_id)
            && shared.finished.get().is_none()
        {
            shared.emit(&*self.clock, kind);
        }
    }
}
