//! The `chat {model}` span of one model call, named and attributed as the
//! OpenTelemetry GenAI semantic conventions say, and the W3C trace context
//! (`traceparent`, `tracestate`) of the current span on provider requests.
//!
//! The span uses the tracing target `gen_ai` (the runtime's GenAI spans
//! share it): a subscriber sends it to a trace exporter and keeps it out of
//! log lines. With no subscriber that wants it, it is disabled and nothing
//! is formatted or allocated. Prompts and answers become attributes only
//! when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
//!
//! Context goes out through the process's OpenTelemetry text-map
//! propagator (the `weft` binary installs W3C trace context); with none
//! installed, no header is added.

use std::sync::LazyLock;

use opentelemetry::propagation::Injector;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use weft_core::model::{ModelRequest, ModelSummary, StopReason};

/// The variable that opts message content into span attributes.
const CAPTURE_CONTENT_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Whether prompts and answers go into span attributes (read once).
fn capture_content() -> bool {
    static CAPTURE: LazyLock<bool> = LazyLock::new(|| {
        std::env::var(CAPTURE_CONTENT_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
    });
    *CAPTURE
}

/// The span of one call to `model_id` (`provider/model`) for `request`.
pub(crate) fn chat_span(model_id: &str, request: &ModelRequest) -> Span {
    let (provider, model) = split_model_id(model_id);
    let span = tracing::info_span!(
        target: "gen_ai",
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.request.max_tokens = request.max_tokens,
        gen_ai.request.temperature = request.temperature.map(f64::from),
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.response.finish_reasons = tracing::field::Empty,
        gen_ai.system_instructions = tracing::field::Empty,
        gen_ai.input.messages = tracing::field::Empty,
        gen_ai.output.messages = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if !span.is_disabled() && capture_content() {
        if let Some(system) = &request.system {
            span.record("gen_ai.system_instructions", system.as_str());
        }
        if let Ok(json) = serde_json::to_string(&request.messages) {
            span.record("gen_ai.input.messages", json);
        }
    }
    span
}

/// Records a finished call's usage, finish reason and (opted in) answer.
pub(crate) fn chat_ended(span: &Span, summary: &ModelSummary) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.usage.input_tokens", summary.usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", summary.usage.output_tokens);
    if let Some(reason) = &summary.stop_reason {
        span.record("gen_ai.response.finish_reasons", finish_reason(reason));
    }
    if capture_content()
        && let Ok(json) = serde_json::to_string(&serde_json::json!({
            "text": summary.text,
            "tool_calls": summary.tool_calls,
        }))
    {
        span.record("gen_ai.output.messages", json);
    }
}

/// Records a failed call: its error kind and an error status.
pub(crate) fn chat_failed(span: &Span, kind: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
}

/// Adds the current span's W3C trace context to `headers`.
pub(crate) fn inject(headers: &mut HeaderMap) {
    let span = Span::current();
    if span.is_disabled() {
        return;
    }
    let cx = span.context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&cx, &mut HeaderInjector(headers));
    });
}

struct HeaderInjector<'a>(&'a mut HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// `anthropic/claude-x` → (`anthropic`, `claude-x`); the provider names of
/// the semantic conventions where weft's prefix differs from them.
fn split_model_id(id: &str) -> (&str, &str) {
    let (prefix, model) = id.split_once('/').unwrap_or(("unknown", id));
    let provider = match prefix {
        "openai-responses" => "openai",
        other => other,
    };
    (provider, model)
}

/// The semantic conventions' finish reason for a stop reason.
fn finish_reason(reason: &StopReason) -> &str {
    match reason {
        StopReason::EndTurn | StopReason::StopSequence => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::ContentFilter => "content_filter",
        StopReason::Refusal => "refusal",
        StopReason::Other(other) => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_split_into_provider_and_model() {
        assert_eq!(
            split_model_id("anthropic/claude-x"),
            ("anthropic", "claude-x")
        );
        assert_eq!(
            split_model_id("openai-responses/gpt-4o"),
            ("openai", "gpt-4o")
        );
        assert_eq!(
            split_model_id("local/path/m.gguf"),
            ("local", "path/m.gguf")
        );
        assert_eq!(split_model_id("bare"), ("unknown", "bare"));
        assert_eq!(finish_reason(&StopReason::ToolUse), "tool_calls");
        assert_eq!(finish_reason(&StopReason::Other("x".into())), "x");
    }
}
