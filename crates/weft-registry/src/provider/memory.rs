//! The provider's memory of the calls it has run, so a call to a tool that
//! is not idempotent runs at most once however often it is delivered.
//!
//! Before such a call runs, one `SET ... NX GET` writes a marker under
//! `pulse:stream:toolset:<t>:ran:<tool_use_id>` (beside the toolset's
//! request stream, so a provider's Redis ACL user confined to its toolset
//! reaches it) and reads what was there:
//! - nothing: the call never ran here; it runs, and its encoded result
//!   replaces the marker in the pipeline that publishes it ([`record`]);
//! - a recorded result: the call ran and its result was published; the
//!   same result is published again, and the tool is not called;
//! - a marker without a result: a provider started the call and stopped
//!   before it recorded a result (it crashed, or lost Redis for longer than
//!   the claim grace). Whether the tool took effect is unknown, so the call
//!   is answered `outcome_unknown` (recorded, so every later delivery gets
//!   the same answer) instead of being run a second time.
//!
//! Entries expire after [`super::ProviderConfig::remember_for`]. Idempotent
//! tools (their spec says so) skip the memory: running them again is safe.

use crate::RegistryError;
use crate::pulse;

/// What the memory held for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Never seen: the marker is written and the call may run.
    New,
    /// Ran, with this encoded result.
    Recorded(Vec<u8>),
    /// Started by a provider that never recorded its result.
    Unfinished,
}

/// The marker written before a call runs.
const RUNNING: &[u8] = b"running";
/// The prefix of a recorded result.
const RESULT: &[u8] = b"result:";

/// The key remembering `tool_use_id` of `toolset`.
pub(crate) fn key(toolset: &str, tool_use_id: &str) -> String {
    pulse::key(&format!("toolset:{toolset}:ran:{tool_use_id}"))
}

/// The command that marks a call as started unless the memory holds it
/// already, returning what it held.
fn begin_cmd(key: &str, ttl_ms: u64) -> redis::Cmd {
    let mut cmd = redis::cmd("SET");
    cmd.arg(key)
        .arg(RUNNING)
        .arg("NX")
        .arg("GET")
        .arg("PX")
        .arg(ttl_ms.max(1));
    cmd
}

/// Marks the call started, or tells what an earlier delivery left.
pub(crate) async fn begin(
    redis: &crate::Redis,
    key: &str,
    ttl_ms: u64,
) -> Result<Seen, RegistryError> {
    let held: Option<Vec<u8>> = begin_cmd(key, ttl_ms).query_async(&mut redis.mux()).await?;
    Ok(classify(held))
}

fn classify(held: Option<Vec<u8>>) -> Seen {
    match held {
        None => Seen::New,
        Some(v) => match v.strip_prefix(RESULT) {
            Some(result) => Seen::Recorded(result.to_vec()),
            None => Seen::Unfinished,
        },
    }
}

/// Adds to `pipe` the command recording `payload` as the call's result
/// (only over a marker or a result: an entry that expired stays gone).
pub(crate) fn record(pipe: &mut redis::Pipeline, key: &str, payload: &[u8], ttl_ms: u64) {
    let mut value = Vec::with_capacity(RESULT.len() + payload.len());
    value.extend_from_slice(RESULT);
    value.extend_from_slice(payload);
    pipe.cmd("SET")
        .arg(key)
        .arg(value)
        .arg("XX")
        .arg("PX")
        .arg(ttl_ms.max(1))
        .ignore();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_an_earlier_delivery_left() {
        assert_eq!(classify(None), Seen::New);
        assert_eq!(classify(Some(RUNNING.to_vec())), Seen::Unfinished);
        assert_eq!(
            classify(Some(b"result:{\"tool_use_id\":\"a\"}".to_vec())),
            Seen::Recorded(b"{\"tool_use_id\":\"a\"}".to_vec())
        );
        // Anything else is a call whose outcome is not known.
        assert_eq!(classify(Some(b"garbage".to_vec())), Seen::Unfinished);
        assert_eq!(
            key("calc", "run_1/call_1"),
            "pulse:stream:toolset:calc:ran:run_1/call_1"
        );
    }
}
