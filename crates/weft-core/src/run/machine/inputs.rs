//! The inputs a driver feeds the machine: plan results, resolutions, tool
//! results, await answers, pause, continue, cancel and failure.

use super::*;

impl RunMachine {
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
                // An answer the planner did not stream is shown whole, as
                // one chunk, before the run's end.
                if !result.streamed {
                    let text = message.joined_text();
                    if !text.is_empty() {
                        self.outbox.push(EventKind::AssistantChunk { text });
                    }
                }
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
                // Calls named by the await keep generated ids clear of them.
                for item in &items {
                    let ids: Vec<&ToolCallId> = match item {
                        AwaitItem::Questions(q) => vec![&q.tool_call_id],
                        AwaitItem::ExternalTools(e) => {
                            e.items.iter().map(|c| &c.tool_call_id).collect()
                        }
                        _ => Vec::new(),
                    };
                    for n in ids.into_iter().filter_map(super::batch::generated_seq) {
                        self.next_call_seq = self.next_call_seq.max(n);
                    }
                }
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
                        // The question is the planner's turn: the answer
                        // that follows it in the transcript replies to it.
                        AwaitItem::Clarification(c) => parts.push(Part::Text {
                            text: c.question.clone(),
                        }),
                        AwaitItem::Confirmation(_) | AwaitItem::Elicitation(_) => {}
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
        let complete = batch.results.iter().all(Option::is_some);
        self.withdraw_elicitations_of(&output.tool_call_id);
        self.outbox.push(EventKind::ToolFinished { output });
        if complete {
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

    /// Answers one await item: an item of the await the run is in, or a
    /// pending elicitation of a running call (whose progress counts the
    /// elicitations still pending; the driver hands the answer to the call).
    pub fn answer(
        &mut self,
        item: &AwaitItemId,
        answer: AwaitAnswer,
        now: Timestamp,
    ) -> Result<AwaitProgress, RunError> {
        if let Some(i) = self.elicitations.iter().position(|e| &e.id == item) {
            return self.answer_elicitation(i, item, answer);
        }
        let Phase::Awaiting(a) = &mut self.phase else {
            return Err(self.wrong_phase("answer"));
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
                self.clock.continue_from(now);
                self.outbox.push(EventKind::RunContinued);
            }
            self.apply_answers(*a);
        }
        Ok(AwaitProgress::Satisfied)
    }

    /// Pauses the run at `now`: the driver stops driving it and its time
    /// stops counting against the budget until [`RunMachine::continue_run`].
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
    pub fn continue_run(&mut self, now: Timestamp) -> Result<(), RunError> {
        if !self.paused || matches!(self.phase, Phase::Finished { .. }) {
            return Err(self.wrong_phase("continue"));
        }
        self.paused = false;
        if !matches!(self.phase, Phase::Awaiting(_)) {
            self.clock.continue_from(now);
        }
        self.outbox.push(EventKind::RunContinued);
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
}
