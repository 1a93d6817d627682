//! A child run under its parent's budget and its parent tool's result
//! contract: the child's caps are clipped to what the parent has left, and
//! its final tool result is checked against the tool's output schema and
//! bounded by the payload budget like any other result.

use std::num::NonZeroU32;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use weft_core::RunId;
use weft_core::event::EventKind;
use weft_core::planner::{Decision, PlanResult, TerminationReason, ToolCallRequest};
use weft_core::run::{Policy, RunOutcome};
use weft_core::store::RunStore;
use weft_core::tool::{Omission, ToolError, ToolOutput, ToolResultBody};
use weft_runtime::replay::{self, Recording, Verdict};
use weft_runtime::{
    Agent, AgentToolSet, INVALID_RESULT, MemoryStore, Runtime, ScriptedPlanner, StartRequest,
};
use weft_tools::FnToolSet;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

fn ask_specialist() -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new(
        "agents.specialist",
        json!({"input": "add things"}),
    )])
}

fn add() -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new("t.add", json!({"a": 1, "b": 2}))])
}

fn final_result(result: Value) -> PlanResult {
    PlanResult::new(Decision::FinalToolResult { result })
}

fn caps(tool_calls: u32) -> Policy {
    Policy {
        max_tool_calls: NonZeroU32::new(tool_calls),
        ..Policy::bounded()
    }
}

/// A coordinator (capped at `parent_calls` tool calls) whose one tool is
/// the specialist (capped at `child_calls`, playing `script`), offered
/// with `schema` when given, on a runtime with `payload_budget`.
fn runtime(
    store: &Arc<MemoryStore>,
    (parent_calls, child_calls): (u32, u32),
    script: Vec<PlanResult>,
    schema: Option<Value>,
    payload_budget: u64,
) -> Runtime {
    let agents = AgentToolSet::new("agents");
    let agents = match schema {
        Some(schema) => agents.agent_with_result("specialist", "Adds", schema),
        None => agents.agent("specialist", "Adds"),
    };
    let coordinator = Agent::builder(
        "coordinator",
        Arc::new(ScriptedPlanner::new(vec![ask_specialist()]).with_finalize("done")),
    )
    .toolset(Arc::new(agents))
    .policy(caps(parent_calls))
    .build();
    let specialist = Agent::builder(
        "specialist",
        Arc::new(ScriptedPlanner::new(script).with_finalize("out of calls")),
    )
    .toolset(Arc::new(FnToolSet::new("t").tool(
        "add",
        "Adds",
        |args: AddArgs| async move { Ok::<_, ToolError>(args.a + args.b) },
    )))
    .policy(caps(child_calls))
    .build();
    Runtime::builder()
        .agent(coordinator)
        .agent(specialist)
        .store(store.clone())
        .payload_budget(payload_budget)
        .build()
}

/// Runs the coordinator to its end; its one tool output and the child's id.
async fn run(store: &Arc<MemoryStore>, rt: &Runtime) -> (ToolOutput, RunId) {
    let parent = rt
        .start("coordinator", StartRequest::user("go"))
        .await
        .unwrap();
    let outcome = parent.outcome().await.unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    let stored = store.load_run(parent.run_id()).await.unwrap().unwrap();
    let output = (*stored.snapshot.tool_outputs()[0]).clone();
    let child = RunId::new(format!("{}.{}", parent.run_id(), output.tool_call_id));
    (output, child)
}

#[tokio::test]
async fn a_child_s_tool_calls_stop_at_what_its_parent_has_left() {
    let store = Arc::new(MemoryStore::new());
    // The parent may make 3 calls; the specialist's call is one, so the
    // child gets 2, though its own cap is 10 and its script wants 5.
    let rt = runtime(&store, (3, 10), vec![add(); 5], None, 1 << 20);
    let (output, child) = run(&store, &rt).await;
    assert_eq!(
        output.result,
        ToolResultBody::Json(json!({"text": "out of calls"}))
    );
    let stored = store.load_run(&child).await.unwrap().unwrap();
    assert_eq!(stored.snapshot.policy().max_tool_calls, NonZeroU32::new(2));
    assert_eq!(stored.snapshot.tool_calls_made(), 2);
    let events = store.read_events(&child, 0, None).await.unwrap();
    let started = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ToolStarted { .. }))
        .count();
    assert_eq!(started, 2, "the child stopped at the parent's remainder");
    let Some(RunOutcome::Response { termination, .. }) = stored.snapshot.outcome() else {
        panic!("{:?}", stored.snapshot.outcome());
    };
    assert_eq!(
        termination.as_ref().map(|t| t.reason),
        Some(TerminationReason::ToolCap)
    );
    // The child replays identically with its agent: the replay clips the
    // agent's cap as the parent's budget did.
    let mut recording = Recording::from_events(&child, &events).unwrap();
    recording.restore_run(&stored);
    let specialist = rt.agent("specialist").unwrap();
    let report = replay::replay(specialist, &recording).await.unwrap();
    assert_eq!(report.verdict, Verdict::Identical);
}

#[tokio::test]
async fn a_child_s_own_smaller_cap_stands() {
    let store = Arc::new(MemoryStore::new());
    let rt = runtime(&store, (50, 1), vec![add(); 5], None, 1 << 20);
    let (_, child) = run(&store, &rt).await;
    let stored = store.load_run(&child).await.unwrap().unwrap();
    assert_eq!(stored.snapshot.policy().max_tool_calls, NonZeroU32::new(1));
    assert_eq!(stored.snapshot.tool_calls_made(), 1);
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
    })
}

#[tokio::test]
async fn a_final_tool_result_is_checked_against_the_tool_s_schema() {
    let store = Arc::new(MemoryStore::new());
    let valid = vec![final_result(json!({"sum": 3}))];
    let rt = runtime(&store, (5, 5), valid, Some(schema()), 1 << 20);
    let (output, _) = run(&store, &rt).await;
    assert_eq!(output.result, ToolResultBody::Json(json!({"sum": 3})));

    let store = Arc::new(MemoryStore::new());
    let invalid = vec![final_result(json!({"sum": "three"}))];
    let rt = runtime(&store, (5, 5), invalid, Some(schema()), 1 << 20);
    let (output, child) = run(&store, &rt).await;
    let ToolResultBody::Error(e) = &output.result else {
        panic!("{:?}", output.result);
    };
    assert_eq!(e.code, INVALID_RESULT);
    assert!(e.message.contains("/sum"), "{}", e.message);
    // The child itself completed: the contract is the parent tool's.
    let stored = store.load_run(&child).await.unwrap().unwrap();
    assert!(matches!(
        stored.snapshot.outcome(),
        Some(RunOutcome::ToolResult { .. })
    ));
}

#[tokio::test]
async fn a_final_tool_result_over_the_payload_budget_is_omitted_like_any_result() {
    let store = Arc::new(MemoryStore::new());
    let big = vec![final_result(json!({"sum": 3, "notes": "x".repeat(4096)}))];
    let rt = runtime(&store, (5, 5), big, Some(schema()), 1024);
    let (output, _) = run(&store, &rt).await;
    assert!(
        matches!(
            output.result,
            ToolResultBody::Omitted(Omission::TooLarge { limit: 1024, .. })
        ),
        "{:?}",
        output.result
    );
}
