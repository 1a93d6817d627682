//! Awaits: checking what a planner asks, entering the wait, and turning the
//! answers into transcript entries and tool outputs.

use super::*;

impl RunMachine {
    pub(super) fn check_await_items(&self, items: &[AwaitItem]) -> Result<(), RunError> {
        if items.is_empty() {
            return Err(RunError::EmptyAwait);
        }
        for (i, item) in items.iter().enumerate() {
            match item {
                AwaitItem::Confirmation(_) => return Err(RunError::ConfirmationFromPlanner),
                AwaitItem::Elicitation(_) => return Err(RunError::ElicitationFromPlanner),
                _ => {}
            }
            if items[..i].iter().any(|p| p.id() == item.id()) {
                return Err(RunError::DuplicateAwaitItem(item.id().clone()));
            }
        }
        Ok(())
    }

    pub(super) fn enter_await(&mut self, items: Vec<AwaitItem>, then: AfterAwait, now: Timestamp) {
        self.clock.suspend(now);
        let answers = vec![None; items.len()];
        self.outbox.push(EventKind::AwaitRequested {
            items: items.clone(),
        });
        self.phase = Phase::Awaiting(Box::new(Awaiting {
            items,
            answers,
            then,
        }));
    }

    pub(super) fn apply_answers(&mut self, a: Awaiting) {
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
                            AwaitItem::Clarification(c),
                            Some(AwaitAnswer::Clarification { text }),
                        ) => {
                            user_parts.push(Part::Text { text });
                            // The next turn may call only the tool the
                            // clarification was for.
                            if let Some(tool) = c.restrict_to_tool {
                                self.restrict_to = Some(tool);
                            }
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
