//! Resolving an invalid tool call: retrying the turn, skipping the call,
//! repairing it to another tool, or failing the run.

use super::*;

impl RunMachine {
    /// [`resolve`](Self::resolve), falling back to [`Resolution::Fail`] when
    /// the machine refuses `resolution` (retries used up, a repair that does
    /// not apply): what a driver does with a policy's answer. A planner
    /// thought labelled `kind = invalid_tool_call` says which call was
    /// invalid, why, and how it is resolved.
    pub fn resolve_or_fail(
        &mut self,
        resolution: Resolution,
        now: Timestamp,
        catalog: &dyn ToolCatalog,
    ) -> Result<PlanOutcome, RunError> {
        if let Phase::Resolving(r) = &self.phase {
            let context = &r.context;
            let mut labels = crate::tool::Labels::new();
            labels.insert("kind".to_owned(), "invalid_tool_call".to_owned());
            let text = format!(
                "invalid call `{}` ({}): {}; resolution: {}",
                context.tool_name,
                context.tool_call_id,
                context.reason.describe(&context.tool_name),
                resolution.name()
            );
            self.outbox.push(EventKind::PlannerThought { text, labels });
        }
        match self.resolve(resolution, now, catalog) {
            Err(
                RunError::RetryLimitReached { .. }
                | RunError::RepairNotAllowed(_)
                | RunError::RepairNotApplicable { .. },
            ) => self.resolve(Resolution::Fail, now, catalog),
            other => other,
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
            Resolution::Repair { .. }
                if !matches!(
                    r.context.reason,
                    InvalidReason::UnknownTool | InvalidReason::NotAllowed
                ) =>
            {
                return Err(RunError::RepairNotApplicable {
                    reason: r.context.reason.describe(&r.context.tool_name),
                });
            }
            Resolution::Repair { tool } => {
                match catalog.spec(tool.as_str()).filter(|s| self.is_allowed(s)) {
                    Some(spec) => Some(spec),
                    None => return Err(RunError::RepairNotAllowed(tool.clone())),
                }
            }
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
                    Some(catalog),
                );
                Ok(PlanOutcome::TurnRetried)
            }
            Resolution::Skip { reason } => {
                self.abandon_turn(
                    *r,
                    Some(reason),
                    "not executed because another call in this turn was skipped",
                    Some(catalog),
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
                                confirm: self.policy.needs_confirmation(spec),
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
}
