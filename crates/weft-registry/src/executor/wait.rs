//! Waiting for one call's result on its result stream, in the `agent`
//! group from the oldest entry, on a dedicated connection, until an
//! absolute deadline. Output deltas go to the call's output sink as they
//! arrive; the result ends the wait and the stream is deleted. A lost
//! connection is reopened; a vanished stream or group is a typed failure.

use std::time::{Duration, Instant};

use weft_core::tool::{ToolError, ToolRequest};
use weft_tools::{ToolFailure, ToolReply};

use super::{RegistryToolSet, failure};
use crate::error::{RegistryError, is_busygroup, is_nogroup};
use crate::provider::reply::decode_result;
use crate::pulse::{self, Body};
use crate::wire::{self, ToolOutputDeltaMessage, ToolResultMessage};

/// Longest single blocking read, so a broken connection is noticed.
const MAX_BLOCK: Duration = Duration::from_secs(5);

pub(super) async fn wait(
    ex: &RegistryToolSet,
    request: &ToolRequest,
    tool_use_id: &str,
    reattach: bool,
    deadline: Instant,
) -> Result<ToolReply, ToolFailure> {
    let key = pulse::key(&wire::result_stream(tool_use_id));
    let name = &request.name;
    let unavailable = |e: RegistryError| {
        failure(
            name,
            ToolError::UNAVAILABLE,
            format!("waiting for `{tool_use_id}`: {e}"),
        )
    };
    if reattach {
        // Read the stream again from its first entry, whoever read it before.
        rewind(ex, &key).await.map_err(unavailable)?;
    }
    let mut conn = None;
    let mut backoff = Duration::from_millis(20);
    loop {
        let now = Instant::now();
        if now >= deadline {
            delete(ex, key.clone());
            return Err(failure(
                name,
                ToolError::TIMEOUT,
                format!(
                    "no result for `{tool_use_id}` within {} ms",
                    ex.config.call_timeout.as_millis()
                ),
            ));
        }
        if conn.is_none() {
            match ex.redis.blocking().await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, "connecting to Redis failed; retrying");
                    tokio::time::sleep(backoff.min(deadline - now)).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let block = (deadline - now).min(MAX_BLOCK).as_millis().max(1);
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(wire::GROUP_AGENT)
            .arg(&ex.config.consumer)
            .arg("COUNT")
            .arg(64)
            .arg("BLOCK")
            .arg(u64::try_from(block).unwrap_or(u64::MAX))
            .arg("STREAMS")
            .arg(&key)
            .arg(">");
        let reply = match c.query(&cmd).await {
            Ok(r) => r,
            Err(RegistryError::Redis(e)) if is_nogroup(&e) => {
                return Err(failure(
                    name,
                    ToolError::UNAVAILABLE,
                    format!(
                        "the result stream of `{tool_use_id}` is gone (expired, deleted, or Redis lost its data)"
                    ),
                ));
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading a result failed; reconnecting");
                conn = None;
                tokio::time::sleep(backoff.min(deadline - now)).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        backoff = Duration::from_millis(20);
        let streams = pulse::parse_read(reply).map_err(|e| unavailable(e.into()))?;
        for (_, entries) in streams {
            for entry in entries {
                let (event, payload) = match entry.body {
                    Body::Event { name, payload } => (name, payload),
                    Body::Garbage(why) => {
                        tracing::warn!(id = %entry.id, %why, "skipping a malformed result entry");
                        continue;
                    }
                };
                match event.as_str() {
                    wire::EVENT_OUTPUT_DELTA => {
                        match wire::decode::<ToolOutputDeltaMessage>(&payload) {
                            Ok(d) if d.tool_use_id == tool_use_id => {
                                request.output.publish(&d.stream, &d.delta);
                            }
                            Ok(_) => tracing::warn!("skipping another call's output delta"),
                            Err(e) => {
                                tracing::warn!(error = %e, "skipping a malformed output delta")
                            }
                        }
                    }
                    wire::EVENT_RESULT => match wire::decode::<ToolResultMessage>(&payload) {
                        Ok(r) if r.tool_use_id == tool_use_id => {
                            delete(ex, key.clone());
                            return decode_result(name, &r);
                        }
                        Ok(_) => tracing::warn!("skipping another call's result"),
                        Err(e) => {
                            delete(ex, key.clone());
                            return Err(failure(
                                name,
                                "malformed_result",
                                format!(
                                    "the provider's result for `{tool_use_id}` is unreadable: {e}"
                                ),
                            ));
                        }
                    },
                    _ => {}
                }
            }
        }
    }
}

/// Points the `agent` group back at the stream's start (creating it if needed).
async fn rewind(ex: &RegistryToolSet, key: &str) -> Result<(), RegistryError> {
    let mut mux = ex.redis.mux();
    let set: Result<(), redis::RedisError> = redis::cmd("XGROUP")
        .arg("SETID")
        .arg(key)
        .arg(wire::GROUP_AGENT)
        .arg("0")
        .query_async(&mut mux)
        .await;
    match set {
        Ok(()) => Ok(()),
        Err(e) if is_nogroup(&e) => {
            let created: Result<(), redis::RedisError> = redis::cmd("XGROUP")
                .arg("CREATE")
                .arg(key)
                .arg(wire::GROUP_AGENT)
                .arg("0")
                .query_async(&mut mux)
                .await;
            match created {
                Err(e) if !is_busygroup(&e) => Err(e.into()),
                _ => Ok(()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Deletes a result stream off the hot path ([`super::reap`]); when the
/// queue is full the stream's TTL removes it.
fn delete(ex: &RegistryToolSet, key: String) {
    let _ = ex.reaper.try_send(key);
}
