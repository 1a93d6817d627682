//! [`RunMachine`]: the run's state and its transitions. See the module docs of
//! [`crate::run`] for the kinds of methods and the driver loop.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::awaiting::{AwaitAnswer, AwaitItem, Confirmation};
use crate::event::EventKind;
use crate::ids::{AgentId, AwaitItemId, SessionId, ToolCallId};
use crate::message::{Message, Part, Role};
use crate::planner::{
    CallArguments, Decision, PlanResult, Reminder, Termination, TerminationReason,
};
use crate::run::catalog::{
    InvalidReason, InvalidToolCallContext, PlanOutcome, Resolution, ToolCatalog,
};
use crate::run::clock::Clock;
use crate::run::error::RunError;
use crate::run::outbox::Outbox;
use crate::run::policy::Policy;
use crate::run::render::render_tool_output;
use crate::run::step::{PendingCalls, PhaseName, PlanKind, RunFailure, RunOutcome, Step, ToolCall};
use crate::run::transcript::Transcript;
use crate::time::Timestamp;
use crate::tool::{ToolError, ToolErrorCode, ToolIdent, ToolOutput, ToolResultBody};

/// The snapshot format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// How to create a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The agent running.
    pub agent_id: AgentId,
    /// The session the run belongs to.
    pub session_id: SessionId,
    /// The run's limits.
    pub policy: Policy,
    /// The conversation the run starts from (session history plus input).
    pub messages: Vec<Message>,
}

impl RunConfig {
    /// A run of `agent_id` in `session_id` on `messages`, with the default policy.
    pub fn new(
        agent_id: impl Into<AgentId>,
        session_id: impl Into<SessionId>,
        messages: Vec<Message>,
    ) -> Self {
        Self {
            agent_id: agent_id.into(),
            session_id: session_id.into(),
            policy: Policy::default(),
            messages,
        }
    }

    /// The same run under `policy`.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }
}

/// Progress of an await after an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwaitProgress {
    /// More items need answers.
    Pending {
        /// How many.
        remaining: usize,
    },
    /// Every item is answered; the run moves on.
    Satisfied,
}

/// A run's decisions as a sans-IO state machine; see [`crate::run`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMachine {
    format: Format,
    policy: Policy,
    phase: Phase,
    turn: u32,
    retries_used: u32,
    calls_made: u32,
    failures_in_row: u32,
    next_call_seq: u64,
    clock: Clock,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finalize: Option<Finalize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    restrict_to: Option<ToolIdent>,
    transcript: Transcript,
    outputs: Vec<Arc<ToolOutput>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    state: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    reminders: Vec<Reminder>,
    #[serde(default)]
    event_seq: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    paused: bool,
    #[serde(skip)]
    outbox: Outbox,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
enum Phase {
    Planning { kind: PlanKind },
    Resolving(Box<Resolving>),
    Executing(Batch),
    Awaiting(Box<Awaiting>),
    Finished { outcome: RunOutcome },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Batch {
    calls: Vec<ToolCall>,
    results: Vec<Option<Arc<ToolOutput>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Resolving {
    preamble: Vec<Part>,
    calls: Vec<Checked>,
    current: usize,
    context: InvalidToolCallContext,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Checked {
    id: ToolCallId,
    requested: String,
    arguments: CallArguments,
    parent: Option<ToolCallId>,
    verdict: Verdict,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Verdict {
    Valid { name: ToolIdent, payload: Value },
    Invalid(InvalidReason),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Awaiting {
    items: Vec<AwaitItem>,
    answers: Vec<Option<AwaitAnswer>>,
    then: AfterAwait,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum AfterAwait {
    Plan,
    Execute(Batch),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Finalize {
    termination: Termination,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deadline: Option<Timestamp>,
}

impl RunMachine {
    /// A new run at `now`, about to plan its first turn; its first event
    /// (`RunStarted`) waits in the outbox.
    pub fn new(config: RunConfig, now: Timestamp) -> Self {
        let mut outbox = Outbox::default();
        outbox.push(EventKind::RunStarted {
            agent_id: config.agent_id,
            session_id: config.session_id,
            input: config.messages.clone(),
        });
        Self {
            format: Format,
            policy: config.policy,
            phase: Phase::Planning {
                kind: PlanKind::Start,
            },
            turn: 0,
            retries_used: 0,
            calls_made: 0,
            failures_in_row: 0,
            next_call_seq: 0,
            clock: Clock::started(now),
            finalize: None,
            restrict_to: None,
            transcript: Transcript::new(config.messages),
            outputs: Vec::new(),
            state: BTreeMap::new(),
            reminders: Vec::new(),
            event_seq: 0,
            paused: false,
            outbox,
        }
    }

    // ---- getters -------------------------------------------------------

    /// The run's policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The phase the machine is in.
    pub fn phase_name(&self) -> PhaseName {
        match self.phase {
            Phase::Planning { .. } => PhaseName::Planning,
            Phase::Resolving(_) => PhaseName::Resolving,
            Phase::Executing(_) => PhaseName::Executing,
            Phase::Awaiting(_) => PhaseName::Awaiting,
            Phase::Finished { .. } => PhaseName::Finished,
        }
    }

    /// Planner decisions accepted so far.
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// Tool calls accepted for execution so far.
    pub fn tool_calls_made(&self) -> u32 {
        self.calls_made
    }

    /// The conversation so far.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Every tool output so far, in order.
    pub fn tool_outputs(&self) -> &[Arc<ToolOutput>] {
        &self.outputs
    }

    /// The termination being finalized, if any.
    pub fn termination(&self) -> Option<&Termination> {
        self.finalize.as_ref().map(|f| &f.termination)
    }

    /// The outcome, once finished.
    pub fn outcome(&self) -> Option<&RunOutcome> {
        match &self.phase {
            Phase::Finished { outcome } => Some(outcome),
            _ => None,
        }
    }

    /// Active time used up to `now`, in milliseconds (awaits excluded).
    pub fn active_ms(&self, now: Timestamp) -> u64 {
        self.clock.active_ms(now)
    }

    /// Whether a human paused the run (see [`RunMachine::pause`]).
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Sequence number of the last event the driver recorded for this run.
    ///
    /// The driver commits events together with the snapshot, so a resumed
    /// run continues its log from here without gaps.
    pub fn event_seq(&self) -> u64 {
        self.event_seq
    }

    /// Per-run planner state.
    pub fn state(&self) -> &BTreeMap<String, Value> {
        &self.state
    }

    /// Active reminders.
    pub fn reminders(&self) -> &[Reminder] {
        &self.reminders
    }

    /// The results recorded so far for the batch being executed or confirmed.
    pub fn batch_results(&self) -> impl Iterator<Item = &Arc<ToolOutput>> {
        let batch = match &self.phase {
            Phase::Executing(b) => Some(b),
            Phase::Awaiting(a) => match &a.then {
                AfterAwait::Execute(b) => Some(b),
                AfterAwait::Plan => None,
            },
            _ => None,
        };
        batch.into_iter().flat_map(|b| b.results.iter().flatten())
    }

    /// The oldest event the machine produced that the driver has not
    /// collected; see [`crate::run`]. The driver records exactly these
    /// (plus its own IO facts: tool starts, streamed text, usage).
    pub fn poll_event(&mut self) -> Option<EventKind> {
        self.outbox.pop_front()
    }

    /// Every event the driver has not collected yet, oldest first.
    pub fn drain_events(&mut self) -> impl Iterator<Item = EventKind> + '_ {
        self.outbox.drain()
    }

    /// Whether events wait to be collected.
    pub fn has_events(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Whether the planner may call `tool` this turn.
    pub fn is_allowed(&self, tool: &ToolIdent) -> bool {
        self.finalize.is_none()
            && self
                .policy
                .allowed_tools
                .as_ref()
                .is_none_or(|a| a.contains(tool))
            && self.restrict_to.as_ref().is_none_or(|r| r == tool)
    }

    /// The tool call being executed or awaited with this id, if any.
    pub fn pending_call(&self, id: &ToolCallId) -> Option<&ToolCall> {
        let batch = match &self.phase {
            Phase::Executing(b) => b,
            Phase::Awaiting(a) => match &a.then {
                AfterAwait::Execute(b) => b,
                AfterAwait::Plan => return None,
            },
            _ => return None,
        };
        batch.calls.iter().find(|c| &c.id == id)
    }

    /// The next time `next_step` must be called even without input.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        match self.phase {
            Phase::Finished { .. } | Phase::Awaiting(_) => None,
            _ => match &self.finalize {
                Some(f) => f.deadline,
                None => {
                    let budget = self.policy.time_budget?;
                    self.clock
                        .deadline(u64::try_from(budget.as_millis()).unwrap_or(u64::MAX))
                }
            },
        }
    }

    // ---- mutators (planner services) -------------------------------------

    /// Records that events up to `seq` belong to this snapshot.
    pub fn set_event_seq(&mut self, seq: u64) {
        self.event_seq = self.event_seq.max(seq);
    }

    /// Sets a per-run planner state value.
    pub fn set_state(&mut self, key: String, value: Value) {
        self.state.insert(key, value);
    }

    /// Adds a reminder, replacing one with the same id.
    pub fn add_reminder(&mut self, reminder: Reminder) {
        self.reminders.retain(|r| r.id != reminder.id);
        self.reminders.push(reminder);
    }

    /// Removes a reminder by id.
    pub fn remove_reminder(&mut self, id: &str) {
        self.reminders.retain(|r| r.id != id);
    }

    // ---- output --------------------------------------------------------

    /// What the driver must do now; see [`Step`]. Applies the time budget.
    pub fn next_step(&mut self, now: Timestamp) -> Step<'_> {
        self.check_time(now);
        match &self.phase {
            Phase::Planning { kind } => Step::Plan {
                kind: *kind,
                finalize: self.finalize.as_ref().map(|f| &f.termination),
            },
            Phase::Resolving(r) => Step::Resolve {
                context: &r.context,
            },
            Phase::Executing(b) => Step::ExecuteTools {
                calls: PendingCalls {
                    calls: &b.calls,
                    results: &b.results,
                },
            },
            Phase::Awaiting(a) => Step::Await {
                items: &a.items,
                answers: &a.answers,
            },
            Phase::Finished { outcome } => Step::Finish { outcome },
        }
    }

    fn check_time(&mut self, now: Timestamp) {
        if matches!(self.phase, Phase::Finished { .. } | Phase::Awaiting(_)) {
            return;
        }
        if let Some(f) = &self.finalize {
            if f.deadline.is_some_and(|d| now >= d) {
                let termination = f.termination.clone();
                self.finish(RunOutcome::Failed {
                    failure: RunFailure::FinalizerTimeout { termination },
                });
            }
            return;
        }
        let Some(budget) = self.policy.time_budget else {
            return;
        };
        let budget_ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
        if self.clock.active_ms(now) < budget_ms {
            return;
        }
        self.terminate(
            Termination {
                reason: TerminationReason::TimeBudget,
                message: format!("time budget of {budget_ms} ms exhausted"),
            },
            Some(now.saturating_add(self.policy.finalizer_grace)),
        );
        let phase = std::mem::replace(
            &mut self.phase,
            Phase::Planning {
                kind: PlanKind::Resume,
            },
        );
        match phase {
            Phase::Executing(mut batch) => {
                for (call, slot) in batch.calls.iter().zip(batch.results.iter_mut()) {
                    if slot.is_none() {
                        let out = Arc::new(not_executed(
                            call,
                            ToolError::CANCELLED,
                            "cancelled: the run's time budget was exhausted",
                        ));
                        self.outbox.push(EventKind::ToolFinished {
                            output: out.clone(),
                        });
                        *slot = Some(out);
                    }
                }
                self.complete_batch(batch);
            }
            Phase::Resolving(r) => {
                self.abandon_turn(
                    *r,
                    None,
                    "not executed: the run's time budget was exhausted",
                );
            }
            Phase::Planning { .. } | Phase::Awaiting(_) | Phase::Finished { .. } => {}
        }
    }

    // ---- inputs --------------------------------------------------------

    /// Feeds the planner's decision. See [`PlanOutcome`] for what follows.
    pub fn plan_result(
        &mut self,
        result: PlanResult,
        now: Timestamp,
        catalog: &dyn ToolCatalog,
    ) -> Result<PlanOutcome, RunError> {
        let Phase::Planning { .. } = self.phase else {
            return Err(self.wrong_phase("plan_result"));
        };
        let finalizing = self.finalize.is_some();
        match result.decision {
            Decision::FinalResponse { message } => {
                self.turn += 1;
                self.transcript.push(message.clone());
                self.finish(RunOutcome::Response {
                    message,
                    termination: self.termination().cloned(),
                });
                Ok(PlanOutcome::Continue {
                    response_hook_suppressed: result.streamed,
                })
            }
            Decision::FinalToolResult { result: value } => {
                self.turn += 1;
                self.finish(RunOutcome::ToolResult {
                    result: value,
                    termination: self.termination().cloned(),
                });
                Ok(PlanOutcome::Continue {
                    response_hook_suppressed: result.streamed,
                })
            }
            Decision::ToolCalls { .. } | Decision::Await { .. } if finalizing => {
                Err(RunError::Finalizing)
            }
            Decision::ToolCalls { preamble, calls } => {
                self.accept_calls(preamble, calls, now, catalog)
            }
            Decision::Await { preamble, items } => {
                self.check_await_items(&items)?;
                self.turn += 1;
                self.restrict_to = None;
                let mut parts = preamble;
                for item in &items {
                    match item {
                        AwaitItem::Questions(q) => parts.push(Part::ToolUse {
                            id: q.tool_call_id.clone(),
                            name: q.tool_name.to_string(),
                            input: Arc::new(q.payload.clone()),
                        }),
                        AwaitItem::ExternalTools(e) => {
                            parts.extend(e.items.iter().map(|c| Part::ToolUse {
                                id: c.tool_call_id.clone(),
                                name: c.tool_name.to_string(),
                                input: Arc::new(c.payload.clone()),
                            }))
                        }
                        AwaitItem::Clarification(_) | AwaitItem::Confirmation(_) => {}
                    }
                }
                if !parts.is_empty() {
                    self.transcript.push(Message {
                        role: Role::Assistant,
                        parts,
                    });
                }
                self.enter_await(items, AfterAwait::Plan, now);
                Ok(PlanOutcome::Continue {
                    response_hook_suppressed: false,
                })
            }
        }
    }

    /// Answers an invalid tool call; see [`Resolution`].
    pub fn resolve(
        &mut self,
        resolution: Resolution,
        now: Timestamp,
        catalog: &dyn ToolCatalog,
    ) -> Result<PlanOutcome, RunError> {
        let Phase::Resolving(r) = &self.phase else {
            return Err(self.wrong_phase("resolve"));
        };
        let repair_spec = match &resolution {
            Resolution::Retry { .. }
                if self.retries_used >= self.policy.max_invalid_call_retries =>
            {
                return Err(RunError::RetryLimitReached {
                    max: self.policy.max_invalid_call_retries,
                });
            }
            Resolution::Repair { tool } => match catalog
                .spec(tool.as_str())
                .filter(|s| self.is_allowed(&s.name))
            {
                Some(spec) => Some(spec),
                None => return Err(RunError::RepairNotAllowed(tool.clone())),
            },
            _ => None,
        };
        let failure = RunFailure::InvalidToolCall {
            tool_name: r.context.tool_name.clone(),
            tool_call_id: r.context.tool_call_id.clone(),
            reason: r.context.reason.clone(),
        };
        let phase = std::mem::replace(
            &mut self.phase,
            Phase::Planning {
                kind: PlanKind::Resume,
            },
        );
        let Phase::Resolving(mut r) = phase else {
            self.phase = phase;
            return Err(self.wrong_phase("resolve"));
        };
        match resolution {
            Resolution::Fail => {
                self.finish(RunOutcome::Failed { failure });
                Ok(PlanOutcome::Continue {
                    response_hook_suppressed: false,
                })
            }
            Resolution::Retry { feedback } => {
                self.retries_used += 1;
                self.abandon_turn(
                    *r,
                    Some(feedback),
                    "not executed because another call in this turn was invalid",
                );
                Ok(PlanOutcome::TurnRetried)
            }
            Resolution::Skip { reason } => {
                self.abandon_turn(
                    *r,
                    Some(reason),
                    "not executed because another call in this turn was skipped",
                );
                Ok(PlanOutcome::Continue {
                    response_hook_suppressed: false,
                })
            }
            Resolution::Repair { .. } => {
                let call = &mut r.calls[r.current];
                if let Some(spec) = repair_spec {
                    call.requested = spec.name.to_string();
                    call.verdict = match parse_arguments(&call.arguments) {
                        Err(reason) => Verdict::Invalid(reason),
                        Ok(payload) => match catalog.validate(spec, &payload) {
                            Ok(()) => Verdict::Valid {
                                name: spec.name.clone(),
                                payload,
                            },
                            Err(issues) => {
                                Verdict::Invalid(InvalidReason::SchemaViolation { issues })
                            }
                        },
                    };
                }
                Ok(self.continue_checking(*r, now, catalog))
            }
        }
    }

    /// Feeds one tool result; the batch completes when every call has one.
    pub fn tool_result(
        &mut self,
        output: impl Into<Arc<ToolOutput>>,
        _now: Timestamp,
    ) -> Result<(), RunError> {
        let output: Arc<ToolOutput> = output.into();
        let Phase::Executing(batch) = &mut self.phase else {
            return Err(self.wrong_phase("tool_result"));
        };
        let Some(i) = batch.calls.iter().position(|c| c.id == output.tool_call_id) else {
            return Err(RunError::UnknownToolCall(output.tool_call_id.clone()));
        };
        if batch.results[i].is_some() {
            return Err(RunError::DuplicateToolResult(output.tool_call_id.clone()));
        }
        batch.results[i] = Some(output.clone());
        self.outbox.push(EventKind::ToolFinished { output });
        if batch.results.iter().all(Option::is_some) {
            let phase = std::mem::replace(
                &mut self.phase,
                Phase::Planning {
                    kind: PlanKind::Resume,
                },
            );
            if let Phase::Executing(batch) = phase {
                self.complete_batch(batch);
            }
        }
        Ok(())
    }

    /// Feeds the results of every pending call at once, in any order. A missing,
    /// unknown or duplicate id rejects the whole batch.
    pub fn tool_results(
        &mut self,
        outputs: Vec<ToolOutput>,
        now: Timestamp,
    ) -> Result<(), RunError> {
        let Phase::Executing(batch) = &self.phase else {
            return Err(self.wrong_phase("tool_results"));
        };
        for (i, o) in outputs.iter().enumerate() {
            let Some(j) = batch.calls.iter().position(|c| c.id == o.tool_call_id) else {
                return Err(RunError::UnknownToolCall(o.tool_call_id.clone()));
            };
            if batch.results[j].is_some()
                || outputs[..i]
                    .iter()
                    .any(|p| p.tool_call_id == o.tool_call_id)
            {
                return Err(RunError::DuplicateToolResult(o.tool_call_id.clone()));
            }
        }
        let missing: Vec<ToolCallId> = batch
            .calls
            .iter()
            .zip(&batch.results)
            .filter(|(c, r)| r.is_none() && !outputs.iter().any(|o| o.tool_call_id == c.id))
            .map(|(c, _)| c.id.clone())
            .collect();
        if !missing.is_empty() {
            return Err(RunError::MissingToolResults(missing));
        }
        for o in outputs {
            self.tool_result(o, now)?;
        }
        Ok(())
    }

    /// Answers one await item.
    pub fn provide(
        &mut self,
        item: &AwaitItemId,
        answer: AwaitAnswer,
        now: Timestamp,
    ) -> Result<AwaitProgress, RunError> {
        let Phase::Awaiting(a) = &mut self.phase else {
            return Err(self.wrong_phase("provide"));
        };
        let Some(i) = a.items.iter().position(|it| it.id() == item) else {
            return Err(RunError::UnknownAwaitItem(item.clone()));
        };
        if a.answers[i].is_some() {
            return Err(RunError::AlreadyAnswered(item.clone()));
        }
        a.items[i]
            .validate(&answer)
            .map_err(|error| RunError::InvalidAnswer {
                item: item.clone(),
                error,
            })?;
        a.answers[i] = Some(answer.clone());
        let remaining = a.answers.iter().filter(|x| x.is_none()).count();
        self.outbox.push(EventKind::AwaitSatisfied {
            item_id: item.clone(),
            answer,
        });
        if remaining > 0 {
            return Ok(AwaitProgress::Pending { remaining });
        }
        let phase = std::mem::replace(
            &mut self.phase,
            Phase::Planning {
                kind: PlanKind::Resume,
            },
        );
        if let Phase::Awaiting(a) = phase {
            if !self.paused {
                self.clock.resume(now);
                self.outbox.push(EventKind::RunResumed);
            }
            self.apply_answers(*a);
        }
        Ok(AwaitProgress::Satisfied)
    }

    /// Pauses the run at `now`: the driver stops driving it and its time
    /// stops counting against the budget until [`RunMachine::unpause`].
    pub fn pause(&mut self, now: Timestamp) -> Result<(), RunError> {
        if matches!(self.phase, Phase::Finished { .. }) || self.paused {
            return Err(self.wrong_phase("pause"));
        }
        self.paused = true;
        self.clock.suspend(now);
        self.outbox.push(EventKind::RunPaused {
            reason: "paused by request".to_owned(),
        });
        Ok(())
    }

    /// Ends a pause at `now`; the run's time counts again (unless it awaits answers).
    pub fn unpause(&mut self, now: Timestamp) -> Result<(), RunError> {
        if !self.paused || matches!(self.phase, Phase::Finished { .. }) {
            return Err(self.wrong_phase("unpause"));
        }
        self.paused = false;
        if !matches!(self.phase, Phase::Awaiting(_)) {
            self.clock.resume(now);
        }
        self.outbox.push(EventKind::RunResumed);
        Ok(())
    }

    /// Cancels the run.
    pub fn cancel(&mut self, reason: impl Into<String>) -> Result<(), RunError> {
        if let Phase::Finished { .. } = self.phase {
            return Err(self.wrong_phase("cancel"));
        }
        self.finish(RunOutcome::Cancelled {
            reason: reason.into(),
        });
        Ok(())
    }

    /// Ends the run with a failure the driver observed (e.g. the planner failed).
    pub fn fail(&mut self, failure: RunFailure) -> Result<(), RunError> {
        if let Phase::Finished { .. } = self.phase {
            return Err(self.wrong_phase("fail"));
        }
        self.finish(RunOutcome::Failed { failure });
        Ok(())
    }

    // ---- internals -----------------------------------------------------

    /// Ends the run with `outcome` and says so. Results of a batch cut short
    /// (by a cancel or a failure) stay among the run's outputs: those calls
    /// ran, and their events said so.
    fn finish(&mut self, outcome: RunOutcome) {
        self.outbox.push(EventKind::RunFinished {
            outcome: outcome.clone(),
        });
        let batch = match std::mem::replace(&mut self.phase, Phase::Finished { outcome }) {
            Phase::Executing(b) => Some(b),
            Phase::Awaiting(a) => match a.then {
                AfterAwait::Execute(b) => Some(b),
                AfterAwait::Plan => None,
            },
            _ => None,
        };
        if let Some(b) = batch {
            self.outputs.extend(b.results.into_iter().flatten());
        }
    }

    /// Makes the run finalize because of `termination` and says so.
    fn terminate(&mut self, termination: Termination, deadline: Option<Timestamp>) {
        self.outbox.push(EventKind::Termination {
            termination: termination.clone(),
        });
        self.finalize = Some(Finalize {
            termination,
            deadline,
        });
    }

    /// An output the machine recorded itself, announced as finished.
    fn record(&mut self, output: ToolOutput) -> Arc<ToolOutput> {
        let output = Arc::new(output);
        self.outbox.push(EventKind::ToolFinished {
            output: output.clone(),
        });
        output
    }

    fn wrong_phase(&self, input: &'static str) -> RunError {
        RunError::WrongPhase {
            input,
            phase: self.phase_name(),
        }
    }

    fn id_in_use(&self, id: &ToolCallId) -> bool {
        self.outputs.iter().any(|o| &o.tool_call_id == id)
    }

    fn check_await_items(&self, items: &[AwaitItem]) -> Result<(), RunError> {
        if items.is_empty() {
            return Err(RunError::EmptyAwait);
        }
        for (i, item) in items.iter().enumerate() {
            if let AwaitItem::Confirmation(_) = item {
                return Err(RunError::ConfirmationFromPlanner);
            }
            if items[..i].iter().any(|p| p.id() == item.id()) {
                return Err(RunError::DuplicateAwaitItem(item.id().clone()));
            }
        }
        Ok(())
    }

    fn accept_calls(
        &mut self,
        preamble: Vec<Part>,
        calls: Vec<crate::planner::ToolCallRequest>,
        now: Timestamp,
        catalog: &dyn ToolCatalog,
    ) -> Result<PlanOutcome, RunError> {
        if calls.is_empty() {
            return Err(RunError::NoToolCalls);
        }
        let mut seq = self.next_call_seq;
        let mut checked: Vec<Checked> = Vec::with_capacity(calls.len());
        for call in calls {
            let id = match call.id {
                Some(id) => id,
                None => loop {
                    seq += 1;
                    let id = ToolCallId::new(format!("call_{seq}"));
                    if !self.id_in_use(&id) && !checked.iter().any(|c| c.id == id) {
                        break id;
                    }
                },
            };
            if self.id_in_use(&id) || checked.iter().any(|c| c.id == id) {
                return Err(RunError::DuplicateCallId(id));
            }
            let verdict = self.check_call(&call.name, &call.arguments, catalog);
            checked.push(Checked {
                id,
                requested: call.name,
                arguments: call.arguments,
                parent: call.parent_tool_call_id,
                verdict,
            });
        }
        self.next_call_seq = seq;
        self.turn += 1;
        let resolving = Resolving {
            preamble,
            calls: checked,
            current: 0,
            context: placeholder_context(),
        };
        Ok(self.continue_checking(resolving, now, catalog))
    }

    fn check_call(
        &self,
        name: &str,
        arguments: &CallArguments,
        catalog: &dyn ToolCatalog,
    ) -> Verdict {
        let Some(spec) = catalog.spec(name) else {
            return Verdict::Invalid(InvalidReason::UnknownTool);
        };
        if !self.is_allowed(&spec.name) {
            return Verdict::Invalid(InvalidReason::NotAllowed);
        }
        let payload = match parse_arguments(arguments) {
            Ok(p) => p,
            Err(reason) => return Verdict::Invalid(reason),
        };
        match catalog.validate(spec, &payload) {
            Ok(()) => Verdict::Valid {
                name: spec.name.clone(),
                payload,
            },
            Err(issues) => Verdict::Invalid(InvalidReason::SchemaViolation { issues }),
        }
    }

    /// Finds the next invalid call from `r.current` on; with none left the batch is accepted.
    fn continue_checking(
        &mut self,
        mut r: Resolving,
        now: Timestamp,
        catalog: &dyn ToolCatalog,
    ) -> PlanOutcome {
        let next = r
            .calls
            .iter()
            .enumerate()
            .skip(r.current)
            .find_map(|(i, c)| match &c.verdict {
                Verdict::Invalid(reason) => Some((i, reason.clone())),
                Verdict::Valid { .. } => None,
            });
        match next {
            Some((i, reason)) => {
                r.current = i;
                let c = &r.calls[i];
                r.context = InvalidToolCallContext {
                    tool_name: c.requested.clone(),
                    tool_call_id: c.id.clone(),
                    arguments: c.arguments.clone(),
                    reason,
                    available: self.available_tools(catalog),
                    retries_left: self
                        .policy
                        .max_invalid_call_retries
                        .saturating_sub(self.retries_used),
                };
                let context = Box::new(r.context.clone());
                self.phase = Phase::Resolving(Box::new(r));
                PlanOutcome::NeedsResolution(context)
            }
            None => {
                self.accept_batch(r, now);
                PlanOutcome::Continue {
                    response_hook_suppressed: false,
                }
            }
        }
    }

    fn available_tools(&self, catalog: &dyn ToolCatalog) -> Vec<ToolIdent> {
        catalog
            .names()
            .into_iter()
            .filter(|t| self.is_allowed(t))
            .collect()
    }

    fn accept_batch(&mut self, r: Resolving, now: Timestamp) {
        self.retries_used = 0;
        self.restrict_to = None;
        let mut parts = r.preamble;
        parts.reserve(r.calls.len());
        let mut calls = Vec::with_capacity(r.calls.len());
        for c in r.calls {
            // `continue_checking` only accepts a batch whose calls are all valid.
            let Verdict::Valid { name, payload } = c.verdict else {
                continue;
            };
            let payload = Arc::new(payload);
            parts.push(Part::ToolUse {
                id: c.id.clone(),
                name: name.to_string(),
                input: payload.clone(),
            });
            calls.push(ToolCall {
                id: c.id,
                name,
                payload,
                parent_tool_call_id: c.parent,
            });
        }
        self.transcript.push(Message {
            role: Role::Assistant,
            parts,
        });
        let per_turn = self
            .policy
            .max_tool_calls_per_turn
            .map_or(u32::MAX, |n| n.get());
        let remaining = self
            .policy
            .max_tool_calls
            .map_or(u32::MAX, |n| n.get().saturating_sub(self.calls_made));
        let mut executed = 0u32;
        let mut results = Vec::with_capacity(calls.len());
        let mut confirm = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let slot = if u32::try_from(i).unwrap_or(u32::MAX) >= per_turn {
                Some(self.record(not_executed(
                    call,
                    ToolError::NOT_EXECUTED,
                    &format!("not executed: a turn may make at most {per_turn} tool calls"),
                )))
            } else if executed >= remaining {
                Some(self.record(not_executed(
                    call,
                    ToolError::NOT_EXECUTED,
                    "not executed: the run's tool call cap was reached",
                )))
            } else {
                executed += 1;
                if self.policy.confirm_tools.contains(&call.name) {
                    confirm.push(AwaitItem::Confirmation(Confirmation {
                        id: AwaitItemId::new(format!("confirm_{}", call.id)),
                        tool_name: call.name.clone(),
                        tool_call_id: call.id.clone(),
                        payload: (*call.payload).clone(),
                    }));
                }
                None
            };
            results.push(slot);
        }
        self.calls_made += executed;
        let batch = Batch { calls, results };
        if !confirm.is_empty() {
            self.enter_await(confirm, AfterAwait::Execute(batch), now);
        } else {
            self.execute_or_complete(batch);
        }
    }

    fn execute_or_complete(&mut self, batch: Batch) {
        if batch.results.iter().all(Option::is_some) {
            self.complete_batch(batch);
        } else {
            self.phase = Phase::Executing(batch);
        }
    }

    fn enter_await(&mut self, items: Vec<AwaitItem>, then: AfterAwait, now: Timestamp) {
        self.clock.suspend(now);
        let answers = vec![None; items.len()];
        self.outbox.push(EventKind::AwaitRequested {
            items: items.clone(),
        });
        self.outbox.push(EventKind::RunPaused {
            reason: "awaiting answers".to_owned(),
        });
        self.phase = Phase::Awaiting(Box::new(Awaiting {
            items,
            answers,
            then,
        }));
    }

    /// Records a finished batch and moves to planning, applying caps.
    fn complete_batch(&mut self, batch: Batch) {
        let mut parts = Vec::with_capacity(batch.results.len());
        for out in batch.results.into_iter().flatten() {
            match &out.result {
                ToolResultBody::Error(e)
                    if e.code == ToolError::NOT_EXECUTED || e.code == ToolError::CANCELLED => {}
                ToolResultBody::Error(_) => self.failures_in_row += 1,
                _ => self.failures_in_row = 0,
            }
            if let Some(h) = out.retry_hint.as_ref().filter(|h| h.restrict_to_tool) {
                self.restrict_to = h.tool.clone();
            }
            parts.push(render_tool_output(&out));
            self.outputs.push(out);
        }
        self.transcript.push(Message {
            role: Role::Tool,
            parts,
        });
        self.phase = Phase::Planning {
            kind: PlanKind::Resume,
        };
        if self.finalize.is_some() {
            return;
        }
        let termination = if let Some(max) = self
            .policy
            .max_consecutive_failures
            .filter(|m| self.failures_in_row >= m.get())
        {
            Some(Termination {
                reason: TerminationReason::FailureCap,
                message: format!("{max} tool calls failed in a row"),
            })
        } else {
            self.policy
                .max_tool_calls
                .filter(|m| self.calls_made >= m.get())
                .map(|max| Termination {
                    reason: TerminationReason::ToolCap,
                    message: format!("the run made its maximum of {max} tool calls"),
                })
        };
        if let Some(termination) = termination {
            self.terminate(termination, None);
        }
    }

    /// Records every call of an abandoned turn as answered without executing:
    /// the current invalid call gets `feedback` (or its own reason), other
    /// invalid calls their reason, valid calls `others`.
    fn abandon_turn(&mut self, r: Resolving, feedback: Option<String>, others: &str) {
        self.restrict_to = None;
        let mut uses = r.preamble;
        let mut results = Vec::with_capacity(r.calls.len());
        for (i, c) in r.calls.into_iter().enumerate() {
            let (name, payload) = match &c.verdict {
                Verdict::Valid { name, payload } => (name.clone(), Arc::new(payload.clone())),
                Verdict::Invalid(_) => (
                    ToolIdent::new(c.requested.as_str()),
                    Arc::new(raw_payload(&c.arguments)),
                ),
            };
            uses.push(Part::ToolUse {
                id: c.id.clone(),
                name: c.requested.clone(),
                input: payload.clone(),
            });
            let message = match (&c.verdict, i == r.current, &feedback) {
                (_, true, Some(f)) => f.clone(),
                (Verdict::Invalid(reason), _, _) => reason.describe(&c.requested),
                (Verdict::Valid { .. }, _, _) => others.to_owned(),
            };
            let code = match c.verdict {
                Verdict::Invalid(_) => ToolError::INVALID_ARGUMENTS,
                Verdict::Valid { .. } => ToolError::NOT_EXECUTED,
            };
            let mut out = ToolOutput::error(c.id, name, payload, ToolError::new(code, message));
            if let (
                Verdict::Invalid(InvalidReason::SchemaViolation { issues }),
                ToolResultBody::Error(e),
            ) = (c.verdict, &mut out.result)
            {
                e.field_issues = issues;
            }
            results.push(self.record(out));
        }
        self.transcript.push(Message {
            role: Role::Assistant,
            parts: uses,
        });
        let parts = results.iter().map(|o| render_tool_output(o)).collect();
        self.outputs.extend(results);
        self.transcript.push(Message {
            role: Role::Tool,
            parts,
        });
        self.phase = Phase::Planning {
            kind: PlanKind::Resume,
        };
    }

    fn apply_answers(&mut self, a: Awaiting) {
        match a.then {
            AfterAwait::Execute(mut batch) => {
                for (item, answer) in a.items.iter().zip(a.answers) {
                    let (
                        AwaitItem::Confirmation(c),
                        Some(AwaitAnswer::Confirmation {
                            approved: false,
                            reason,
                        }),
                    ) = (item, answer)
                    else {
                        continue;
                    };
                    if let Some(i) = batch
                        .calls
                        .iter()
                        .position(|call| call.id == c.tool_call_id)
                    {
                        let why = reason.unwrap_or_else(|| "no reason given".to_owned());
                        batch.results[i] = Some(self.record(not_executed(
                            &batch.calls[i],
                            ToolError::NOT_EXECUTED,
                            &format!("denied by a human: {why}"),
                        )));
                        self.calls_made = self.calls_made.saturating_sub(1);
                    }
                }
                self.execute_or_complete(batch);
            }
            AfterAwait::Plan => {
                let mut tool_parts = Vec::new();
                let mut user_parts = Vec::new();
                for (item, answer) in a.items.into_iter().zip(a.answers) {
                    match (item, answer) {
                        (
                            AwaitItem::Clarification(_),
                            Some(AwaitAnswer::Clarification { text }),
                        ) => {
                            user_parts.push(Part::Text { text });
                        }
                        (AwaitItem::Questions(q), Some(AwaitAnswer::Questions { answers })) => {
                            let result = serde_json::to_value(&answers).unwrap_or(Value::Null);
                            let out = self.record(ToolOutput::ok(
                                q.tool_call_id,
                                q.tool_name,
                                q.payload,
                                result,
                            ));
                            tool_parts.push(render_tool_output(&out));
                            self.outputs.push(out);
                        }
                        (
                            AwaitItem::ExternalTools(e),
                            Some(AwaitAnswer::ExternalTools { mut results }),
                        ) => {
                            for call in &e.items {
                                if let Some(i) = results
                                    .iter()
                                    .position(|r| r.tool_call_id == call.tool_call_id)
                                {
                                    let out = self.record(results.swap_remove(i));
                                    tool_parts.push(render_tool_output(&out));
                                    self.outputs.push(out);
                                }
                            }
                        }
                        _ => {}
                    }
                }
                if !tool_parts.is_empty() {
                    self.transcript.push(Message {
                        role: Role::Tool,
                        parts: tool_parts,
                    });
                }
                if !user_parts.is_empty() {
                    self.transcript.push(Message {
                        role: Role::User,
                        parts: user_parts,
                    });
                }
            }
        }
    }
}

fn parse_arguments(arguments: &CallArguments) -> Result<Value, InvalidReason> {
    match arguments {
        CallArguments::Json(v) => Ok(v.clone()),
        CallArguments::Raw(s) => {
            serde_json::from_str(s).map_err(|e| InvalidReason::MalformedJson {
                message: e.to_string(),
            })
        }
    }
}

fn raw_payload(arguments: &CallArguments) -> Value {
    match arguments {
        CallArguments::Json(v) => v.clone(),
        CallArguments::Raw(s) => Value::String(s.clone()),
    }
}

fn not_executed(call: &ToolCall, code: ToolErrorCode, message: &str) -> ToolOutput {
    ToolOutput::error(
        call.id.clone(),
        call.name.clone(),
        call.payload.clone(),
        ToolError::new(code, message),
    )
}

fn placeholder_context() -> InvalidToolCallContext {
    InvalidToolCallContext {
        tool_name: String::new(),
        tool_call_id: ToolCallId::new(""),
        arguments: CallArguments::Json(Value::Null),
        reason: InvalidReason::UnknownTool,
        available: Vec::new(),
        retries_left: 0,
    }
}

/// The snapshot format marker; deserializing another version is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Format;

impl Serialize for Format {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(FORMAT_VERSION)
    }
}

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u32::deserialize(d)?;
        if v == FORMAT_VERSION {
            Ok(Format)
        } else {
            Err(serde::de::Error::custom(format!(
                "run snapshot format {v} is not supported (this build reads format {FORMAT_VERSION})"
            )))
        }
    }
}
