//! One call on a provider: decode, validate, run the tool with an output
//! sink that publishes deltas to the result stream, then publish the result
//! and acknowledge the call (one pipeline and one `XACK` for the results
//! ready at the same time). While the tool runs the call's idle time is
//! reset, so a slow call is not claimed by another provider.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use tracing::Instrument;
use weft_core::tool::{OutputSink, ToolError, ToolRequest};
use weft_core::{RunId, SessionId, ToolCallId, TurnId};
use weft_tools::ToolFailure;

use super::Shared;
use super::deltas::Deltas;
use super::memory::{self, Seen};
use super::publish::Publish;
use super::reply::{OUTCOME_UNKNOWN, encode_failure, encode_reply, error_result};
use crate::pulse;
use crate::wire::{self, ToolCallMessage, ToolResultMessage};

/// Runs one call and publishes its result.
pub(crate) async fn execute(shared: &Arc<Shared>, entry_id: String, msg: ToolCallMessage) {
    let result_key = pulse::key(&wire::result_stream(&msg.tool_use_id));
    let deltas = Deltas::new(shared, result_key.clone());
    let span = tracing::info_span!(
        "registry.provider.call",
        tool = %msg.tool,
        tool_use_id = %msg.tool_use_id,
        trace_id = tracing::field::Empty,
        parent_span_id = tracing::field::Empty,
    );
    // Continue the caller's W3C trace: its ids become this span's fields.
    if let Some((trace_id, parent)) = parse_traceparent(&msg.traceparent) {
        span.record("trace_id", trace_id);
        span.record("parent_span_id", parent);
    }
    let genai = crate::trace::provider_span(
        &msg.tool,
        &msg.tool_use_id,
        &msg.traceparent,
        &msg.tracestate,
    );
    let memory = shared
        .remembers(&msg.tool)
        .then(|| memory::key(&shared.registry_toolset, &msg.tool_use_id));
    if let Some(key) = &memory {
        match memory::begin(&shared.redis, key, shared.remember_ms()).await {
            Ok(Seen::New) => {}
            Ok(Seen::Recorded(payload)) => {
                tracing::info!(
                    tool_use_id = %msg.tool_use_id,
                    "a call that already ran was delivered again; publishing its recorded result"
                );
                finish(
                    shared,
                    result_key,
                    payload,
                    entry_id,
                    None,
                    &msg.tool_use_id,
                )
                .await;
                return;
            }
            Ok(Seen::Unfinished) => {
                tracing::warn!(
                    tool_use_id = %msg.tool_use_id,
                    tool = %msg.tool,
                    "a call started by a provider that stopped before its result was delivered again; not running it twice (outcome unknown)"
                );
                let payload = wire::encode(&outcome_unknown_result(&msg.tool_use_id, &msg.tool));
                finish(
                    shared,
                    result_key,
                    payload,
                    entry_id,
                    memory,
                    &msg.tool_use_id,
                )
                .await;
                return;
            }
            // Not marked, so not run: a later delivery tries again.
            Err(e) => {
                tracing::warn!(error = %e, tool_use_id = %msg.tool_use_id, "marking a call as started failed; leaving it to a later delivery");
                return;
            }
        }
    }
    let heartbeat = heartbeat(shared, &entry_id);
    let run = run_tool(shared, &msg, deltas.sink(&msg.tool_use_id))
        .instrument(genai)
        .instrument(span);
    let result = tokio::select! {
        r = run => r,
        () = heartbeat => unreachable_result(&msg.tool_use_id),
    };
    // Every delta the tool published goes out before the result.
    deltas.flush().await;
    let payload = wire::encode(&result);
    finish(
        shared,
        result_key,
        payload,
        entry_id,
        memory,
        &msg.tool_use_id,
    )
    .await;
}

/// Publishes a call's result (recording it in the provider's memory when
/// `memory` names its entry) and waits for the call's acknowledgement.
async fn finish(
    shared: &Shared,
    result_key: String,
    payload: Vec<u8>,
    entry_id: String,
    memory: Option<String>,
    tool_use_id: &str,
) {
    let res = shared
        .publisher
        .submit(Publish {
            key: result_key,
            payload,
            entry_id,
            memory: memory.map(|key| (key, shared.remember_ms())),
        })
        .await;
    if let Ok(p) = &res {
        p.acked.clone().await;
    }
    match res.map(|p| p.delivered) {
        Ok(false) => tracing::info!(
            tool_use_id,
            "nobody waits for this result (its stream is gone); acknowledged"
        ),
        Ok(true) => {}
        // Not acknowledged: after the claim grace another delivery publishes
        // it (from the memory, for a tool that is not idempotent).
        Err(e) => {
            tracing::warn!(error = %e, tool_use_id, "publishing the result failed")
        }
    }
}

/// The answer to a call whose earlier delivery started and never finished.
fn outcome_unknown_result(tool_use_id: &str, tool: &str) -> ToolResultMessage {
    error_result(
        tool_use_id,
        OUTCOME_UNKNOWN,
        format!(
            "`{tool}` was started by a provider that stopped before it reported a result; it is not idempotent, so it was not run again, and whether it took effect is unknown"
        ),
    )
}

/// Answers a call that expired in the queue (its caller's deadline passed
/// before it was read) without running it.
pub(crate) async fn expire(shared: &Arc<Shared>, entry_id: String, msg: ToolCallMessage) {
    let result_key = pulse::key(&wire::result_stream(&msg.tool_use_id));
    let result = error_result(
        &msg.tool_use_id,
        ToolError::TIMEOUT,
        format!(
            "`{}` expired in the queue: its caller's deadline passed before a provider read it; it did not run",
            msg.tool
        ),
    );
    let payload = wire::encode(&result);
    finish(
        shared,
        result_key,
        payload,
        entry_id,
        None,
        &msg.tool_use_id,
    )
    .await;
}

fn unreachable_result(tool_use_id: &str) -> ToolResultMessage {
    error_result(
        tool_use_id,
        ToolError::INTERNAL,
        "the call's heartbeat ended",
    )
}

async fn run_tool(shared: &Shared, msg: &ToolCallMessage, output: OutputSink) -> ToolResultMessage {
    let id = &msg.tool_use_id;
    let Some(served) = shared.tools.get(&msg.tool) else {
        return error_result(
            id,
            "unknown_tool",
            format!("this provider serves no tool `{}`", msg.tool),
        );
    };
    let raw = msg.payload.as_ref().map_or("null", |p| p.get());
    if raw.len() > shared.config.max_payload_bytes {
        return error_result(
            id,
            ToolError::INVALID_ARGUMENTS,
            format!(
                "the payload is {} bytes; the limit is {}",
                raw.len(),
                shared.config.max_payload_bytes
            ),
        );
    }
    let payload: Value = match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(e) => {
            return error_result(
                id,
                ToolError::INVALID_ARGUMENTS,
                format!("the payload is not JSON: {e}"),
            );
        }
    };
    let (ident, validator) = (&served.ident, &served.validator);
    if let Err(issues) = validator.validate(&payload) {
        return encode_failure(id, &validator.failure(ident, &payload, issues));
    }
    let meta = msg.meta.clone().unwrap_or_default();
    let request = ToolRequest {
        name: ident.clone(),
        payload: validator.normalize(payload).into(),
        run_id: RunId::new(meta.run_id),
        session_id: SessionId::new(meta.session_id),
        turn_id: TurnId::new(meta.turn_id),
        tool_call_id: ToolCallId::new(if meta.tool_call_id.is_empty() {
            id.clone()
        } else {
            meta.tool_call_id
        }),
        parent_tool_call_id: Some(meta.parent_tool_call_id)
            .filter(|p| !p.is_empty())
            .map(ToolCallId::new),
        labels: Default::default(),
        output,
        elicit: Default::default(),
        children: Default::default(),
    };
    let call = AssertUnwindSafe(shared.toolset.call_tool(request)).catch_unwind();
    match tokio::time::timeout(shared.config.call_timeout, call).await {
        Err(_) => error_result(
            id,
            ToolError::TIMEOUT,
            format!(
                "`{}` did not finish within {} ms",
                msg.tool,
                shared.config.call_timeout.as_millis()
            ),
        ),
        Ok(Err(_)) => error_result(id, ToolError::PANICKED, format!("`{}` panicked", msg.tool)),
        Ok(Ok(Ok(reply))) => encode_reply(id, &reply),
        Ok(Ok(Err(failure))) => encode_failure(id, &failure),
    }
}

/// Resets the call's idle time every third of the claim grace, forever.
async fn heartbeat(shared: &Shared, entry_id: &str) {
    let every = (shared.config.claim_grace / 3).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(every).await;
        // JUSTID: resets the idle time without counting a delivery.
        let res: Result<redis::Value, _> = redis::cmd("XCLAIM")
            .arg(&shared.stream_key)
            .arg(wire::GROUP_PROVIDER)
            .arg(&shared.config.consumer)
            .arg(0)
            .arg(entry_id)
            .arg("JUSTID")
            .query_async(&mut shared.redis.mux())
            .await;
        if let Err(e) = res {
            tracing::debug!(error = %e, "heartbeat failed");
        }
    }
}

/// `00-<trace id>-<parent span id>-<flags>` → (trace id, parent span id).
fn parse_traceparent(tp: &str) -> Option<(&str, &str)> {
    let mut parts = tp.split('-');
    let (_version, trace, parent) = (parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hex(trace, 32) && hex(parent, 16)).then_some((trace, parent))
}

/// The failure to report when a call is dead-lettered.
pub(crate) fn dead_letter_result(tool_use_id: &str, deliveries: u64) -> ToolResultMessage {
    encode_failure(
        tool_use_id,
        &ToolFailure::from(ToolError::new(
            "execution_failed",
            format!(
                "the call was delivered {deliveries} times without a result and was dead-lettered"
            ),
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::parse_traceparent;

    #[test]
    fn reads_w3c_traceparent() {
        assert_eq!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Some(("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"))
        );
        assert_eq!(parse_traceparent("garbage"), None);
        assert_eq!(parse_traceparent(""), None);
    }
}
