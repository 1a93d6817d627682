//! [`RunProjection`]: what a run's event log says about the run, folded from
//! the events alone — status, outcome, tool outputs, the open await, the
//! termination. Readers that only have the log (a UI, a replay, another
//! process following a run) derive the run's state with it, and the property
//! tests check that it always agrees with the machine that produced the log.

use std::sync::Arc;

use crate::awaiting::AwaitItem;
use crate::event::{EventKind, OLD_AWAIT_PAUSE_REASON};
use crate::ids::{AgentId, AwaitItemId, RunId, SessionId, ToolCallId};
use crate::planner::Termination;
use crate::run::step::RunOutcome;
use crate::tool::ToolOutput;

/// The state of a run as its events tell it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunProjection {
    /// The agent, once `RunStarted` was seen.
    pub agent_id: Option<AgentId>,
    /// The session, once `RunStarted` was seen.
    pub session_id: Option<SessionId>,
    /// Every tool output recorded, in the order the events announced them.
    pub outputs: Vec<Arc<ToolOutput>>,
    /// The items of the open await, if the run awaits answers, or the
    /// pending elicitations of running calls.
    pub awaiting: Vec<AwaitItem>,
    /// The items of the open await answered so far.
    pub answered: Vec<AwaitItemId>,
    /// Whether a human paused the run.
    pub paused: bool,
    /// The termination being finalized, if a limit was hit.
    pub termination: Option<Termination>,
    /// The outcome, once the run finished.
    pub outcome: Option<RunOutcome>,
    /// The child runs its calls started (agents called as tools), in order,
    /// each once.
    pub children: Vec<(ToolCallId, RunId)>,
    /// The last event was a blocking `AwaitRequested`: in logs written
    /// before awaits stopped pausing, a `RunPaused` that follows it is the
    /// await's, not a person's.
    await_pause_due: bool,
}

impl RunProjection {
    /// The projection of `events`, in order.
    pub fn of<'a>(events: impl IntoIterator<Item = &'a EventKind>) -> Self {
        let mut p = Self::default();
        for e in events {
            p.apply(e);
        }
        p
    }

    /// Folds one more event in.
    pub fn apply(&mut self, event: &EventKind) {
        let await_pause_due = std::mem::take(&mut self.await_pause_due);
        match event {
            EventKind::RunStarted {
                agent_id,
                session_id,
                ..
            } => {
                self.agent_id = Some(agent_id.clone());
                self.session_id = Some(session_id.clone());
            }
            EventKind::ToolFinished { output } => self.outputs.push(output.clone()),
            // A running call's question joins the others; the run goes on
            // executing (no pause follows).
            EventKind::AwaitRequested { items } if items.iter().all(is_elicitation) => {
                self.awaiting.extend(items.iter().cloned());
            }
            EventKind::AwaitRequested { items } => {
                self.awaiting = items.clone();
                self.answered.clear();
                self.await_pause_due = true;
            }
            EventKind::AwaitSatisfied { item_id, .. } | EventKind::AwaitWithdrawn { item_id }
                if self
                    .awaiting
                    .iter()
                    .any(|i| i.id() == item_id && is_elicitation(i)) =>
            {
                self.awaiting.retain(|i| i.id() != item_id);
            }
            EventKind::AwaitWithdrawn { .. } => {}
            EventKind::AwaitSatisfied { item_id, .. } => {
                self.answered.push(item_id.clone());
                if self.awaiting.iter().all(|i| self.answered.contains(i.id())) {
                    self.awaiting.clear();
                    self.answered.clear();
                }
            }
            // A pause is a person's, except the one old logs wrote right
            // after a blocking await.
            EventKind::RunPaused { reason } => {
                self.paused |= !(await_pause_due && reason == OLD_AWAIT_PAUSE_REASON);
            }
            EventKind::RunContinued => self.paused = false,
            EventKind::Termination { termination } => {
                self.termination = Some(termination.clone());
            }
            EventKind::RunFinished { outcome } => {
                self.outcome = Some(outcome.clone());
                self.awaiting.clear();
                self.answered.clear();
                self.paused = false;
            }
            EventKind::ChildRunLinked {
                tool_call_id,
                child_run_id,
                ..
            } => {
                if !self.children.iter().any(|(_, c)| c == child_run_id) {
                    self.children
                        .push((tool_call_id.clone(), child_run_id.clone()));
                }
            }
            EventKind::PlannerThought { .. }
            | EventKind::ChildEvent { .. }
            | EventKind::AssistantChunk { .. }
            | EventKind::Thinking { .. }
            | EventKind::ToolCallArgsDelta { .. }
            | EventKind::ToolStarted { .. }
            | EventKind::ToolOutputDelta { .. }
            | EventKind::ModelOutput { .. }
            | EventKind::PromptRendered { .. }
            | EventKind::ToolsetUnavailable { .. }
            | EventKind::ToolsetAvailable { .. }
            | EventKind::Usage { .. } => {}
        }
    }
}

fn is_elicitation(item: &AwaitItem) -> bool {
    matches!(item, AwaitItem::Elicitation(_))
}
