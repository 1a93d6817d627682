//! Agents called as tools: a coordinator's call starts a child run of a
//! specialist, linked to the parent, whose answer becomes the call's result;
//! a child's question is asked through the parent; cancelling the parent
//! cancels the child; a crash mid-child resumes both, the child once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Clarification};
use weft_core::elicitation::ElicitationAction;
use weft_core::event::{EventKind, RunEvent};
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::{RunOutcome, RunProjection};
use weft_core::store::{RunFilter, RunStatus, RunStore};
use weft_core::tool::ToolResultBody;
use weft_core::{AwaitItemId, RunId};
use weft_runtime::{
    Agent, AgentToolSet, EventStream, MemoryStore, Runtime, ScriptedPlanner, StartRequest,
};
use weft_tools::FnToolSet;

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

fn ask_specialist(input: &str) -> PlanResult {
    PlanResult::tool_calls(vec![ToolCallRequest::new(
        "agents.specialist",
        json!({ "input": input }),
    )])
}

fn clarification(question: &str) -> PlanResult {
    PlanResult::await_items(vec![AwaitItem::Clarification(Clarification {
        id: AwaitItemId::new("which"),
        question: question.into(),
        missing_fields: vec![],
        restrict_to_tool: None,
        example_input: None,
        clarifying_prompt: None,
    })])
}

/// A runtime ("process") on `store` with a coordinator whose only tool is
/// the specialist, which plays `specialist` and may sleep through `t.sleep`.
fn process(
    store: &Arc<MemoryStore>,
    specialist: Vec<PlanResult>,
    sleeps: &Arc<AtomicUsize>,
) -> Runtime {
    let coordinator = Agent::builder(
        "coordinator",
        Arc::new(
            ScriptedPlanner::new(vec![ask_specialist("What is 6 * 7?")])
                .with_finalize("the specialist says so"),
        ),
    )
    .toolset(Arc::new(
        AgentToolSet::new("agents").agent("specialist", "Answers arithmetic"),
    ))
    .build();
    let sleeps = sleeps.clone();
    let specialist = Agent::builder(
        "specialist",
        Arc::new(ScriptedPlanner::new(specialist).with_finalize("42")),
    )
    .toolset(Arc::new(FnToolSet::new("t").tool(
        "sleep",
        "Sleeps",
        move |args: SleepArgs| {
            let sleeps = sleeps.clone();
            async move {
                sleeps.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(args.ms)).await;
                Ok::<_, weft_core::tool::ToolError>("slept")
            }
        },
    )))
    .build();
    Runtime::builder()
        .agent(coordinator)
        .agent(specialist)
        .store(store.clone())
        .lease_ttl(Duration::from_millis(300))
        .build()
}

async fn log(store: &MemoryStore, run: &RunId) -> Vec<RunEvent> {
    store.read_events(run, 0, None).await.unwrap()
}

async fn children_of(store: &MemoryStore, parent: &RunId) -> Vec<RunId> {
    let mut filter = RunFilter::default();
    filter
        .labels
        .insert("weft.parent_run".into(), parent.to_string());
    store
        .list_runs(&filter)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.run_id)
        .collect()
}

async fn next_matching(events: &mut EventStream, f: impl Fn(&EventKind) -> bool) -> EventKind {
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("no event within 10 s")
            .unwrap()
            .unwrap();
        if f(&e.kind) {
            return e.kind;
        }
    }
}

#[tokio::test]
async fn the_child_s_answer_is_the_call_s_result_and_the_runs_are_linked() {
    let store = Arc::new(MemoryStore::new());
    let sleeps = Arc::new(AtomicUsize::new(0));
    let rt = process(&store, vec![], &sleeps);
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
    let output = &stored.snapshot.tool_outputs()[0];
    assert_eq!(output.result, ToolResultBody::Json(json!({"text": "42"})));
    let child = RunId::new(format!("{}.{}", parent.run_id(), output.tool_call_id));
    assert_eq!(
        output.server_data.as_deref(),
        Some(&json!({"child_run_id": child.as_str()}))
    );
    // The child is a run of its own, linked both ways.
    let child_run = store.load_run(&child).await.unwrap().unwrap();
    assert_eq!(child_run.record.agent_id.as_str(), "specialist");
    assert_eq!(child_run.record.status, RunStatus::Completed);
    assert_eq!(
        children_of(&store, parent.run_id()).await,
        std::slice::from_ref(&child)
    );
    let events = log(&store, parent.run_id()).await;
    let projection = RunProjection::of(events.iter().map(|e| &e.kind));
    assert_eq!(
        projection.children,
        [(output.tool_call_id.clone(), child.clone())]
    );
    // The parent's machine recorded the link, committed before any of the
    // child's events showed.
    let linked = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::ChildRunLinked { child_run_id, .. } if child_run_id == &child))
        .expect("the link is in the parent's log");
    let first_shown = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::ChildEvent { .. }))
        .expect("the child's events show");
    assert!(linked < first_shown, "{events:?}");
    // The child's events show in the parent's log, marked with its id.
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::ChildEvent { child_run_id, event, .. }
            if child_run_id == &child && matches!(**event, EventKind::RunFinished { .. })
    )));
}

#[tokio::test]
async fn a_child_s_question_is_asked_through_its_parent_and_the_answer_reaches_it() {
    let store = Arc::new(MemoryStore::new());
    let sleeps = Arc::new(AtomicUsize::new(0));
    let rt = process(&store, vec![clarification("Which base?")], &sleeps);
    let parent = rt
        .start("coordinator", StartRequest::user("go"))
        .await
        .unwrap();
    let mut events = parent.events().await.unwrap();
    // The parent's running call asks the child's question.
    let asked = next_matching(&mut events, |k| {
        matches!(k, EventKind::AwaitRequested { items } if matches!(items.as_slice(), [AwaitItem::Elicitation(_)]))
    })
    .await;
    let EventKind::AwaitRequested { items } = asked else {
        unreachable!()
    };
    let AwaitItem::Elicitation(question) = &items[0] else {
        unreachable!()
    };
    assert_eq!(question.message, "Which base?");
    rt.answer(
        parent.run_id(),
        &question.id,
        AwaitAnswer::Elicitation {
            action: ElicitationAction::Accept,
            content: Some(json!({"answer": "decimal"})),
        },
    )
    .await
    .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), parent.outcome())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    let child = children_of(&store, parent.run_id()).await.remove(0);
    let answered = log(&store, &child).await.into_iter().any(|e| {
        e.kind
            == EventKind::AwaitSatisfied {
                item_id: AwaitItemId::new("which"),
                answer: AwaitAnswer::Clarification {
                    text: "decimal".into(),
                },
            }
    });
    assert!(answered, "the child got the answer");
}

#[tokio::test]
async fn cancelling_the_parent_cancels_its_child() {
    let store = Arc::new(MemoryStore::new());
    let sleeps = Arc::new(AtomicUsize::new(0));
    let long = PlanResult::tool_calls(vec![ToolCallRequest::new("t.sleep", json!({"ms": 30_000}))]);
    let rt = process(&store, vec![long], &sleeps);
    let parent = rt
        .start("coordinator", StartRequest::user("go"))
        .await
        .unwrap();
    let mut events = parent.events().await.unwrap();
    next_matching(&mut events, |k| {
        matches!(k, EventKind::ChildEvent { event, .. } if matches!(**event, EventKind::ToolStarted { .. }))
    })
    .await;
    rt.cancel(parent.run_id(), "enough").await.unwrap();
    let outcome = parent.outcome().await.unwrap();
    assert!(
        matches!(outcome, RunOutcome::Cancelled { .. }),
        "{outcome:?}"
    );
    let child = children_of(&store, parent.run_id()).await.remove(0);
    let child_outcome = tokio::time::timeout(Duration::from_secs(5), rt.outcome(&child))
        .await
        .expect("the child is cancelled within 5 s")
        .unwrap();
    assert!(
        matches!(child_outcome, RunOutcome::Cancelled { .. }),
        "{child_outcome:?}"
    );
}

#[tokio::test]
async fn a_crash_mid_child_resumes_parent_and_child_without_a_second_child() {
    let store = Arc::new(MemoryStore::new());
    let sleeps = Arc::new(AtomicUsize::new(0));
    let nap = PlanResult::tool_calls(vec![ToolCallRequest::new("t.sleep", json!({"ms": 600}))]);
    let first = process(&store, vec![nap.clone()], &sleeps);
    let parent = first
        .start("coordinator", StartRequest::user("go"))
        .await
        .unwrap();
    let mut events = parent.events().await.unwrap();
    next_matching(&mut events, |k| {
        matches!(k, EventKind::ChildEvent { event, .. } if matches!(**event, EventKind::ToolStarted { .. }))
    })
    .await;
    // The first process dies with parent and child in flight.
    first.shutdown().await;
    let second = process(&store, vec![nap], &sleeps);
    assert!(second.recover(parent.run_id()).await.unwrap());
    let outcome = tokio::time::timeout(Duration::from_secs(10), second.outcome(parent.run_id()))
        .await
        .expect("the parent finishes within 10 s")
        .unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    let children = children_of(&store, parent.run_id()).await;
    assert_eq!(children.len(), 1, "{children:?}");
    let child_log = log(&store, &children[0]).await;
    let starts = child_log
        .iter()
        .filter(|e| matches!(e.kind, EventKind::RunStarted { .. }))
        .count();
    assert_eq!(starts, 1, "the child started once");
    assert!(matches!(
        child_log.last().map(|e| &e.kind),
        Some(EventKind::RunFinished {
            outcome: RunOutcome::Response { .. }
        })
    ));
    let stored = store.load_run(parent.run_id()).await.unwrap().unwrap();
    assert_eq!(
        stored.snapshot.tool_outputs()[0].result,
        ToolResultBody::Json(json!({"text": "42"}))
    );
}
