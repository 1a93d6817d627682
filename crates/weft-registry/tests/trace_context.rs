//! W3C trace context through the registry against the real Redis: a call
//! made inside a span carries that span's context in its `traceparent`,
//! and the provider's `execute_tool` span continues the same trace as its
//! child, across the Redis stream.

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use common::*;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::json;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;
use weft_core::tool::ToolResultBody;
use weft_registry::{ProviderConfig, Redis};
use weft_tools::ToolSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_continues_the_callers_trace() {
    let exporter = InMemorySpanExporter::default();
    let traces = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(traces.tracer("test")));
    tracing::subscriber::set_global_default(subscriber).unwrap();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let toolset = unique("traced");
    let (executor, serving) = serve_and_connect(
        &redis,
        &gw,
        &toolset,
        toolset_arc(&toolset),
        ProviderConfig::default(),
    )
    .await;

    let caller = tracing::info_span!(target: "gen_ai", "execute_tool");
    let caller_cx = caller.context().span().span_context().clone();
    assert!(caller_cx.is_valid());
    let (req, _) = request(
        &format!("{toolset}.add"),
        json!({"a": 2, "b": 3}),
        &unique("run"),
        "call_1",
    );
    let reply = executor.call_tool(req).instrument(caller).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!(5)));
    serving.abort();

    let name = format!("execute_tool {toolset}.add");
    let mut found = None;
    for _ in 0..100 {
        traces.force_flush().unwrap();
        let spans = exporter.get_finished_spans().unwrap();
        found = spans.into_iter().find(|s| s.name == name);
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let served = found.unwrap_or_else(|| panic!("no `{name}` span from the provider"));
    assert_eq!(served.span_context.trace_id(), caller_cx.trace_id());
    assert_eq!(served.parent_span_id, caller_cx.span_id());
    assert!(
        served.parent_span_is_remote,
        "the parent came over the wire"
    );
}

fn toolset_arc(name: &str) -> Arc<dyn ToolSet> {
    toolset(name, Arc::new(AtomicUsize::new(0)))
}
