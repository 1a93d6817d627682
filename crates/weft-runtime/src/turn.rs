//! One planning turn, as the live driver and `weft replay` both take it:
//! the planner's view of the run (its context, the tools the machine
//! offers), the call to the planner, and feeding its result to the machine
//! with invalid calls answered by the agent's policy. What differs between
//! the two is only where the inputs come from and where events go: the
//! driver streams and stores them, replay compares them with a recording.

use std::borrow::Cow;
use std::sync::Arc;

use weft_core::planner::{
    PlanInput, PlanResult, PlanResumeInput, PlannerError, RunContext, Termination,
};
use weft_core::run::{
    InvalidToolCallContext, PlanKind, PlanOutcome, RunFailure, RunMachine, ToolCatalog,
};
use weft_core::tool::{Labels, ToolSpec};
use weft_core::{RunId, SessionId, Timestamp, TurnId};

use crate::agent::Agent;

/// The run a turn plans for, as the planner is told.
pub(crate) fn run_context(
    agent: &Agent,
    run_id: &RunId,
    session_id: &SessionId,
    turn_id: TurnId,
    labels: &Arc<Labels>,
) -> RunContext {
    RunContext {
        agent_id: agent.id.clone(),
        run_id: run_id.clone(),
        session_id: session_id.clone(),
        turn_id,
        labels: labels.clone(),
    }
}

/// The tools the machine offers this turn: all of `specs`, or (a
/// finalizing turn declares the tools it forbids, see
/// [`RunMachine::is_offered`]) those it offers.
pub(crate) fn offered_tools<'a>(
    machine: &RunMachine,
    specs: &'a [ToolSpec],
) -> Cow<'a, [ToolSpec]> {
    if specs.iter().all(|s| machine.is_offered(s)) {
        Cow::Borrowed(specs)
    } else {
        Cow::Owned(
            specs
                .iter()
                .filter(|s| machine.is_offered(s))
                .cloned()
                .collect(),
        )
    }
}

/// Calls the agent's planner for a turn of `kind` (a resumed turn sees the
/// run's tool outputs and the termination it must finalize for).
pub(crate) async fn call_planner(
    agent: &Agent,
    kind: PlanKind,
    base: PlanInput<'_>,
    machine: &RunMachine,
    finalize: Option<&Termination>,
) -> Result<PlanResult, PlannerError> {
    match kind {
        PlanKind::Start => agent.planner.plan_start(base).await,
        PlanKind::Resume => {
            agent
                .planner
                .plan_resume(PlanResumeInput {
                    base,
                    tool_outputs: machine.tool_outputs(),
                    finalize,
                })
                .await
        }
    }
}

/// Feeds the planner's answer to the machine: a failed planner fails the
/// run, a result is taken and its invalid calls resolved.
pub(crate) fn apply_plan(
    machine: &mut RunMachine,
    agent: &Agent,
    result: Result<PlanResult, PlannerError>,
    now: Timestamp,
    catalog: &dyn ToolCatalog,
) {
    let result = match result {
        Ok(result) => result,
        Err(e) => {
            let _ = machine.fail(RunFailure::Planner { message: e.message });
            return;
        }
    };
    match machine.plan_result(result, now, catalog) {
        Ok(PlanOutcome::NeedsResolution(context)) => {
            resolve(machine, agent, *context, now, catalog)
        }
        Ok(PlanOutcome::Continue { .. } | PlanOutcome::TurnRetried) => {}
        Err(e) => {
            let _ = machine.fail(RunFailure::Planner {
                message: format!("the planner broke the run protocol: {e}"),
            });
        }
    }
}

/// Answers invalid tool calls with the agent's policy until none is left.
pub(crate) fn resolve(
    machine: &mut RunMachine,
    agent: &Agent,
    mut context: InvalidToolCallContext,
    now: Timestamp,
    catalog: &dyn ToolCatalog,
) {
    loop {
        let resolution = agent.invalid_calls.resolve(&context);
        match machine.resolve_or_fail(resolution, now, catalog) {
            Ok(PlanOutcome::NeedsResolution(next)) => context = *next,
            Ok(_) => return,
            Err(e) => {
                let _ = machine.fail(RunFailure::Protocol {
                    message: format!("invalid-call resolution failed: {e}"),
                });
                return;
            }
        }
    }
}
