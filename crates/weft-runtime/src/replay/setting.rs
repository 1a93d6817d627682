//! What a recorded run had besides its event log, restored for its replay:
//! its labels, how many of its first messages were its session's history,
//! the session memory its planner read, the prompt overrides it rendered,
//! and what its model planner first asked with.
//!
//! The labels come from the run's stored record, and so does whether it is
//! a child run, whose policy (clipped by its parent's budget) comes from
//! its last snapshot; the history length and
//! the memory read from its last snapshot's state (where the driver keeps
//! them: `weft.session.history_len`, and `weft.session.memory_read` with
//! each stored value as the planner first read it; a run logged before
//! weft kept them replays with no memory). The overrides are the prompt
//! store's whose name, scope and template version a `prompt_rendered`
//! event of the log names: an override changed or removed since the run
//! is no longer there to restore (its prompt renders from the agent's own
//! template, or the next override in scope), and one changed during the
//! run is restored as first rendered.

use serde_json::Value;
use weft_core::model::MODEL_SETUP_KEY;
use weft_core::prompt::{PromptOverride, template_version};
use weft_core::session::{FullStore, PromptFilter};
use weft_core::store::StoredRun;

use super::Recording;
use crate::children::PARENT_RUN_LABEL;
use crate::error::RuntimeError;
use crate::session::{MEMORY_READ_KEY, history_len, session_error};

impl Recording {
    /// Restores what the run's record and last snapshot hold: its labels,
    /// its history length, the memory its planner read, its model setup
    /// and, for a child run, the caps it ran with.
    pub fn restore_run(&mut self, stored: &StoredRun) {
        self.labels = stored.record.labels.clone();
        self.child_caps = self
            .labels
            .contains_key(PARENT_RUN_LABEL)
            .then(|| stored.snapshot.policy().clone());
        self.history_len = history_len(&stored.snapshot);
        self.memory = stored
            .snapshot
            .state()
            .get(MEMORY_READ_KEY)
            .and_then(Value::as_object)
            .map(|m| m.clone().into_iter().collect())
            .unwrap_or_default();
        self.model_setup = stored
            .snapshot
            .state()
            .get(MODEL_SETUP_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok());
    }

    /// The names of the prompts the run rendered through an override.
    pub fn overridden_prompts(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .rendered
            .iter()
            .filter(|r| r.override_scope.is_some())
            .map(|r| r.template_id.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Keeps, among `candidates`, the overrides the run rendered (same
    /// name, scope and template version), one per name, the first rendered.
    pub fn restore_prompts(&mut self, candidates: &[PromptOverride]) {
        let mut kept: Vec<PromptOverride> = Vec::new();
        for r in &self.rendered {
            let Some(scope) = &r.override_scope else {
                continue;
            };
            if kept.iter().any(|o| o.name == r.template_id) {
                continue;
            }
            if let Some(o) = candidates.iter().find(|o| {
                o.name == r.template_id
                    && o.scope == *scope
                    && template_version(&o.template) == r.version
            }) {
                kept.push(o.clone());
            }
        }
        self.overrides = kept;
    }

    /// Restores everything `store` keeps about the run: its record and
    /// snapshot ([`restore_run`](Self::restore_run)) and the overrides it
    /// rendered ([`restore_prompts`](Self::restore_prompts)).
    pub async fn restore_from(&mut self, store: &dyn FullStore) -> Result<(), RuntimeError> {
        if let Some(stored) = store.load_run(&self.run_id).await? {
            self.restore_run(&stored);
        }
        let mut candidates = Vec::new();
        let names: Vec<String> = self
            .overridden_prompts()
            .into_iter()
            .map(str::to_owned)
            .collect();
        for name in names {
            let mut filter = PromptFilter {
                name: Some(name),
                ..PromptFilter::default()
            };
            loop {
                let page = store
                    .list_prompt_overrides(&filter)
                    .await
                    .map_err(session_error)?;
                let full = page.len() == filter.page_size() as usize;
                filter.after = page.last().map(|o| weft_core::session::PromptCursor {
                    name: o.name.clone(),
                    scope: o.scope.clone(),
                });
                candidates.extend(page);
                if !full {
                    break;
                }
            }
        }
        self.restore_prompts(&candidates);
        Ok(())
    }
}
