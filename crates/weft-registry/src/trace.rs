//! W3C trace context across the registry: the executor puts the current
//! span's context (the runtime's `execute_tool` span) in a call's
//! `traceparent` and `tracestate`, and the provider continues it on its own
//! `execute_tool` span, so one trace spans both processes.
//!
//! Context moves through the process's OpenTelemetry text-map propagator
//! (the `weft` binary installs W3C trace context). A call made outside any
//! exported span still carries a fresh random `traceparent`, as loom-mcp's
//! callers send one with every call.

use std::collections::HashMap;

use opentelemetry::propagation::{Extractor, Injector};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The (`traceparent`, `tracestate`) a call made now carries.
pub(crate) fn outgoing() -> (String, String) {
    let span = Span::current();
    if !span.is_disabled() {
        let cx = span.context();
        let mut fields = Fields::default();
        opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut fields));
        if let Some(parent) = fields.traceparent {
            return (parent, fields.tracestate.unwrap_or_default());
        }
    }
    (new_traceparent(), String::new())
}

/// The provider's span of one call to `tool`, continuing the caller's trace.
pub(crate) fn provider_span(
    tool: &str,
    tool_use_id: &str,
    traceparent: &str,
    tracestate: &str,
) -> Span {
    let span = tracing::info_span!(
        target: "gen_ai",
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "server",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        weft.registry.tool_use_id = tool_use_id,
    );
    if !span.is_disabled() && !traceparent.is_empty() {
        let mut headers = HashMap::with_capacity(2);
        headers.insert("traceparent", traceparent);
        if !tracestate.is_empty() {
            headers.insert("tracestate", tracestate);
        }
        let cx = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Headers(&headers)));
        // Only fails when no trace layer sees the span: nothing to continue then.
        let _ = span.set_parent(cx);
    }
    span
}

/// A fresh W3C `traceparent`: random trace and span ids, sampled.
pub(crate) fn new_traceparent() -> String {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    let span = uuid::Uuid::new_v4().simple().to_string();
    format!("00-{trace}-{}-01", &span[..16])
}

#[derive(Default)]
struct Fields {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        match key {
            "traceparent" => self.traceparent = Some(value),
            "tracestate" if !value.is_empty() => self.tracestate = Some(value),
            _ => {}
        }
    }
}

struct Headers<'a>(&'a HashMap<&'a str, &'a str>);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).copied()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().copied().collect()
    }
}
