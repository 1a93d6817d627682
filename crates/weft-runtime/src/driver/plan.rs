//! The planning step: calling the planner (its streamed events committed
//! as they come, under cancellation and the run's deadline) and refreshing
//! the tool list; the turn itself is [`crate::turn`]'s, shared with replay.

use super::*;

impl RunTask {
    pub(super) async fn plan(&mut self, kind: PlanKind, finalize: Option<Termination>) {
        // The planner streams its events straight into the log: what the
        // machine said before (a termination) goes first.
        self.collect();
        self.refresh_tools().await;
        let overrides = self.prompt_overrides().await;
        let reminders = self.machine.take_due_reminders();
        let turn_id = self.turn_id(self.machine.turn() + 1);
        let run_id: &RunId = &self.shared.run_id;
        let run = turn::run_context(&self.agent, run_id, &self.session_id, turn_id, &self.labels);
        let tools = turn::offered_tools(&self.machine, &self.tools.specs);
        let sessions = self.sessions.as_deref();
        let memory = match SessionMemory::load(sessions, &self.session_id, &self.machine).await {
            Ok(memory) => memory,
            Err(e) => {
                let _ = self.machine.fail(RunFailure::SessionMemory {
                    message: format!("the session's memory could not be read: {e}"),
                });
                return;
            }
        };
        let sink = Sink {
            shared: &self.shared,
            clock: &*self.clock,
        };
        let ctx = Ctx::new(&self.agent, run_id, self.machine.state())
            .with_prompts(overrides, &sink)
            .with_memory(&memory);
        let base = PlanInput {
            messages: self.machine.transcript(),
            run: &run,
            context: &ctx,
            events: &sink,
            reminders: &reminders,
            tools: &tools,
        };
        let fut = turn::call_planner(&self.agent, kind, base, &self.machine, finalize.as_ref());
        let deadline = self.machine.poll_timeout().map(|d| (d, self.clock.now()));
        let cancel = self.shared.cancel.clone();
        let log = self.log();
        let deferred = self.deferred.then_some(&self.machine);
        let result = tokio::select! {
            biased;
            r = log.streaming(fut, deferred) => r,
            () = cancel.cancelled() => None,
            // The deadline passed while planning: the plan is dropped and the
            // next step (finalize, or a finalizer timeout) takes over.
            () = sleep_until(deadline) => return,
        };
        // A plan that came after a cancel was asked for is dropped: the
        // cancel was answered, so the run takes no step the plan asks for.
        let result = result.filter(|_| !cancel.is_cancelled());
        let changes = ctx.into_changes();
        drop(tools);
        if let Some(changes) = changes {
            changes.apply(&mut self.machine);
        }
        memory.record_reads(&mut self.machine);
        let now = self.now();
        // The plan's memory writes are stored before the step is committed,
        // and only under a lease this driver still holds.
        if let Some(store) = sessions
            && result.is_some()
            && self.leases.is_trusted(&self.shared.run_id, self.epoch)
            && let Err(e) = memory.store_writes(store, &self.session_id, now).await
        {
            let _ = self.machine.fail(RunFailure::SessionMemory {
                message: format!("the session's memory could not be stored: {e}"),
            });
            return;
        }
        match result {
            None if !self.shared.cancel.is_cancelled() => {
                // Streamed text could not be stored: the lease is gone.
                self.lease_lost = true;
            }
            None => {
                let _ = self.machine.cancel(self.shared.cancel_reason());
            }
            Some(mut result) => {
                if let Ok(result) = &mut result {
                    for text in std::mem::take(&mut result.notes) {
                        self.emit(EventKind::PlannerThought {
                            text,
                            labels: Labels::default(),
                        });
                    }
                    if let Some(usage) = &result.usage {
                        self.observer.observe(&Observation::Tokens {
                            model: self.agent.planner.model_id().unwrap_or("unknown"),
                            usage,
                        });
                    }
                }
                // What the plan's bookkeeping produced goes before the plan.
                self.collect();
                let catalog = &self.tools.catalog;
                turn::apply_plan(&mut self.machine, &self.agent, result, now, catalog);
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

    /// The prompt overrides in this run's scope, read again every turn so a
    /// change reaches the next model call. A store that cannot say leaves
    /// the agent's own prompts in force for this turn (the turn's
    /// `prompt_rendered` events tell which were used).
    async fn prompt_overrides(&self) -> Vec<PromptOverride> {
        let Some(prompts) = &self.prompts else {
            return Vec::new();
        };
        match prompts
            .resolve_prompts(&self.session_id, &self.labels)
            .await
        {
            Ok(overrides) => overrides,
            Err(e) => {
                tracing::warn!(run_id = %self.shared.run_id, error = %e, "reading prompt overrides failed; using the agent's prompts");
                Vec::new()
            }
        }
    }
}
