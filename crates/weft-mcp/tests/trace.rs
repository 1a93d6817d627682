//! W3C trace context on MCP calls, against the in-repo test server over
//! stdio: a call made inside an exported span carries that span's
//! `traceparent` in its request `_meta`; one made outside carries none.

mod common;

use common::{request, stdio_config, text};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::json;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;
use weft_mcp::McpToolSet;
use weft_tools::ToolSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_carries_the_current_span_in_its_meta() {
    let traces = SdkTracerProvider::builder()
        .with_simple_exporter(InMemorySpanExporter::default())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(traces.tracer("test")));
    tracing::subscriber::set_global_default(subscriber).unwrap();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let set = McpToolSet::new(stdio_config("t", &[]));
    let outside = set
        .call_tool(request("t.traceparent", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&outside), "", "no span, no _meta");

    let span = tracing::info_span!(target: "gen_ai", "execute_tool");
    let cx = span.context().span().span_context().clone();
    let inside = set
        .call_tool(request("t.traceparent", json!({})))
        .instrument(span)
        .await
        .unwrap();
    assert_eq!(
        text(&inside),
        format!("00-{}-{}-01", cx.trace_id(), cx.span_id())
    );
}
