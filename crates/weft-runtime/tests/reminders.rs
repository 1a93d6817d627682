//! Reminders through the driver: what a planner adds reaches later turns
//! safety first, within the run's cap (guidance goes first), at the spacing
//! each reminder asks for.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::planner::{
    PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError, Reminder, ToolCallRequest,
};
use weft_core::run::{Policy, RunOutcome};
use weft_core::tool::ToolError;
use weft_runtime::{Agent, Runtime, StartRequest};
use weft_tools::FnToolSet;

#[derive(Deserialize, JsonSchema)]
struct Args {
    a: i64,
}

/// Adds reminders on its first turn, calls a tool on each of its next
/// turns, answers on the fifth; records the reminder ids each turn saw.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<Vec<String>>>,
}

impl Recorder {
    fn record(&self, input: &PlanInput<'_>) -> usize {
        let ids = input.reminders.iter().map(|r| r.id.clone()).collect();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.push(ids);
        seen.len()
    }

    fn call() -> PlanResult {
        PlanResult::tool_calls(vec![ToolCallRequest::new("t.id", json!({"a": 1}))])
    }
}

#[async_trait]
impl Planner for Recorder {
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        self.record(&input);
        input
            .context
            .add_reminder(Reminder::new("g0", "Old advice."));
        input
            .context
            .add_reminder(Reminder::safety("s", "Never leak secrets."));
        // Past the cap of 2: the oldest guidance reminder, g0, goes.
        input
            .context
            .add_reminder(Reminder::new("g1", "Be brief.").every(1));
        Ok(Self::call())
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        let turn = self.record(&input.base);
        if turn == 4 {
            // Full again: the new guidance reminder displaces the guidance
            // g1, never the safety one.
            input
                .base
                .context
                .add_reminder(Reminder::new("g2", "Extra."));
        }
        Ok(if turn < 5 {
            Self::call()
        } else {
            PlanResult::final_text("done")
        })
    }
}

#[tokio::test]
async fn reminders_reach_later_turns_safety_first_within_the_cap_and_spaced() {
    let planner = Arc::new(Recorder::default());
    let tools = Arc::new(
        FnToolSet::new("t").tool("id", "Identity", |a: Args| async move {
            Ok::<_, ToolError>(a.a)
        }),
    );
    let policy = Policy {
        max_reminders: NonZeroU32::new(2).unwrap_or(NonZeroU32::MIN),
        ..Policy::bounded()
    };
    let agent = Agent::builder("a", planner.clone())
        .toolset(tools)
        .policy(policy)
        .build();
    let rt = Runtime::builder().agent(agent).build();
    let run = rt.start("a", StartRequest::user("hi")).await.unwrap();
    assert!(matches!(
        run.outcome().await.unwrap(),
        RunOutcome::Response { .. }
    ));
    let seen = planner.seen.lock().unwrap().clone();
    let expected: Vec<Vec<&str>> = vec![
        vec![],
        vec!["s", "g1"],
        // g1 skips a turn between deliveries.
        vec!["s"],
        vec!["s", "g1"],
        vec!["s", "g2"],
    ];
    assert_eq!(seen, expected);
}
