//! The driver's GenAI spans as a subscriber sees them: `invoke_agent`
//! around the driver task, `execute_tool` per call as its child, and a wait
//! on a human as a `weft.await` event of the `invoke_agent` span.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitItem, Clarification};
use weft_core::event::EventKind;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_runtime::{Agent, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::FnToolSet;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// What the subscriber saw of the `gen_ai` target, one line each.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

#[derive(Default)]
struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Seen {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().target() != weft_runtime::GENAI_TARGET {
            return;
        }
        let parent = ctx
            .span(id)
            .and_then(|s| {
                s.scope()
                    .skip(1)
                    .find(|p| p.metadata().target() == "gen_ai")
            })
            .map_or("none", |p| p.name());
        let line = format!("span {} in {parent}", attrs.metadata().name());
        self.0.lock().unwrap().push(line);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target() != weft_runtime::GENAI_TARGET {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let span = ctx.event_span(event).map_or("none", |s| s.name());
        let line = format!("event in {span}: {}", fields.0.join(" "));
        self.0.lock().unwrap().push(line);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_and_awaits_show_in_the_agent_span() {
    let seen = Seen::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(seen.clone()))
        .unwrap();
    let planner = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new("t.add", json!({"a": 2, "b": 3}))]),
        PlanResult::await_items(vec![AwaitItem::Clarification(Clarification {
            id: AwaitItemId::new("which"),
            question: "Which numbers next?".into(),
            missing_fields: vec![],
            restrict_to_tool: None,
            example_input: None,
            clarifying_prompt: None,
        })]),
    ]);
    let tools = FnToolSet::new("t").tool("add", "Adds", |x: AddArgs| async move {
        Ok::<_, weft_core::tool::ToolError>(x.a + x.b)
    });
    let agent = Agent::builder("adder", Arc::new(planner))
        .toolset(Arc::new(tools))
        .build();
    let runtime = Runtime::builder().agent(agent).build();
    let run = runtime
        .start("adder", StartRequest::user("add"))
        .await
        .unwrap();
    let mut events = run.events().await.unwrap();
    while let Some(e) = events.next().await {
        if matches!(e.unwrap().kind, EventKind::AwaitRequested { .. }) {
            break;
        }
    }
    // The task ends right after the await's commit; its span closes with it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let lines = loop {
        let lines = seen.0.lock().unwrap().clone();
        if lines.iter().any(|l| l.contains("weft.await")) {
            break lines;
        }
        assert!(std::time::Instant::now() < deadline, "{lines:?}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(lines[0], "span invoke_agent in none", "{lines:?}");
    assert_eq!(lines[1], "span execute_tool in invoke_agent", "{lines:?}");
    let waited = lines.iter().find(|l| l.contains("weft.await")).unwrap();
    assert!(waited.starts_with("event in invoke_agent:"), "{waited}");
    assert!(waited.contains("weft.await.items=1"), "{waited}");
    assert!(
        waited.contains("weft.await.kinds=Clarification"),
        "{waited}"
    );
}
