//! The `chat {model}` span of one model call, named and attributed as the
//! OpenTelemetry GenAI semantic conventions say, and the W3C trace context
//! (`traceparent`, `tracestate`) of the current span on provider requests.
//!
//! The span uses the tracing target `gen_ai` (the runtime's GenAI spans
//! share it): a subscriber sends it to a trace exporter and keeps it out of
//! log lines. With no subscriber that wants it, it is disabled and nothing
//! is formatted or allocated.
//!
//! Attributes keep the conventions' types: token counts, `max_tokens` and
//! `server.port` are integers (recorded as `i64`: tracing-opentelemetry
//! exports a `u64` field as text), `temperature` a double, and
//! `gen_ai.response.finish_reasons` an array of strings, which a tracing
//! field cannot carry: it is set on the OpenTelemetry span directly.
//! `server.address` and `server.port` are the provider endpoint's
//! ([`ModelClient::server`]). Prompts and answers become attributes only
//! when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, as JSON
//! in the conventions' message structure ([`content`]), with weft's tool
//! names.
//!
//! Context goes out through the process's OpenTelemetry text-map
//! propagator (the `weft` binary installs W3C trace context); with none
//! installed, no header is added.

mod content;

use std::sync::LazyLock;

use opentelemetry::propagation::Injector;
use opentelemetry::{Array, StringValue, Value};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use weft_core::model::{ModelClient, ModelRequest, ModelSummary, StopReason};

use crate::names::ToolNames;

/// The variable that opts message content into span attributes.
const CAPTURE_CONTENT_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Whether prompts and answers go into span attributes (read once).
fn capture_content() -> bool {
    static CAPTURE: LazyLock<bool> = LazyLock::new(|| {
        std::env::var(CAPTURE_CONTENT_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
    });
    *CAPTURE
}

/// The span of one call to `model` for `request`; `names` decodes the
/// provider tool names the request holds.
pub(crate) fn chat_span(
    model: &dyn ModelClient,
    request: &ModelRequest,
    names: &ToolNames,
) -> Span {
    let (provider, model_name) = split_model_id(model.id());
    let server = model.server();
    let span = tracing::info_span!(
        target: "gen_ai",
        "chat",
        otel.name = %format_args!("chat {model_name}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model_name,
        gen_ai.request.max_tokens = request.max_tokens.map(i64::from),
        gen_ai.request.temperature = request.temperature.map(widen),
        server.address = server.map(|(host, _)| host),
        server.port = server.map(|(_, port)| i64::from(port)),
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.system_instructions = tracing::field::Empty,
        gen_ai.input.messages = tracing::field::Empty,
        gen_ai.output.messages = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if !span.is_disabled() && capture_content() {
        if let Some(system) = &request.system {
            let json = content::system_instructions(system).to_string();
            span.record("gen_ai.system_instructions", json);
        }
        let json = content::input_messages(&request.messages, names).to_string();
        span.record("gen_ai.input.messages", json);
    }
    span
}

/// Records a finished call's usage, finish reason and (opted in) answer.
pub(crate) fn chat_ended(span: &Span, summary: &ModelSummary, names: &ToolNames) {
    if span.is_disabled() {
        return;
    }
    span.record(
        "gen_ai.usage.input_tokens",
        count(summary.usage.input_tokens),
    );
    span.record(
        "gen_ai.usage.output_tokens",
        count(summary.usage.output_tokens),
    );
    let reason = summary.stop_reason.as_ref().map(finish_reason);
    if let Some(reason) = reason {
        let reasons = Array::String(vec![StringValue::from(reason.to_owned())]);
        span.set_attribute("gen_ai.response.finish_reasons", Value::Array(reasons));
    }
    if capture_content() {
        // An output message always says why it ended; with no reason
        // reported, a turn that calls tools ended for them.
        let reason = reason.unwrap_or(if summary.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        });
        let json = content::output_messages(summary, names, reason).to_string();
        span.record("gen_ai.output.messages", json);
    }
}

/// A token count as the integer attribute it is.
fn count(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}

/// A temperature as the double it was written as (`0.2`, not the
/// `0.20000000298…` a plain `f32` to `f64` conversion gives).
fn widen(t: f32) -> f64 {
    t.to_string().parse().unwrap_or(f64::from(t))
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
        "gemini" => "gcp.gemini",
        "vertex" => "gcp.vertex_ai",
        "bedrock" => "aws.bedrock",
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
        assert_eq!(
            split_model_id("bedrock/us.anthropic.claude-sonnet-4-5-v1:0"),
            ("aws.bedrock", "us.anthropic.claude-sonnet-4-5-v1:0")
        );
        assert_eq!(
            split_model_id("vertex/gemini-2.5-flash"),
            ("gcp.vertex_ai", "gemini-2.5-flash")
        );
        assert_eq!(split_model_id("bare"), ("unknown", "bare"));
        assert_eq!(finish_reason(&StopReason::ToolUse), "tool_calls");
        assert_eq!(finish_reason(&StopReason::Other("x".into())), "x");
        assert_eq!(widen(0.2), 0.2);
        assert_eq!(count(u64::MAX), i64::MAX);
    }
}
