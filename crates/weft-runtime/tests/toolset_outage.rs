//! A toolset that cannot start leaves the agent working with its other
//! tools; the model is told through a reminder, and told again when the
//! toolset is back, at which point its tools are offered again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::planner::{
    PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError, ToolCallRequest,
};
use weft_core::run::RunOutcome;
use weft_core::tool::{ToolError, ToolRequest, ToolSpec};
use weft_runtime::{Agent, Runtime, StartRequest};
use weft_tools::{FnToolSet, Lifecycle, ToolFailure, ToolReply, ToolSet};

/// A toolset whose start fails while `up` is false.
struct Flaky {
    up: Arc<AtomicBool>,
}

#[async_trait]
impl ToolSet for Flaky {
    fn name(&self) -> &str {
        "flaky"
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(vec![ToolSpec {
            name: "flaky.ping".into(),
            description: "Pings".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            tags: vec![],
        }])
    }

    async fn call_tool(&self, _request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        Ok(ToolReply::json(json!("pong")))
    }

    fn lifecycle(&self) -> Option<&dyn Lifecycle> {
        Some(self)
    }
}

#[async_trait]
impl Lifecycle for Flaky {
    async fn start(&self) -> Result<(), ToolError> {
        if self.up.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(ToolError::new("down", "the server binary is missing"))
        }
    }

    async fn stop(&self) -> Result<(), ToolError> {
        Ok(())
    }
}

#[derive(Deserialize, JsonSchema)]
struct Args {
    a: i64,
}

/// Calls `ok.id` once, then answers; records the tools and reminders it saw.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<(Vec<String>, Vec<String>)>>,
}

impl Recorder {
    fn record(&self, input: &PlanInput<'_>) {
        let tools = input.tools.iter().map(|t| t.name.to_string()).collect();
        let reminders = input.reminders.iter().map(|r| r.text.clone()).collect();
        self.seen.lock().unwrap().push((tools, reminders));
    }
}

#[async_trait]
impl Planner for Recorder {
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        self.record(&input);
        Ok(PlanResult::tool_calls(vec![ToolCallRequest::new(
            "ok.id",
            json!({"a": 1}),
        )]))
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        self.record(&input.base);
        Ok(PlanResult::final_text("done"))
    }
}

#[tokio::test]
async fn an_unavailable_toolset_is_reported_and_its_recovery_too() {
    let up = Arc::new(AtomicBool::new(false));
    let planner = Arc::new(Recorder::default());
    let ok: Arc<dyn ToolSet> = Arc::new(FnToolSet::new("ok").tool(
        "id",
        "Identity",
        |a: Args| async move { Ok::<_, ToolError>(a.a) },
    ));
    let agent = Agent::builder("a", planner.clone())
        .toolset(ok)
        .toolset(Arc::new(Flaky { up: up.clone() }))
        .build();
    let rt = Runtime::builder().agent(agent).build();

    let run = rt.start("a", StartRequest::user("hi")).await.unwrap();
    assert!(matches!(
        run.outcome().await.unwrap(),
        RunOutcome::Response { .. }
    ));
    {
        let seen = planner.seen.lock().unwrap();
        let (tools, reminders) = &seen[0];
        assert_eq!(tools, &vec!["ok.id".to_owned()]);
        assert_eq!(reminders.len(), 1, "{reminders:?}");
        assert!(
            reminders[0].contains("`flaky` are unavailable"),
            "{reminders:?}"
        );
        assert!(reminders[0].contains("missing"), "{reminders:?}");
    }

    // The toolset comes back: the next run is offered its tools again.
    up.store(true, Ordering::SeqCst);
    let run = rt.start("a", StartRequest::user("again")).await.unwrap();
    assert!(matches!(
        run.outcome().await.unwrap(),
        RunOutcome::Response { .. }
    ));
    let seen = planner.seen.lock().unwrap();
    let (tools, reminders) = seen.last().unwrap();
    assert!(tools.contains(&"flaky.ping".to_owned()), "{tools:?}");
    assert!(
        reminders.is_empty(),
        "a new run needs no note: {reminders:?}"
    );
}
