//! The lone lane: a call made while few others are in flight is admitted
//! and starts its first read in one pipeline, on a dedicated connection:
//! the admission script, then an `XREADGROUP ... BLOCK` of the call's own
//! result stream. Redis runs the read right after the script created the
//! stream and its group, so the call costs one round trip where the
//! batched path costs two (the admission, then the shared reader's read)
//! and a hop through the shared reader. Under load the batched path shares
//! one script and one read among many calls; one call alone gains nothing
//! from sharing and pays the extra round trip.
//!
//! When the toolset refuses the call the stream does not exist and the
//! read fails at once with `NOGROUP`. When the script is not loaded (Redis
//! restarted) or the pipeline fails, the call takes the batched path; its
//! admission re-attaches if this one got through, and rewinds the group,
//! so whatever this read took is read again. Two rare cases find the
//! stream there though the script did not admit the call (the script was
//! not loaded and the call is a re-attach, or another admission of the same
//! `tool_use_id` came between the script and the read): the read then
//! waits for the stream's next entry, at most its block (5 s, or the
//! deadline), before the call goes on (a re-attach is rewound and read
//! again from the start).

use std::time::Instant;

use super::RegistryToolSet;
use super::source::{self, Own, Source};
use crate::admission::{self, Admission, Call, GroupStart};
use crate::pulse::{self, Entry};
use crate::wire;

/// A call takes the lone lane while fewer calls than this are in flight in
/// its executor.
pub(super) const MAX_IN_FLIGHT: usize = 4;

/// Admits `call` and reads its stream's first entries in one pipeline.
/// `None`: take the batched path (no connection to spare, the script not
/// loaded, or the pipeline failed).
pub(super) async fn admit(
    ex: &RegistryToolSet,
    call: &Call,
    deadline: Instant,
) -> Option<(Admission, Option<Source>)> {
    let mut conn = match ex.redis.try_blocking().await? {
        Ok(conn) => conn,
        Err(e) => {
            tracing::debug!(error = %e, "no dedicated connection for a lone call");
            return None;
        }
    };
    let key = pulse::key(&wire::result_stream(&call.tool_use_id));
    let ttl = u64::try_from(ex.config.result_ttl.as_millis()).unwrap_or(u64::MAX);
    let script = admission::invocation(
        &ex.config.namespace,
        &ex.config.toolset,
        std::slice::from_ref(call),
        ttl,
        GroupStart::AfterInit,
    );
    let mut pipe = redis::pipe();
    pipe.invoke_script(&script).add_command(source::read_cmd(
        &ex.config.consumer,
        &key,
        source::block_until(deadline),
    ));
    let mut replies = match conn.query_pipe(&mut pipe).await {
        Ok(r) if r.len() == 2 => r.into_iter(),
        Ok(r) => {
            tracing::warn!(
                replies = r.len(),
                "a lone call's pipeline: two replies expected"
            );
            return None;
        }
        Err(e) => {
            tracing::debug!(error = %e, "a lone call's pipeline failed; batching it");
            return None;
        }
    };
    let (admitted, read) = (replies.next()?, replies.next()?);
    let admitted = match admitted
        .map_err(Into::into)
        .and_then(|reply| admission::outcomes(reply, 1))
    {
        Ok(mut outcomes) => outcomes.pop()?,
        Err(e) => {
            // NOSCRIPT, or a reply this executor cannot read.
            tracing::debug!(error = %e, "a lone call's admission failed; batching it");
            return None;
        }
    };
    if !matches!(admitted, Admission::Published(_) | Admission::Reattach) {
        return Some((admitted, None));
    }
    let first: Vec<Entry> = match read {
        Ok(reply) => match source::entries(reply) {
            Ok(first) => first,
            Err(e) => {
                tracing::warn!(error = %e, "a lone call's first read is unreadable; batching it");
                return None;
            }
        },
        // A server error took nothing: the next read tells what it means
        // (a `NOGROUP` is a stream gone).
        Err(e) => {
            tracing::debug!(error = %e, "a lone call's first read failed");
            Vec::new()
        }
    };
    Some((admitted, Some(Source::Own(Own::new(conn, key, first)))))
}
