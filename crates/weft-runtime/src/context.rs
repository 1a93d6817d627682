//! The [`PlannerContext`] the runtime hands a planner for one planning call:
//! per-run state and reminders are read from the machine and written back
//! after the call, so the planner itself keeps no per-run state. Prompts
//! render through the run's prompt registry (the agent's templates and the
//! overrides in the run's scope), each render told to the event sink.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use weft_core::model::ModelClient;
use weft_core::planner::{
    EmptyMemory, MemoryView, PlannerContext, PlannerError, PlannerEvents, Reminder,
};
use weft_core::prompt::PromptRegistry;
use weft_core::run::{ReminderAdded, RunMachine};
use weft_core::session::PromptOverride;
use weft_core::{AgentId, RunId};

use crate::agent::Agent;
use crate::session::SessionMemory;

/// Changes a planner made during one call, applied to the machine afterwards.
#[derive(Default)]
pub(crate) struct Changes {
    state: BTreeMap<String, Value>,
    reminders: Vec<ReminderChange>,
}

enum ReminderChange {
    Add(Reminder),
    Remove(String),
}

/// One planning call's view of its run.
pub(crate) struct Ctx<'a> {
    pub(crate) agent: &'a Agent,
    pub(crate) run_id: &'a RunId,
    pub(crate) state: &'a BTreeMap<String, Value>,
    changes: Mutex<Option<Changes>>,
    prompts: PromptRegistry,
    prompt_events: Option<&'a dyn PlannerEvents>,
    /// The session's memory, when the driver loaded it.
    memory: Option<&'a SessionMemory>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(
        agent: &'a Agent,
        run_id: &'a RunId,
        state: &'a BTreeMap<String, Value>,
    ) -> Self {
        Self {
            agent,
            run_id,
            state,
            changes: Mutex::new(None),
            prompts: PromptRegistry::new(&agent.prompts),
            prompt_events: None,
            memory: None,
        }
    }

    /// The same context over the session's `memory`.
    pub(crate) fn with_memory(mut self, memory: &'a SessionMemory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The same context with `overrides` (the ones in the run's scope) in
    /// its prompt registry, telling `events` about every render.
    pub(crate) fn with_prompts(
        mut self,
        overrides: Vec<PromptOverride>,
        events: &'a dyn PlannerEvents,
    ) -> Self {
        self.prompts = std::mem::take(&mut self.prompts).with_overrides(overrides);
        self.prompt_events = Some(events);
        self
    }

    /// Renders `name` (or `fallback`) through the registry and tells the sink.
    fn render_registered(
        &self,
        name: &str,
        fallback: Option<&str>,
        vars: &Value,
    ) -> Result<String, PlannerError> {
        let (text, rendered) = self.prompts.render(name, fallback, vars)?;
        if let Some(events) = self.prompt_events {
            events.prompt_rendered(&rendered);
        }
        Ok(text)
    }

    fn with_changes<R>(&self, f: impl FnOnce(&mut Changes) -> R) -> R {
        let mut guard = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        f(guard.get_or_insert_with(Changes::default))
    }

    /// The planner's writes, releasing the borrow of the machine.
    pub(crate) fn into_changes(self) -> Option<Changes> {
        self.changes.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl Changes {
    /// Applies the planner's writes to the machine.
    pub(crate) fn apply(self, machine: &mut RunMachine) {
        let changes = self;
        for (k, v) in changes.state {
            machine.set_state(k, v);
        }
        for r in changes.reminders {
            match r {
                ReminderChange::Add(r) => {
                    let id = r.id.clone();
                    match machine.add_reminder(r) {
                        ReminderAdded::Refused => tracing::warn!(
                            reminder = %id,
                            "guidance reminder refused: the run's reminders are all safety and at their cap"
                        ),
                        ReminderAdded::Evicted { id: gone } => tracing::debug!(
                            reminder = %id,
                            evicted = %gone,
                            "reminder cap reached; the oldest lower-tier reminder was dropped"
                        ),
                        ReminderAdded::Added | ReminderAdded::Replaced => {}
                    }
                }
                ReminderChange::Remove(id) => {
                    machine.remove_reminder(&id);
                }
            }
        }
    }
}

impl PlannerContext for Ctx<'_> {
    fn agent_id(&self) -> &AgentId {
        &self.agent.id
    }

    fn run_id(&self) -> &RunId {
        self.run_id
    }

    fn state_get(&self, key: &str) -> Option<Value> {
        let written = self.with_changes(|c| c.state.get(key).cloned());
        written.or_else(|| self.state.get(key).cloned())
    }

    fn state_set(&self, key: &str, value: Value) {
        self.with_changes(|c| c.state.insert(key.to_owned(), value));
    }

    fn memory(&self) -> &dyn MemoryView {
        match self.memory {
            Some(memory) => memory,
            None => &EmptyMemory,
        }
    }

    fn remember(&self, key: &str, value: Value) {
        if let Some(memory) = self.memory {
            memory.remember(key, value);
        }
    }

    fn model(&self, id: &str) -> Option<Arc<dyn ModelClient>> {
        self.agent.models.get(id).cloned()
    }

    fn render_prompt(&self, name: &str, vars: &Value) -> Result<String, PlannerError> {
        self.render_registered(name, None, vars)
    }

    fn render_prompt_or(
        &self,
        name: &str,
        fallback: &str,
        vars: &Value,
    ) -> Result<String, PlannerError> {
        self.render_registered(name, Some(fallback), vars)
    }

    fn add_reminder(&self, reminder: Reminder) {
        self.with_changes(|c| c.reminders.push(ReminderChange::Add(reminder)));
    }

    fn remove_reminder(&self, id: &str) {
        self.with_changes(|c| c.reminders.push(ReminderChange::Remove(id.to_owned())));
    }
}

#[cfg(test)]
mod tests;
