//! One call on a provider: decode, validate, run the tool with an output
//! sink that publishes deltas to the result stream, then publish the result
//! and acknowledge the call (one pipeline and one `XACK` for the results
//! ready at the same time). While the tool runs the call's idle time is
//! reset, so a slow call is not claimed by another provider.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;
use weft_core::tool::{OutputSink, ToolError, ToolRequest};
use weft_core::{RunId, SessionId, ToolCallId, TurnId};
use weft_tools::ToolFailure;

use super::Shared;
use super::publish::Publish;
use super::reply::{encode_failure, encode_reply, error_result};
use crate::pulse;
use crate::wire::{self, ToolCallMessage, ToolOutputDeltaMessage, ToolResultMessage};

/// Deltas buffered per call before new ones are dropped (deltas are best effort).
const DELTA_BUFFER: usize = 256;

enum DeltaMsg {
    Delta(Vec<u8>),
    Flush(oneshot::Sender<()>),
}

/// Runs one call and publishes its result.
pub(crate) async fn execute(shared: &Arc<Shared>, entry_id: String, msg: ToolCallMessage) {
    let result_key = pulse::key(&wire::result_stream(&msg.tool_use_id));
    let (tx, rx) = mpsc::channel(DELTA_BUFFER);
    let publisher = Arc::new(Publisher {
        shared: shared.clone(),
        key: result_key.clone(),
        rx: Mutex::new(Some(rx)),
        task: Mutex::new(None),
        runtime: tokio::runtime::Handle::current(),
    });
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
    let heartbeat = heartbeat(shared, &entry_id);
    let run = run_tool(
        shared,
        &msg,
        sink(&msg.tool_use_id, tx.clone(), publisher.clone()),
    )
    .instrument(genai)
    .instrument(span);
    let result = tokio::select! {
        r = run => r,
        () = heartbeat => unreachable_result(&msg.tool_use_id),
    };
    // Every delta the tool published goes out before the result.
    if let Some(task) = publisher.started() {
        let (done, flushed) = oneshot::channel();
        if tx.send(DeltaMsg::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
        task.abort();
    }
    drop(tx);
    let payload = wire::encode(&result);
    let res = shared
        .publisher
        .submit(Publish {
            key: result_key,
            payload,
            entry_id,
        })
        .await;
    if let Ok(p) = &res {
        p.acked.clone().await;
    }
    match res.map(|p| p.delivered) {
        Ok(false) => tracing::info!(
            tool_use_id = %msg.tool_use_id,
            "nobody waits for this result (its stream is gone); acknowledged"
        ),
        Ok(true) => {}
        // Not acknowledged: after the claim grace another delivery publishes it.
        Err(e) => {
            tracing::warn!(error = %e, tool_use_id = %msg.tool_use_id, "publishing the result failed")
        }
    }
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
    let Some((ident, validator)) = shared.tools.get(&msg.tool) else {
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

/// The task that publishes one call's deltas, started by the first delta:
/// most calls publish none, and pay for no task.
struct Publisher {
    shared: Arc<Shared>,
    key: String,
    rx: Mutex<Option<mpsc::Receiver<DeltaMsg>>>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
    /// The runtime to start it on, whatever thread the tool publishes from.
    runtime: tokio::runtime::Handle,
}

impl Publisher {
    /// Starts the task unless it runs already.
    fn start(&self) {
        let rx = self.rx.lock().ok().and_then(|mut rx| rx.take());
        if let Some(rx) = rx {
            let task =
                self.runtime
                    .spawn(publish_deltas(self.shared.clone(), self.key.clone(), rx));
            if let Ok(mut slot) = self.task.lock() {
                *slot = Some(task.abort_handle());
            }
        }
    }

    /// The task, if a delta started it.
    fn started(&self) -> Option<tokio::task::AbortHandle> {
        self.task.lock().ok().and_then(|mut t| t.take())
    }
}

/// The output sink of one call: deltas go, in order, to the publisher task.
fn sink(tool_use_id: &str, tx: mpsc::Sender<DeltaMsg>, publisher: Arc<Publisher>) -> OutputSink {
    let id = tool_use_id.to_owned();
    OutputSink::new(move |stream, delta| {
        let msg = ToolOutputDeltaMessage {
            tool_use_id: id.clone(),
            stream: stream.to_owned(),
            delta: delta.to_owned(),
        };
        if tx.try_send(DeltaMsg::Delta(wire::encode(&msg))).is_err() {
            tracing::debug!(tool_use_id = %id, "output delta dropped (buffer full or call over)");
            return;
        }
        publisher.start();
    })
}

async fn publish_deltas(shared: Arc<Shared>, key: String, mut rx: mpsc::Receiver<DeltaMsg>) {
    while let Some(msg) = rx.recv().await {
        match msg {
            DeltaMsg::Delta(payload) => {
                let mut cmd = redis::cmd("XADD");
                cmd.arg(&key)
                    .arg("NOMKSTREAM")
                    .arg("*")
                    .arg("n")
                    .arg(wire::EVENT_OUTPUT_DELTA)
                    .arg("p")
                    .arg(payload);
                let res: Result<redis::Value, _> = cmd.query_async(&mut shared.redis.mux()).await;
                if let Err(e) = res {
                    tracing::debug!(error = %e, "publishing an output delta failed");
                }
            }
            DeltaMsg::Flush(done) => {
                let _ = done.send(());
            }
        }
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
