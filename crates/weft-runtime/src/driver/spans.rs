//! The driver's GenAI spans, named and attributed as the OpenTelemetry
//! GenAI semantic conventions say: `invoke_agent {agent}` around one driver
//! task, `execute_tool {tool}` around one tool call, and the waits on a
//! human as events of the `invoke_agent` span.
//!
//! They use the tracing target [`TARGET`] so a subscriber can send them to
//! a trace exporter and keep them out of log lines (the log spans `run` and
//! `tool` say the same for humans). With no subscriber that wants them,
//! they are disabled and cost no allocation: field values are only
//! evaluated for an enabled span. Tool arguments and results are attributes
//! only when message content is opted in ([`capture_content`]).
//!
//! The events go on the OpenTelemetry span itself (tracing-opentelemetry's
//! `add_event`), not through tracing events, which the bridge exports with
//! `level` and `target` attributes of its own; their counts are integers.
//!
//! One run, one trace: a run that waits for a human (or is paused) is
//! driven by several tasks, possibly in several processes. The first
//! task's `invoke_agent` span context is kept, as a W3C `traceparent`, in
//! the run machine's state under [`TRACE_KEY`], committed with the run's
//! snapshot; the span of every later task (an answer, a continue, a
//! recovery) is made a child of it, so all parts of the run share its
//! trace id wherever they run. Nothing is kept when no trace layer sees
//! the spans.

use std::sync::LazyLock;

use opentelemetry::trace::{SpanContext, TraceContextExt as _, TraceFlags, TraceState};
use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry::{Context, KeyValue};
use serde_json::Value;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use weft_core::awaiting::AwaitItem;
use weft_core::run::{RunMachine, ToolCall};
use weft_core::tool::{ToolOutput, ToolResultBody};
use weft_core::{AgentId, RunId, SessionId};

use super::DriveEnd;

/// The tracing target of the GenAI spans and their events.
pub const TARGET: &str = "gen_ai";

/// The variable that opts message content (prompts, answers, tool
/// arguments and results) into span attributes, as OpenTelemetry's GenAI
/// instrumentations read it.
pub const CAPTURE_CONTENT_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// The key of the run machine's state that keeps the W3C `traceparent` of
/// the run's first `invoke_agent` span; see the module docs.
pub const TRACE_KEY: &str = "weft.trace.parent";

/// Whether message content goes into span attributes (read once).
pub fn capture_content() -> bool {
    static CAPTURE: LazyLock<bool> = LazyLock::new(|| {
        std::env::var(CAPTURE_CONTENT_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
    });
    *CAPTURE
}

/// The span of one driver task of a run.
pub(super) fn invoke_agent(agent: &AgentId, run_id: &RunId, session_id: &SessionId) -> Span {
    tracing::info_span!(
        target: TARGET,
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {agent}"),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %agent,
        gen_ai.conversation.id = %session_id,
        weft.run.id = %run_id,
        weft.run.outcome = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// Makes `span` (a driver task's `invoke_agent`) part of its run's trace:
/// a child of the run's first span when `machine` names one, else that
/// first span, kept in `machine`'s state.
pub(super) fn join_run_trace(span: &Span, machine: &mut RunMachine) {
    if span.is_disabled() {
        return;
    }
    let first = machine.state().get(TRACE_KEY).and_then(Value::as_str);
    if let Some(first) = first.and_then(parse_traceparent) {
        // Only fails when no trace layer sees the span: no trace to join.
        let _ = span.set_parent(Context::new().with_remote_span_context(first));
        return;
    }
    let cx = span.context();
    let own = cx.span().span_context().clone();
    if own.is_valid() {
        let value = Value::String(traceparent(&own));
        machine.set_state(TRACE_KEY.to_owned(), value);
    }
}

/// A span context as a W3C `traceparent` (version 00).
fn traceparent(cx: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        cx.trace_id(),
        cx.span_id(),
        cx.trace_flags().to_u8()
    )
}

/// The remote span context a W3C `traceparent` names; `None` when it is
/// not one (or names no valid span).
fn parse_traceparent(value: &str) -> Option<SpanContext> {
    let mut parts = value.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || parts.next().is_some() || trace.len() != 32 || span.len() != 16 {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()?);
    let cx = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
    cx.is_valid().then_some(cx)
}

/// Records how the driver task ended on its `invoke_agent` span.
pub(super) fn drive_ended(span: &Span, end: &DriveEnd) {
    let error = match end {
        DriveEnd::Finished(outcome) => {
            span.record("weft.run.outcome", crate::observe::outcome_kind(outcome));
            crate::observe::failure_kind(outcome)
        }
        DriveEnd::Paused => {
            span.record("weft.run.outcome", "paused");
            None
        }
        DriveEnd::StoreFailed(_) => Some("store"),
        DriveEnd::LeaseLost => Some("lease_lost"),
        DriveEnd::Panicked(_) => Some("panic"),
    };
    if let Some(kind) = error {
        span.record("error.type", kind);
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of one tool call.
pub(super) fn execute_tool(call: &ToolCall) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", call.name),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if !span.is_disabled() && capture_content() {
        span.record(
            "gen_ai.tool.call.arguments",
            tracing::field::display(&call.payload),
        );
    }
    span
}

/// Records a tool call's result on its `execute_tool` span.
pub(super) fn tool_ended(span: &Span, out: &ToolOutput) {
    if span.is_disabled() {
        return;
    }
    if let ToolResultBody::Error(e) = &out.result {
        span.record("error.type", e.code.as_str());
        span.record("otel.status_code", "ERROR");
    }
    if capture_content()
        && let Ok(json) = serde_json::to_string(&out.result)
    {
        span.record("gen_ai.tool.call.result", json);
    }
}

/// An event of the task's `invoke_agent` span: the run waits for a human.
pub(super) fn awaiting(span: &Span, items: &[AwaitItem]) {
    if span.is_disabled() {
        return;
    }
    let attributes = vec![
        KeyValue::new("weft.await.items", count(items.len())),
        KeyValue::new("weft.await.kinds", Kinds(items).to_string()),
    ];
    span.add_event("weft.await", attributes);
}

/// An event of the task's `invoke_agent` span: a running tool asks a human.
pub(super) fn eliciting(span: &Span, tool_call_id: &weft_core::ToolCallId) {
    if span.is_disabled() {
        return;
    }
    let attributes = vec![KeyValue::new(
        "gen_ai.tool.call.id",
        tool_call_id.as_str().to_owned(),
    )];
    span.add_event("weft.elicitation", attributes);
}

/// An event of the task's `invoke_agent` span: a human paused the run.
pub(super) fn paused(span: &Span) {
    if !span.is_disabled() {
        span.add_event("weft.pause", Vec::new());
    }
}

/// A count as the integer attribute it is.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The await items' kinds, comma-separated.
struct Kinds<'a>(&'a [AwaitItem]);

impl std::fmt::Display for Kinds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, item) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{:?}", item.kind())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_round_trip() {
        let cx = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        );
        let text = traceparent(&cx);
        assert_eq!(
            text,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(parse_traceparent(&text), Some(cx));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-zzzzzzzzzzzzzzzz-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
    }
}
