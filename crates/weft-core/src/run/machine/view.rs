//! What the machine shows and asks: getters, planner services, `next_step`
//! and the time budget it applies.

use super::*;
use crate::run::ToolOutputs;
use crate::tool::ToolSpec;

impl RunMachine {
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

    /// The items of the open await (empty when the run awaits nothing).
    pub fn await_items(&self) -> &[AwaitItem] {
        match &self.phase {
            Phase::Awaiting(a) => &a.items,
            _ => &[],
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
    pub fn tool_outputs(&self) -> &ToolOutputs {
        &self.outputs
    }

    /// How many of the run's outputs of `tool` were charged: the uses the run
    /// has made of a tool with a per-run budget (the advisor), counted from
    /// what the machine recorded, so a restarted or replayed run counts the
    /// same.
    pub fn uses_of(&self, tool: &ToolIdent) -> u32 {
        let pending = match &self.phase {
            Phase::Executing(batch) => batch.results.iter().flatten().collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        let n = self
            .outputs
            .iter()
            .chain(pending)
            .filter(|o| o.charged && &o.name == tool)
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
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
    /// The driver commits events together with the snapshot, so a recovered
    /// run continues its log from here without gaps.
    pub fn event_seq(&self) -> u64 {
        self.event_seq
    }

    /// Per-run planner state.
    pub fn state(&self) -> &BTreeMap<String, Value> {
        &self.state
    }

    /// Active reminders, in the order they were added.
    pub fn reminders(&self) -> impl Iterator<Item = &Reminder> + '_ {
        self.reminders.iter()
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

    /// Whether the planner may call `tool` this turn: the run is not
    /// finalizing, the tool policy permits it ([`super::Policy::permits`]),
    /// and no answered clarification restricts the turn to another tool.
    pub fn is_allowed(&self, tool: &ToolSpec) -> bool {
        self.finalize.is_none() && self.is_offered(tool)
    }

    /// Whether `tool` is declared to the planner this turn: every tool it
    /// may call, and on a finalizing turn the tools it could call before.
    /// A finalizing turn declares them but forbids their use
    /// ([`PlanResumeInput::finalize`](crate::planner::PlanResumeInput)):
    /// providers refuse a transcript holding tool calls when the request
    /// defines no tools (Anthropic, Bedrock).
    pub fn is_offered(&self, tool: &ToolSpec) -> bool {
        self.policy.permits(tool) && self.restrict_to.as_ref().is_none_or(|r| r == &tool.name)
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

    /// Adds a reminder, replacing one with the same id, under the policy's
    /// `max_reminders` (see [`ReminderSet`] for which one a full run gives up).
    pub fn add_reminder(&mut self, reminder: Reminder) -> ReminderAdded {
        let max = usize::try_from(self.policy.max_reminders.get()).unwrap_or(usize::MAX);
        self.reminders.add(reminder, max)
    }

    /// Removes a reminder by id; whether it was active.
    pub fn remove_reminder(&mut self, id: &str) -> bool {
        self.reminders.remove(id)
    }

    /// The reminders due on the turn about to be planned, safety first,
    /// marked as delivered on it: what the planner is given.
    pub fn take_due_reminders(&mut self) -> Vec<Reminder> {
        let turn = self.turn.saturating_add(1);
        self.reminders.take_due(turn)
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

    pub(super) fn check_time(&mut self, now: Timestamp) {
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
                self.withdraw_elicitations();
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
                    None,
                );
            }
            Phase::Planning { .. } | Phase::Awaiting(_) | Phase::Finished { .. } => {}
        }
    }
}
