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

use std::sync::LazyLock;

use tracing::Span;
use weft_core::awaiting::AwaitItem;
use weft_core::run::ToolCall;
use weft_core::tool::{ToolOutput, ToolResultBody};
use weft_core::{AgentId, RunId, SessionId};

use super::DriveEnd;

/// The tracing target of the GenAI spans and their events.
pub const TARGET: &str = "gen_ai";

/// The variable that opts message content (prompts, answers, tool
/// arguments and results) into span attributes, as OpenTelemetry's GenAI
/// instrumentations read it.
pub const CAPTURE_CONTENT_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

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

/// An event on the current `invoke_agent` span: the run waits for a human.
pub(super) fn awaiting(items: &[AwaitItem]) {
    tracing::event!(
        target: TARGET,
        tracing::Level::INFO,
        weft.await.items = items.len(),
        weft.await.kinds = %format_args!("{}", Kinds(items)),
        "weft.await"
    );
}

/// An event on the current `invoke_agent` span: a running tool asks a human.
pub(super) fn eliciting(tool_call_id: &weft_core::ToolCallId) {
    tracing::event!(
        target: TARGET,
        tracing::Level::INFO,
        gen_ai.tool.call.id = %tool_call_id,
        "weft.elicitation"
    );
}

/// An event on the current `invoke_agent` span: a human paused the run.
pub(super) fn paused() {
    tracing::info!(target: TARGET, "weft.pause");
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
