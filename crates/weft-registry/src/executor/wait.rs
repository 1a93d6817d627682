//! Waiting for one call's result on its result stream, read in the `agent`
//! group from a [`Source`] (the executor's shared reader or a dedicated
//! connection), until an absolute deadline. Output deltas go to the call's output sink as they
//! arrive; the result ends the wait and the stream is deleted. A vanished
//! stream or group is an `outcome_unknown` failure: the call was out.

use std::time::Instant;

use weft_core::tool::{ToolError, ToolRequest};
use weft_tools::{ToolFailure, ToolReply};

use super::outcome::unknown;
use super::reader::Item;
use super::source::{Next, Source};
use super::{RegistryToolSet, failure};
use crate::provider::reply::decode_result;
use crate::pulse::{self, Body};
use crate::wire::{self, ToolOutputDeltaMessage, ToolResultMessage};

pub(super) async fn wait(
    ex: &RegistryToolSet,
    request: &ToolRequest,
    tool_use_id: &str,
    mut source: Source,
    deadline: Instant,
) -> Result<ToolReply, ToolFailure> {
    let key = pulse::key(&wire::result_stream(tool_use_id));
    let name = &request.name;
    loop {
        let entry = match source.next(ex, deadline).await {
            Next::TimedOut => {
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
            // Published, and then the result was lost: it may have run.
            Next::Stopped => {
                return Err(unknown(
                    name,
                    tool_use_id,
                    "the result reader stopped while the call was out",
                ));
            }
            Next::Item(Item::Gone) => {
                return Err(unknown(
                    name,
                    tool_use_id,
                    "its result stream is gone (expired, deleted, or Redis lost its data)",
                ));
            }
            Next::Item(Item::Entry(entry)) => entry,
        };
        let (event, payload) = match entry.body {
            Body::Event { name, payload } => (name, payload),
            Body::Garbage(why) => {
                tracing::warn!(id = %entry.id, %why, "skipping a malformed result entry");
                continue;
            }
        };
        match event.as_str() {
            wire::EVENT_OUTPUT_DELTA => match wire::decode::<ToolOutputDeltaMessage>(&payload) {
                Ok(d) if d.tool_use_id == tool_use_id => {
                    request.output.publish(&d.stream, &d.delta);
                }
                Ok(_) => tracing::warn!("skipping another call's output delta"),
                Err(e) => tracing::warn!(error = %e, "skipping a malformed output delta"),
            },
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
                        format!("the provider's result for `{tool_use_id}` is unreadable: {e}"),
                    ));
                }
            },
            _ => {}
        }
    }
}

/// Deletes a result stream off the hot path ([`super::reap`]); when the
/// queue is full the stream's TTL removes it.
fn delete(ex: &RegistryToolSet, key: String) {
    let _ = ex.reaper.try_send(key);
}
