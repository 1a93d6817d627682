//! The [`PlannerContext`] the runtime hands a planner for one planning call:
//! per-run state and reminders are read from the machine and written back
//! after the call, so the planner itself keeps no per-run state.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use weft_core::model::ModelClient;
use weft_core::planner::{EmptyMemory, MemoryView, PlannerContext, PlannerError, Reminder};
use weft_core::run::RunMachine;
use weft_core::{AgentId, RunId};

use crate::agent::Agent;

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
        }
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
                ReminderChange::Add(r) => machine.add_reminder(r),
                ReminderChange::Remove(id) => machine.remove_reminder(&id),
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
        &EmptyMemory
    }

    fn model(&self, id: &str) -> Option<Arc<dyn ModelClient>> {
        self.agent.models.get(id).cloned()
    }

    fn render_prompt(&self, name: &str, vars: &Value) -> Result<String, PlannerError> {
        let template = self
            .agent
            .prompts
            .get(name)
            .ok_or_else(|| PlannerError::new(format!("no prompt named `{name}`")))?;
        render(template, vars)
    }

    fn add_reminder(&self, reminder: Reminder) {
        self.with_changes(|c| c.reminders.push(ReminderChange::Add(reminder)));
    }

    fn remove_reminder(&self, id: &str) {
        self.with_changes(|c| c.reminders.push(ReminderChange::Remove(id.to_owned())));
    }
}

/// Replaces `{{key}}` with `vars[key]` (strings verbatim, other values as JSON).
fn render(template: &str, vars: &Value) -> Result<String, PlannerError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| PlannerError::new("unclosed `{{` in prompt template"))?;
        let key = after[..end].trim();
        match vars.get(key) {
            Some(Value::String(s)) => out.push_str(s),
            Some(v) => out.push_str(&v.to_string()),
            None => {
                return Err(PlannerError::new(format!(
                    "prompt variable `{key}` is missing"
                )));
            }
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::render;

    #[test]
    fn renders_placeholders_and_rejects_missing_ones() {
        let vars = json!({"name": "Ada", "n": 3});
        assert_eq!(
            render("Hi {{ name }}, {{n}}!", &vars).unwrap(),
            "Hi Ada, 3!"
        );
        assert!(
            render("{{missing}}", &vars)
                .unwrap_err()
                .message
                .contains("missing")
        );
        assert!(render("{{name", &vars).is_err());
    }
}
