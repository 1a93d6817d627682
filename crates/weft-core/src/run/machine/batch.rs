//! A turn's tool calls: checking them against the catalog, resolving the
//! invalid ones, accepting the batch under the caps, and recording its end.

use super::*;

impl RunMachine {
    pub(super) fn accept_calls(
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
                // A planner's own id must be new to the run. One of the
                // form the machine generates moves the sequence past it,
                // so a generated id never needs that (linear) check.
                Some(id) => {
                    if self.id_in_use(&id) || checked.iter().any(|c| c.id == id) {
                        return Err(RunError::DuplicateCallId(id));
                    }
                    if let Some(n) = generated_seq(&id) {
                        seq = seq.max(n);
                    }
                    id
                }
                None => {
                    seq += 1;
                    ToolCallId::from_fmt(format_args!("call_{seq}"))
                }
            };
            let mut arguments = call.arguments;
            let verdict = self.check_call(&call.name, &mut arguments, catalog);
            checked.push(Checked {
                id,
                requested: call.name,
                arguments,
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

    /// Checks one call against the catalog. A valid call's parsed
    /// arguments move into its verdict (JSON arguments are taken, leaving
    /// `null` behind: only an invalid call's arguments are read again, to
    /// show or repair them), so valid arguments are never copied.
    pub(super) fn check_call(
        &self,
        name: &str,
        arguments: &mut CallArguments,
        catalog: &dyn ToolCatalog,
    ) -> Verdict {
        let Some(spec) = catalog.spec(name) else {
            return Verdict::Invalid(InvalidReason::UnknownTool);
        };
        if !self.is_allowed(spec) {
            return Verdict::Invalid(InvalidReason::NotAllowed);
        }
        let payload = match arguments {
            CallArguments::Json(payload) => match catalog.validate(spec, payload) {
                Ok(()) => std::mem::take(payload),
                Err(issues) => return Verdict::Invalid(InvalidReason::SchemaViolation { issues }),
            },
            CallArguments::Raw(raw) => {
                let parsed = match serde_json::from_str::<Value>(raw) {
                    Ok(parsed) => parsed,
                    Err(e) => {
                        return Verdict::Invalid(InvalidReason::MalformedJson {
                            message: e.to_string(),
                        });
                    }
                };
                if let Err(issues) = catalog.validate(spec, &parsed) {
                    return Verdict::Invalid(InvalidReason::SchemaViolation { issues });
                }
                parsed
            }
        };
        Verdict::Valid {
            name: spec.name.clone(),
            payload,
            confirm: self.policy.needs_confirmation(spec),
        }
    }

    /// Finds the next invalid call from `r.current` on; with none left the batch is accepted.
    pub(super) fn continue_checking(
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

    pub(super) fn available_tools(&self, catalog: &dyn ToolCatalog) -> Vec<ToolIdent> {
        catalog
            .names()
            .into_iter()
            .filter(|t| catalog.spec(t.as_str()).is_some_and(|s| self.is_allowed(s)))
            .collect()
    }

    pub(super) fn accept_batch(&mut self, r: Resolving, now: Timestamp) {
        self.retries_used = 0;
        self.restrict_to = None;
        let mut parts = r.preamble;
        // Exact: the message stays in the transcript for the run's life.
        parts.reserve_exact(r.calls.len());
        let mut calls = Vec::with_capacity(r.calls.len());
        let mut confirms = Vec::with_capacity(r.calls.len());
        for c in r.calls {
            // `continue_checking` only accepts a batch whose calls are all valid.
            let Verdict::Valid {
                name,
                payload,
                confirm,
            } = c.verdict
            else {
                continue;
            };
            let payload = Arc::new(payload);
            parts.push(Part::ToolUse {
                id: c.id.clone(),
                name: name.to_string(),
                input: payload.clone(),
            });
            confirms.push(confirm);
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
        if let Some(refusals) = self.refuse_mixed(&calls) {
            let results = refusals.into_iter().map(|o| Some(self.record(o))).collect();
            self.complete_batch(Batch { calls, results });
            return;
        }
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
                // Verdicts from before `confirm` was recorded name the tool only.
                if confirms[i] || self.policy.confirm_tools.contains(&call.name) {
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

    pub(super) fn execute_or_complete(&mut self, batch: Batch) {
        if batch.results.iter().all(Option::is_some) {
            self.complete_batch(batch);
        } else {
            self.phase = Phase::Executing(batch);
        }
    }

    /// Records a finished batch and moves to planning, applying caps.
    pub(super) fn complete_batch(&mut self, batch: Batch) {
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
        } else if let Some(max) = self
            .policy
            .max_tool_calls
            .filter(|m| self.calls_made >= m.get())
        {
            Some(Termination {
                reason: TerminationReason::ToolCap,
                message: format!("the run made its maximum of {max} tool calls"),
            })
        } else {
            self.policy
                .max_turns
                .filter(|m| self.turn >= m.get())
                .map(|max| Termination {
                    reason: TerminationReason::TurnCap,
                    message: format!("the run planned its maximum of {max} turns"),
                })
        };
        if let Some(termination) = termination {
            self.terminate(termination, None);
        }
    }

    /// Records every call of an abandoned turn as answered without executing:
    /// the current invalid call gets `feedback` (or its own reason), other
    /// invalid calls their reason, valid calls `others`.
    /// Ends a turn with an invalid call without running any of its calls:
    /// each gets an error result (the invalid ones their reason, with a
    /// retry hint carrying the field issues; `catalog`, when given, adds an
    /// example input), and the planner plans again.
    pub(super) fn abandon_turn(
        &mut self,
        r: Resolving,
        feedback: Option<String>,
        others: &str,
        catalog: Option<&dyn ToolCatalog>,
    ) {
        self.restrict_to = None;
        let mut uses = r.preamble;
        let mut results = Vec::with_capacity(r.calls.len());
        for (i, c) in r.calls.into_iter().enumerate() {
            let (name, payload) = match &c.verdict {
                Verdict::Valid { name, payload, .. } => (name.clone(), Arc::new(payload.clone())),
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
                let hint = match catalog.and_then(|cat| Some((cat, cat.spec(&c.requested)?))) {
                    Some((cat, spec)) => cat.retry_hint(spec, &out.payload, &issues),
                    None => RetryHint::for_issues(&out.name, &out.payload, &issues, None),
                };
                e.field_issues = issues;
                out.retry_hint = Some(Box::new(hint));
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
}

/// The sequence number of an id of the form the machine generates
/// (`call_<n>`).
pub(super) fn generated_seq(id: &ToolCallId) -> Option<u64> {
    let digits = id.as_str().strip_prefix("call_")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
