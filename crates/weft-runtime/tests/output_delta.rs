//! Live tool output: fragments a tool publishes through its request's output
//! sink become `ToolOutputDelta` events, in order, before the call's
//! `ToolFinished`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::event::{EventKind, RunEvent};
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::tool::{ToolError, ToolRequest};
use weft_runtime::{Agent, EventStream, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::FnToolSet;

#[derive(Deserialize, JsonSchema)]
struct Steps {
    n: u32,
}

async fn collect(mut events: EventStream) -> Vec<RunEvent> {
    let mut out = Vec::new();
    while let Some(e) = events.next().await {
        out.push(e.unwrap());
    }
    out
}

#[tokio::test]
async fn published_output_becomes_ordered_delta_events_before_the_result() {
    let tools = FnToolSet::new("t").tool_with_context(
        "steps",
        "Reports progress",
        |req: ToolRequest, args: Steps| async move {
            for i in 1..=args.n {
                req.output.publish("stdout", &format!("step {i}\n"));
            }
            Ok::<_, ToolError>(args.n)
        },
    );
    let planner = Arc::new(ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("t.steps", json!({"n": 3}))]),
        PlanResult::final_text("done"),
    ]));
    let agent = Agent::builder("a", planner)
        .toolset(Arc::new(tools))
        .build();
    let rt = Runtime::builder().agent(agent).build();
    let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
    let events = collect(handle.events().await.unwrap()).await;
    handle.outcome().await.unwrap();
    let deltas: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolOutputDelta { stream, delta, .. } => {
                Some((stream.clone(), delta.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        vec![
            ("stdout".to_owned(), "step 1\n".to_owned()),
            ("stdout".to_owned(), "step 2\n".to_owned()),
            ("stdout".to_owned(), "step 3\n".to_owned()),
        ]
    );
    let pos = |pred: &dyn Fn(&EventKind) -> bool| events.iter().position(|e| pred(&e.kind));
    let last_delta = events
        .iter()
        .rposition(|e| matches!(e.kind, EventKind::ToolOutputDelta { .. }))
        .unwrap();
    let finished = pos(&|k| matches!(k, EventKind::ToolFinished { .. })).unwrap();
    let started = pos(&|k| matches!(k, EventKind::ToolStarted { .. })).unwrap();
    assert!(started < last_delta && last_delta < finished);
    // The deltas are part of the stored log too.
    let stored = collect(rt.subscribe(handle.run_id(), 0).await.unwrap()).await;
    assert_eq!(stored, events);
}
