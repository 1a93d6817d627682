//! [`ScriptedPlanner`]: a planner that replays a fixed list of decisions, one
//! per turn. For tests, examples and benchmarks; it keeps its position in the
//! run's state, so one instance serves many runs and survives recoveries.
//! With [`ScriptedPlanner::across_session`] the position also goes to the
//! session's memory, and a run continues the script where the session's
//! previous run stopped. A final answer's text may name `{{input}}` (the
//! run's last user message) and `{{last_answer}}` (the last answer in the
//! session's history).

use async_trait::async_trait;
use serde_json::Value;
use weft_core::message::{Message, Part, Role};
use weft_core::planner::{Decision, PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError};

const POSITION_KEY: &str = "weft.scripted.position";

/// The session memory key of the position when the script spans a session.
pub const SESSION_POSITION_KEY: &str = "weft.scripted.session_position";

/// Replays `turns` in order; after the last turn it answers with the final text
/// of its `finalize` reply (or fails).
#[derive(Debug, Clone)]
pub struct ScriptedPlanner {
    turns: Vec<PlanResult>,
    finalize: Option<String>,
    across_session: bool,
}

impl ScriptedPlanner {
    /// A planner replaying `turns`.
    pub fn new(turns: Vec<PlanResult>) -> Self {
        Self {
            turns,
            finalize: None,
            across_session: false,
        }
    }

    /// Continues the script across the runs of a session (its position kept
    /// in the session's memory too).
    pub fn across_session(mut self) -> Self {
        self.across_session = true;
        self
    }

    /// The answer given when the runtime forces finalization or the script runs out.
    pub fn with_finalize(mut self, text: impl Into<String>) -> Self {
        self.finalize = Some(text.into());
        self
    }

    fn next(&self, input: &PlanInput<'_>, finalizing: bool) -> Result<PlanResult, PlannerError> {
        let ctx = input.context;
        let position = ctx
            .state_get(POSITION_KEY)
            .or_else(|| {
                self.across_session
                    .then(|| ctx.memory().get(SESSION_POSITION_KEY))
                    .flatten()
            })
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let index = usize::try_from(position).unwrap_or(usize::MAX);
        ctx.state_set(POSITION_KEY, Value::from(position + 1));
        if self.across_session {
            ctx.remember(SESSION_POSITION_KEY, Value::from(position + 1));
        }
        if finalizing {
            return self.finale();
        }
        match self.turns.get(index) {
            Some(turn) => Ok(fill(turn.clone(), input)),
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

/// A final answer with its `{{input}}` and `{{last_answer}}` filled in.
fn fill(mut turn: PlanResult, input: &PlanInput<'_>) -> PlanResult {
    let Decision::FinalResponse { message } = &mut turn.decision else {
        return turn;
    };
    let last_text = |messages: &mut dyn Iterator<Item = &Message>, role: Role| {
        messages
            .filter(|m| m.role == role)
            .last()
            .map(Message::joined_text)
            .unwrap_or_default()
    };
    for part in &mut message.parts {
        if let Part::Text { text } = part
            && text.contains("{{")
        {
            let said = last_text(&mut input.messages.iter(), Role::User);
            let answered = last_text(
                &mut input.context.memory().history().iter(),
                Role::Assistant,
            );
            *text = text
                .replace("{{input}}", &said)
                .replace("{{last_answer}}", &answered);
        }
    }
    turn
}
