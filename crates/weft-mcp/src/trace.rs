//! W3C trace context on MCP calls: a `tools/call` carries the current span's
//! `traceparent` (and `tracestate`) in its request `_meta`, the keys MCP
//! reserves for them, so a server that traces continues the caller's trace.
//!
//! Context goes out through the process's OpenTelemetry text-map
//! propagator; with no exported span, no `_meta` is added.

use opentelemetry::propagation::Injector;
use rmcp::model::{MetaObject, RequestMetaObject};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The `_meta` of a call made now, when there is a trace to continue.
pub(crate) fn request_meta() -> Option<RequestMetaObject> {
    let span = Span::current();
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let mut meta = Meta::default();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut meta));
    meta.found.then(|| meta.object.into())
}

#[derive(Default)]
struct Meta {
    object: MetaObject,
    found: bool,
}

impl Injector for Meta {
    fn set(&mut self, key: &str, value: String) {
        match key {
            "traceparent" => {
                self.object.set_traceparent(value);
                self.found = true;
            }
            "tracestate" if !value.is_empty() => self.object.set_tracestate(value),
            _ => {}
        }
    }
}
