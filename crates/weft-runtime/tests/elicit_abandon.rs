//! A tool that stops waiting for its question (what it asked for happened
//! another way, as when an OAuth authorization completes in the browser)
//! withdraws the question: the run shows it no longer, an answer to it is
//! refused, and the call goes on to its result.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Notify;
use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::elicitation::{ElicitationAction, ElicitationMode, ElicitationRequest};
use weft_core::event::EventKind;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::RunOutcome;
use weft_core::store::RunStore;
use weft_core::tool::{ToolError, ToolRequest, ToolResultBody, ToolSpec};
use weft_runtime::{Agent, MemoryStore, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::{ElicitationHandler, ElicitationSupport, ToolFailure, ToolReply, ToolSet};

/// `u.open`: shows a URL and waits for the human, or for `done`, whichever comes first.
struct OpenUrl {
    done: Arc<Notify>,
}

#[async_trait]
impl ToolSet for OpenUrl {
    fn name(&self) -> &str {
        "u"
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(vec![ToolSpec {
            name: "u.open".into(),
            description: "Waits for a URL to be visited".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            tags: vec![],
        }])
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let asked = ElicitationRequest::url("sign in", "https://auth.example/authorize", "");
        tokio::select! {
            answer = request.elicit.elicit(asked) => Ok(ToolReply::json(json!({
                "answered": answer.map(|r| r.action.to_string()).unwrap_or_else(|e| e.to_string())
            }))),
            () = self.done.notified() => Ok(ToolReply::json(json!({"answered": "elsewhere"}))),
        }
    }

    fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
        Some(self)
    }
}

impl ElicitationSupport for OpenUrl {
    fn set_elicitation_handler(&self, _handler: Option<Arc<dyn ElicitationHandler>>) {}
}

#[tokio::test]
async fn a_question_its_tool_stopped_waiting_for_is_withdrawn() {
    let store = Arc::new(MemoryStore::new());
    let done = Arc::new(Notify::new());
    let planner = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("u.open", json!({}))]),
        PlanResult::final_text("signed in"),
    ]);
    let agent = Agent::builder("a", Arc::new(planner))
        .toolset(Arc::new(OpenUrl { done: done.clone() }))
        .build();
    let runtime = Runtime::builder().agent(agent).store(store.clone()).build();
    let handle = runtime.start("a", StartRequest::user("go")).await.unwrap();
    let mut events = handle.events().await.unwrap();
    let asked = loop {
        let e = events.next().await.unwrap().unwrap();
        if let EventKind::AwaitRequested { items } = e.kind
            && let [AwaitItem::Elicitation(q)] = items.as_slice()
        {
            assert!(matches!(q.mode, ElicitationMode::Url { .. }), "{q:?}");
            break q.id.clone();
        }
    };

    // The browser finished: the tool stops waiting, and its question goes.
    done.notify_one();
    let withdrawn = loop {
        let e = events.next().await.unwrap().unwrap();
        match e.kind {
            EventKind::AwaitWithdrawn { item_id } => break item_id,
            EventKind::ToolFinished { .. } => panic!("the call finished before its question went"),
            _ => {}
        }
    };
    assert_eq!(withdrawn, asked);
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle.outcome())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    let stored = store.load_run(handle.run_id()).await.unwrap().unwrap();
    assert!(stored.snapshot.elicitations().is_empty());
    assert_eq!(
        stored.snapshot.tool_outputs()[0].result,
        ToolResultBody::Json(json!({"answered": "elsewhere"}))
    );
    // An answer that comes late is refused: nothing waits for it.
    let late = runtime
        .answer(
            handle.run_id(),
            &asked,
            AwaitAnswer::Elicitation {
                action: ElicitationAction::Accept,
                content: None,
            },
        )
        .await;
    assert!(late.is_err(), "{late:?}");
    let log = store.read_events(handle.run_id(), 0, None).await.unwrap();
    let withdrawals = log
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::AwaitWithdrawn { item_id } if item_id == &asked))
        .count();
    assert_eq!(withdrawals, 1);
}
