//! Replay against runs recorded by a real runtime: unchanged agents match,
//! changed ones are reported at their first different decision.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::awaiting::AwaitAnswer;
use weft_core::planner::{PlanResult, TerminationReason, ToolCallRequest};
use weft_core::run::Policy;
use weft_core::tool::{ToolError, ToolIdent};
use weft_core::{AwaitItemId, RunId};
use weft_tools::FnToolSet;

use super::*;
use crate::{Agent, Runtime, ScriptedPlanner, StartRequest};

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// An agent whose `t.add` counts its executions and whose `t.fail` always fails.
fn agent(turns: Vec<PlanResult>, policy: Policy, runs: Arc<AtomicU32>) -> Agent {
    let tools = FnToolSet::new("t")
        .tool("add", "Adds", move |x: Add| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(x.a + x.b)
            }
        })
        .tool("fail", "Fails", |_: Add| async move {
            Err::<i64, _>(ToolError::new("boom", "it broke"))
        })
        .tool("slow", "Sleeps `a` ms", |x: Add| async move {
            tokio::time::sleep(std::time::Duration::from_millis(x.a as u64)).await;
            Ok::<_, ToolError>(x.b)
        });
    Agent::builder(
        "calc",
        Arc::new(ScriptedPlanner::new(turns).with_finalize("out of budget")),
    )
    .toolset(Arc::new(tools))
    .policy(policy)
    .build()
}

fn add(a: i64, b: i64) -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new("t.add", json!({"a": a, "b": b}))])
}

fn script() -> Vec<PlanResult> {
    vec![add(2, 3), add(5, 7), PlanResult::final_text("12")]
}

/// Runs `agent` to its end (or its first await) and reads its log.
async fn record(agent: Agent) -> (Runtime, Recording) {
    let runtime = Runtime::builder().agent(agent).build();
    let run = runtime
        .start("calc", StartRequest::user("go"))
        .await
        .unwrap();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), run.outcome()).await;
    let recording = read(&runtime, run.run_id()).await;
    (runtime, recording)
}

async fn read(runtime: &Runtime, id: &RunId) -> Recording {
    let events = runtime.store().read_events(id, 0, None).await.unwrap();
    Recording::from_events(id, &events).unwrap()
}

fn difference(report: &ReplayReport) -> &Difference {
    match &report.verdict {
        Verdict::Differs { difference } => difference,
        other => panic!("expected a difference, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unchanged_agent_replays_identically_without_running_a_tool() {
    let runs = Arc::new(AtomicU32::new(0));
    let (_rt, rec) = record(agent(script(), Policy::default(), runs.clone())).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let report = replay(&agent(script(), Policy::default(), runs.clone()), &rec)
        .await
        .unwrap();
    assert_eq!(report.verdict, Verdict::Identical);
    assert_eq!(report.matched, 3);
    assert_eq!(runs.load(Ordering::SeqCst), 2, "replay executed a tool");
}

#[tokio::test]
async fn changed_arguments_are_the_first_difference_with_a_json_diff() {
    let runs = Arc::new(AtomicU32::new(0));
    let (_rt, rec) = record(agent(script(), Policy::default(), runs.clone())).await;
    let changed = vec![add(2, 3), add(5, 8), PlanResult::final_text("13")];
    let report = replay(&agent(changed, Policy::default(), runs), &rec)
        .await
        .unwrap();
    let d = difference(&report);
    assert_eq!((d.index, d.turn), (2, 2));
    let text = d.render().join("\n");
    assert!(text.contains("~ arguments.b: 7 → 8"), "{text}");
    assert!(text.contains("expected: call t.add"), "{text}");
}

#[tokio::test]
async fn a_lower_cap_is_reported_as_a_termination_where_a_call_was() {
    let runs = Arc::new(AtomicU32::new(0));
    let (_rt, rec) = record(agent(script(), Policy::default(), runs.clone())).await;
    let policy = Policy {
        max_tool_calls: NonZeroU32::new(1),
        ..Policy::default()
    };
    let report = replay(&agent(script(), policy, runs), &rec).await.unwrap();
    let d = difference(&report);
    assert_eq!(d.index, 2);
    assert!(matches!(&d.expected, Some(Decision::ToolCall { .. })));
    assert!(matches!(
        &d.got,
        Some(Decision::Termination { termination }) if termination.reason == TerminationReason::ToolCap
    ));
}

#[tokio::test]
async fn tool_failures_and_failure_caps_replay_identically() {
    let fail = || {
        PlanResult::tool_calls(vec![ToolCallRequest::new(
            "t.fail",
            json!({"a": 1, "b": 1}),
        )])
    };
    let turns = || vec![fail(), fail(), fail(), PlanResult::final_text("never")];
    let policy = || Policy {
        max_consecutive_failures: NonZeroU32::new(2),
        ..Policy::default()
    };
    let runs = Arc::new(AtomicU32::new(0));
    let (_rt, rec) = record(agent(turns(), policy(), runs.clone())).await;
    assert!(
        rec.decisions
            .iter()
            .any(|r| matches!(&r.decision, Decision::Termination { .. }))
    );
    let report = replay(&agent(turns(), policy(), runs.clone()), &rec)
        .await
        .unwrap();
    assert_eq!(report.verdict, Verdict::Identical);
    // Without the failure cap, the third call is made where the run was made to finalize.
    let report = replay(&agent(turns(), Policy::default(), runs), &rec)
        .await
        .unwrap();
    let d = difference(&report);
    assert!(
        matches!(&d.expected, Some(Decision::Termination { .. })),
        "{d:?}"
    );
}

#[tokio::test]
async fn awaits_replay_with_their_recorded_answers_and_a_new_confirmation_differs() {
    let confirm = || Policy {
        confirm_tools: [ToolIdent::new("t.add")].into(),
        ..Policy::default()
    };
    let runs = Arc::new(AtomicU32::new(0));
    let (rt, rec) = record(agent(script(), confirm(), runs.clone())).await;
    // Recorded so far: an await nobody answered.
    let report = replay(&agent(script(), confirm(), runs.clone()), &rec)
        .await
        .unwrap();
    assert!(
        matches!(report.verdict, Verdict::IdenticalSoFar { .. }),
        "{report:?}"
    );
    let id = rec.run_id.clone();
    for call in ["call_1", "call_2"] {
        rt.answer(
            &id,
            &AwaitItemId::new(format!("confirm_{call}")),
            AwaitAnswer::Confirmation {
                approved: call == "call_1",
                reason: Some("not twice".into()),
            },
        )
        .await
        .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let _ = rt.outcome(&id).await.unwrap();
    let rec = read(&rt, &id).await;
    let report = replay(&agent(script(), confirm(), runs.clone()), &rec)
        .await
        .unwrap();
    assert_eq!(report.verdict, Verdict::Identical);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The same run replayed without the confirmation rule calls at once.
    let report = replay(&agent(script(), Policy::default(), runs), &rec)
        .await
        .unwrap();
    let d = difference(&report);
    assert_eq!(d.index, 1);
    assert!(matches!(&d.expected, Some(Decision::Await { .. })));
    assert!(matches!(&d.got, Some(Decision::ToolCall { .. })));
}

#[tokio::test]
async fn an_extra_turn_and_a_missing_one_are_differences() {
    let runs = Arc::new(AtomicU32::new(0));
    let (_rt, rec) = record(agent(script(), Policy::default(), runs.clone())).await;
    let shorter = vec![add(2, 3), PlanResult::final_text("5")];
    let d = replay(&agent(shorter, Policy::default(), runs.clone()), &rec)
        .await
        .unwrap();
    let d = difference(&d);
    assert!(matches!(&d.got, Some(Decision::Finish { .. })), "{d:?}");
    let longer = vec![add(2, 3), add(5, 7), add(1, 1), PlanResult::final_text("2")];
    let d = replay(&agent(longer, Policy::default(), runs), &rec)
        .await
        .unwrap();
    let d = difference(&d);
    assert!(
        matches!(&d.expected, Some(Decision::Finish { .. })),
        "{d:?}"
    );
    assert!(
        d.render().join("\n").contains("no result for this call"),
        "{:?}",
        d.render()
    );
}

#[test]
fn a_log_without_its_start_is_refused() {
    let id = RunId::new("r");
    assert_eq!(
        Recording::from_events(&id, &[]).unwrap_err(),
        RecordingError::Empty(id.clone())
    );
}

#[tokio::test]
async fn a_time_budget_that_cut_a_call_replays_identically() {
    let slow = || {
        PlanResult::tool_calls(vec![ToolCallRequest::new(
            "t.slow",
            json!({"a": 120, "b": 1}),
        )])
    };
    let turns = || vec![slow(), slow(), slow(), PlanResult::final_text("never")];
    let policy = |ms| Policy {
        time_budget: Some(std::time::Duration::from_millis(ms)),
        ..Policy::default()
    };
    let runs = Arc::new(AtomicU32::new(0));
    let (_rt, rec) = record(agent(turns(), policy(200), runs.clone())).await;
    assert!(
        rec.decisions.iter().any(|r| matches!(
            &r.decision,
            Decision::Termination { termination } if termination.reason == TerminationReason::TimeBudget
        )),
        "{:?}",
        rec.decisions
    );
    let report = replay(&agent(turns(), policy(200), runs.clone()), &rec)
        .await
        .unwrap();
    assert_eq!(report.verdict, Verdict::Identical, "{report:?}");
    // A budget ten times larger lets the cut call finish.
    let report = replay(&agent(turns(), policy(2_000), runs), &rec)
        .await
        .unwrap();
    assert!(!report.verdict.is_identical(), "{report:?}");
}

/// Adds, then answers with the agent's `answer` prompt.
struct PromptPlanner;

#[async_trait::async_trait]
impl weft_core::planner::Planner for PromptPlanner {
    async fn plan_start(
        &self,
        _: weft_core::planner::PlanInput<'_>,
    ) -> Result<PlanResult, weft_core::planner::PlannerError> {
        Ok(add(20, 22))
    }

    async fn plan_resume(
        &self,
        input: weft_core::planner::PlanResumeInput<'_>,
    ) -> Result<PlanResult, weft_core::planner::PlannerError> {
        let sum = serde_json::to_value(&input.tool_outputs[0].result)
            .ok()
            .and_then(|v| v.get("value").cloned())
            .unwrap_or_default();
        let text = input
            .base
            .context
            .render_prompt("answer", &json!({ "sum": sum }))?;
        Ok(PlanResult::final_text(text))
    }
}

fn prompted(template: &str) -> Agent {
    let tools = FnToolSet::new("t").tool("add", "Adds", |x: Add| async move {
        Ok::<_, ToolError>(x.a + x.b)
    });
    Agent::builder("calc", Arc::new(PromptPlanner))
        .toolset(Arc::new(tools))
        .prompt("answer", template)
        .build()
}

#[tokio::test]
async fn a_changed_prompt_is_reported_at_the_answer_it_changes() {
    let (_rt, rec) = record(prompted("The sum is {{sum}}.")).await;
    let same = replay(&prompted("The sum is {{sum}}."), &rec)
        .await
        .unwrap();
    assert_eq!(same.verdict, Verdict::Identical);
    let report = replay(&prompted("Sum: {{sum}}"), &rec).await.unwrap();
    let d = difference(&report);
    assert_eq!((d.index, d.turn), (2, 2));
    let text = d.render().join("\n");
    assert!(
        text.contains("expected: final answer \"The sum is 42.\""),
        "{text}"
    );
    assert!(
        text.contains("got:      final answer \"Sum: 42\""),
        "{text}"
    );
    assert!(
        text.contains("~ outcome.message.parts[0].text: \"The sum is 42.\" → \"Sum: 42\""),
        "{text}"
    );
}

#[tokio::test]
async fn time_a_human_kept_the_run_paused_does_not_count_against_its_budget() {
    let slow = || {
        PlanResult::tool_calls(vec![ToolCallRequest::new(
            "t.slow",
            json!({"a": 60, "b": 1}),
        )])
    };
    let turns = || vec![slow(), slow(), PlanResult::final_text("done")];
    let policy = || Policy {
        time_budget: Some(std::time::Duration::from_millis(400)),
        ..Policy::default()
    };
    let runs = Arc::new(AtomicU32::new(0));
    let runtime = Runtime::builder()
        .agent(agent(turns(), policy(), runs.clone()))
        .build();
    let run = runtime
        .start("calc", StartRequest::user("go"))
        .await
        .unwrap();
    let id = run.run_id().clone();
    runtime.pause(&id).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    runtime.continue_run(&id).await.unwrap();
    let outcome = run.outcome().await.unwrap();
    assert!(
        matches!(
            &outcome,
            weft_core::run::RunOutcome::Response {
                termination: None,
                ..
            }
        ),
        "{outcome:?}"
    );
    let events = runtime.store().read_events(&id, 0, None).await.unwrap();
    let paused = events
        .iter()
        .any(|e| matches!(e.kind, weft_core::event::EventKind::RunPaused { .. }));
    assert!(paused, "the run was never paused");
    let (first, last) = (events[0].at, events[events.len() - 1].at);
    assert!(
        last.as_millis() - first.as_millis() > 600,
        "the pause was short"
    );
    let rec = read(&runtime, &id).await;
    let report = replay(&agent(turns(), policy(), runs), &rec).await.unwrap();
    assert_eq!(report.verdict, Verdict::Identical, "{report:?}");
}
