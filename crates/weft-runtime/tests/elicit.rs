//! Elicitations through the runtime: a tool asks mid-call, the run shows the
//! question, a process that does not drive the run answers it through the
//! store (checked there against the stored question), and recovery
//! withdraws it before the (idempotent) call runs and asks again.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::elicitation::{ElicitationAction, ElicitationRequest};
use weft_core::event::EventKind;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::RunOutcome;
use weft_core::store::RunStore;
use weft_core::tool::{ToolAnnotations, ToolError, ToolRequest, ToolResultBody, ToolSpec};
use weft_runtime::{
    Agent, EventStream, MemoryStore, Runtime, RuntimeError, ScriptedPlanner, StartRequest,
};
use weft_tools::{ElicitationHandler, ElicitationSupport, ToolFailure, ToolReply, ToolSet};

/// `q.ask`: asks for a name and answers with what came back.
struct Asking;

#[async_trait]
impl ToolSet for Asking {
    fn name(&self) -> &str {
        "q"
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(vec![ToolSpec {
            name: "q.ask".into(),
            description: "Asks a name".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: ToolAnnotations {
                idempotent: true,
                ..ToolAnnotations::default()
            },
            tags: vec![],
        }])
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}},
                            "required": ["name"]});
        let asked = ElicitationRequest::form("name?", schema);
        match request.elicit.elicit(asked).await {
            Ok(r) => Ok(ToolReply::json(
                json!({"action": r.action, "content": r.content}),
            )),
            Err(e) => Err(ToolError::new(ToolError::UNAVAILABLE, e.to_string()).into()),
        }
    }

    fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
        Some(self)
    }
}

/// Only a toolset that says it can ask gets an attached elicitor.
impl ElicitationSupport for Asking {
    fn set_elicitation_handler(&self, _handler: Option<Arc<dyn ElicitationHandler>>) {}
}

fn runtime(store: Arc<MemoryStore>) -> Runtime {
    let planner = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("q.ask", json!({}))]),
        PlanResult::final_text("done"),
    ]);
    let agent = Agent::builder("a", Arc::new(planner))
        .toolset(Arc::new(Asking))
        .build();
    Runtime::builder().agent(agent).store(store).build()
}

/// The id of the next elicitation the events announce.
async fn next_question(events: &mut EventStream) -> AwaitItemId {
    loop {
        let e = events.next().await.unwrap().unwrap();
        if let EventKind::AwaitRequested { items } = e.kind
            && let [AwaitItem::Elicitation(q)] = items.as_slice()
        {
            return q.id.clone();
        }
    }
}

fn answer(action: ElicitationAction, content: Option<Value>) -> AwaitAnswer {
    AwaitAnswer::Elicitation { action, content }
}

#[tokio::test]
async fn recovery_withdraws_a_question_and_the_idempotent_call_asks_again() {
    let store = Arc::new(MemoryStore::new());
    let first = runtime(store.clone());
    let handle = first.start("a", StartRequest::user("go")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    let asked = next_question(&mut events).await;
    let stored = store.load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(stored.snapshot.elicitations()[0].id, asked);

    // A second process cannot take the run over while the first holds it.
    let second = runtime(store.clone());
    let held = second.recover(handle.run_id()).await;
    assert!(
        matches!(held, Err(RuntimeError::DrivenElsewhere(_))),
        "{held:?}"
    );
    // The first one dies; recovery withdraws the question, the idempotent
    // call runs again and asks anew.
    first.shutdown().await;
    assert!(second.recover(handle.run_id()).await.unwrap());
    let mut events = second.subscribe(handle.run_id(), 0).await.unwrap();
    let mut withdrawn = None;
    let again = loop {
        let e = events.next().await.unwrap().unwrap();
        match e.kind {
            EventKind::AwaitWithdrawn { item_id } => withdrawn = Some(item_id),
            EventKind::AwaitRequested { items } if withdrawn.is_some() => {
                break items[0].id().clone();
            }
            _ => {}
        }
    };
    assert_eq!(withdrawn.as_ref(), Some(&asked));
    assert_ne!(again, asked);
    // A bad answer is rejected and the question stays.
    let bad = second
        .answer(
            handle.run_id(),
            &again,
            answer(ElicitationAction::Accept, Some(json!({}))),
        )
        .await;
    assert!(matches!(bad, Err(RuntimeError::Protocol(_))), "{bad:?}");
    second
        .answer(
            handle.run_id(),
            &again,
            answer(ElicitationAction::Accept, Some(json!({"name": "Ada"}))),
        )
        .await
        .unwrap();
    let outcome = second.outcome(handle.run_id()).await.unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    let stored = store.load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(
        stored.snapshot.tool_outputs()[0].result,
        ToolResultBody::Json(json!({"action": "accept", "content": {"name": "Ada"}}))
    );
}

#[tokio::test]
async fn a_question_is_answered_from_a_process_that_does_not_drive_the_run() {
    let store = Arc::new(MemoryStore::new());
    let first = runtime(store.clone());
    let second = runtime(store.clone());
    let handle = first.start("a", StartRequest::user("go")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    let asked = next_question(&mut events).await;

    // Checked against the stored question before it travels.
    let bad = second
        .answer(
            handle.run_id(),
            &asked,
            answer(ElicitationAction::Accept, Some(json!({}))),
        )
        .await;
    assert!(matches!(bad, Err(RuntimeError::Protocol(_))), "{bad:?}");
    let unknown = second
        .answer(
            handle.run_id(),
            &AwaitItemId::new("nope"),
            answer(ElicitationAction::Cancel, None),
        )
        .await;
    assert!(unknown.is_err(), "{unknown:?}");

    let progress = second
        .answer(
            handle.run_id(),
            &asked,
            answer(ElicitationAction::Accept, Some(json!({"name": "Ada"}))),
        )
        .await
        .unwrap();
    assert_eq!(progress, weft_core::run::AwaitProgress::Satisfied);
    // A second answer to the same question is refused while the first waits
    // or once it is taken.
    let again = second
        .answer(
            handle.run_id(),
            &asked,
            answer(ElicitationAction::Cancel, None),
        )
        .await;
    assert!(again.is_err(), "{again:?}");

    // The first process hands it to its tool; the run finishes there.
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), handle.outcome())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    let stored = store.load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(
        stored.snapshot.tool_outputs()[0].result,
        ToolResultBody::Json(json!({"action": "accept", "content": {"name": "Ada"}}))
    );
    // The answer is in the run's log as if given to the driver.
    let log = store.read_events(handle.run_id(), 0, None).await.unwrap();
    assert!(
        log.iter().any(
            |e| matches!(&e.kind, EventKind::AwaitSatisfied { item_id, .. } if item_id == &asked)
        ),
        "no answer event"
    );
}
