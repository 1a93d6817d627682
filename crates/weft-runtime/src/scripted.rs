//! [`ScriptedPlanner`]: a planner that replays a fixed list of decisions, one
//! per turn. For tests, examples and benchmarks; it keeps its position in the
//! run's state, so one instance serves many runs and survives recoveries.

use async_trait::async_trait;
use serde_json::Value;
use weft_core::planner::{PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError};

const POSITION_KEY: &str = "weft.scripted.position";

/// Replays `turns` in order; after the last turn it answers with the final text
/// of its `finalize` reply (or fails).
#[derive(Debug, Clone)]
pub struct ScriptedPlanner {
    turns: Vec<PlanResult>,
    finalize: Option<String>,
}

impl ScriptedPlanner {
    /// A planner replaying `turns`.
    pub fn new(turns: Vec<PlanResult>) -> Self {
        Self {
            turns,
            finalize: None,
        }
    }

    /// The answer given when the runtime forces finalization or the script runs out.
    pub fn with_finalize(mut self, text: impl Into<String>) -> Self {
        self.finalize = Some(text.into());
        self
    }

    fn next(&self, input: &PlanInput<'_>, finalizing: bool) -> Result<PlanResult, PlannerError> {
        let position = input
            .context
            .state_get(POSITION_KEY)
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let index = usize::try_from(position).unwrap_or(usize::MAX);
        input
            .context
            .state_set(POSITION_KEY, Value::from(position + 1));
        if finalizing {
            return self.finale();
        }
        match self.turns.get(index) {
            Some(turn) => Ok(turn.clone()),
            None => self.finale(),
        }
    }

    fn finale(&self) -> Result<PlanResult, PlannerError> {
        self.finalize
            .as_ref()
            .map(PlanResult::final_text)
            .ok_or_else(|| PlannerError::new("the script has no more turns"))
    }
}

#[async_trait]
impl Planner for ScriptedPlanner {
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        self.next(&input, false)
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        self.next(&input.base, input.finalize.is_some())
    }
}
