//! The driver's GenAI spans as an OpenTelemetry exporter sees them
//! (through tracing-opentelemetry, set up as the `weft` binary sets it up):
//! `invoke_agent` around the driver task, `execute_tool` per call as its
//! child, a wait on a human as a `weft.await` event of the `invoke_agent`
//! span (an integer count, no bridge attributes), and the task that goes on
//! after the answer in the same trace, a child of the first task's span.

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::Value as OtelValue;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Clarification};
use weft_core::event::EventKind;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_runtime::{Agent, GENAI_TARGET, RUN_TRACE_KEY, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::FnToolSet;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Installs the trace layer as the binary does; returns what it exports.
fn traces() -> InMemorySpanExporter {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("test"))
        .with_target(false)
        .with_location(false)
        .with_threads(false)
        .with_level(false)
        .with_tracked_inactivity(false)
        .with_filter(filter_fn(|m| m.is_span() && m.target() == GENAI_TARGET));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();
    exporter
}

/// Waits until the exporter has `n` spans named `name`; all it has then.
async fn wait_for(exporter: &InMemorySpanExporter, name: &str, n: usize) -> Vec<SpanData> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let spans = exporter.get_finished_spans().unwrap();
        if spans.iter().filter(|s| s.name == name).count() >= n {
            return spans;
        }
        assert!(Instant::now() < deadline, "{spans:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn attr<'a>(attributes: &'a [opentelemetry::KeyValue], key: &str) -> Option<&'a OtelValue> {
    attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_and_awaits_show_in_the_agent_span_and_the_run_is_one_trace() {
    let exporter = traces();
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
        PlanResult::final_text("done"),
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
    let spans = wait_for(&exporter, "invoke_agent adder", 1).await;
    let asked = spans
        .iter()
        .find(|s| s.name == "invoke_agent adder")
        .unwrap();
    assert_eq!(asked.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    assert_eq!(asked.span_kind, SpanKind::Internal);
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool t.add")
        .expect("the tool span");
    assert_eq!(tool.parent_span_id, asked.span_context.span_id());
    let waits: Vec<_> = asked
        .events
        .iter()
        .filter(|e| e.name == "weft.await")
        .collect();
    assert_eq!(waits.len(), 1, "{:?}", asked.events);
    assert_eq!(
        attr(&waits[0].attributes, "weft.await.items"),
        Some(&OtelValue::I64(1))
    );
    assert_eq!(
        attr(&waits[0].attributes, "weft.await.kinds"),
        Some(&OtelValue::from("Clarification"))
    );
    for s in &spans {
        for kv in s
            .attributes
            .iter()
            .chain(s.events.iter().flat_map(|e| &e.attributes))
        {
            let key = kv.key.as_str();
            assert!(
                !["target", "level", "busy_ns", "idle_ns"].contains(&key)
                    && !key.starts_with("code.")
                    && !key.starts_with("thread."),
                "{} has {key}",
                s.name
            );
        }
    }

    // The run keeps its first span's context; the task that goes on after
    // the answer is its child, in its trace.
    let stored = runtime
        .store()
        .load_run(run.run_id())
        .await
        .unwrap()
        .unwrap();
    let kept = stored.snapshot.state()[RUN_TRACE_KEY]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        kept,
        format!(
            "00-{}-{}-01",
            asked.span_context.trace_id(),
            asked.span_context.span_id()
        )
    );
    let answer = AwaitAnswer::Clarification {
        text: "3 and 4".into(),
    };
    runtime
        .answer(run.run_id(), &AwaitItemId::new("which"), answer)
        .await
        .unwrap();
    run.outcome().await.unwrap();
    let spans = wait_for(&exporter, "invoke_agent adder", 2).await;
    let finished = spans
        .iter()
        .find(|s| s.name == "invoke_agent adder" && s.span_context != asked.span_context)
        .unwrap();
    assert_eq!(
        finished.span_context.trace_id(),
        asked.span_context.trace_id()
    );
    assert_eq!(finished.parent_span_id, asked.span_context.span_id());
    assert!(finished.events.iter().all(|e| e.name != "weft.await"));
}
