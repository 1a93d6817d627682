//! The provider's result publisher: the results of calls finished at the
//! same time go out in one pipeline, and their calls are acknowledged
//! together once their results are in Redis.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::batch::Batcher;
use crate::conn::Redis;
use crate::error::RegistryError;
use crate::wire;

/// Most results published in one batch, and most waiting for their turn.
const PUBLISH_BATCH: usize = 256;
const PUBLISH_QUEUE: usize = 4096;

/// One call's result to publish, and the request entry to acknowledge.
pub(crate) struct Publish {
    pub(crate) key: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) entry_id: String,
    /// The provider's memory entry to record the result in, and its TTL in
    /// milliseconds (calls to tools that are not idempotent).
    pub(crate) memory: Option<(String, u64)>,
}

/// What publishing one result yielded.
#[derive(Clone)]
pub(crate) struct Published {
    /// `true` published, `false` nobody waits (no result stream).
    pub(crate) delivered: bool,
    /// Done once the call's `XACK` has had its reply (or failed, or was
    /// not sent because the `XADD` failed).
    pub(crate) acked: Acked,
}

/// A batch's `XACK`, awaited by each of its calls.
pub(crate) type Acked = futures_util::future::Shared<BoxFuture<'static, ()>>;

/// The batcher publishing results. One pipeline of `XADD ... NOMKSTREAM`,
/// then one `XACK` of the calls whose `XADD` did not fail: a call is
/// acknowledged only after its result is in Redis, and a failed `XADD`
/// leaves its call to be claimed again. The batch ends when the `XADD`s
/// have their replies, so the next batch's results go out while the `XACK`
/// is on its way (a few per cent more calls/s at 64 in flight); each call's
/// worker still waits for [`Published::acked`] before it frees its place,
/// so a provider that shuts down waits for its acknowledgements. Native
/// commands, not a script: a command run from Lua costs Redis a few µs
/// more than the same command sent by a client.
pub(crate) fn publisher(redis: Redis, stream_key: String) -> Batcher<Publish, Published> {
    Batcher::new(PUBLISH_BATCH, PUBLISH_QUEUE, move |batch: Vec<Publish>| {
        let (redis, stream_key) = (redis.clone(), stream_key.clone());
        async move {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for p in &batch {
                // Recorded before it is published: a repeat finds it.
                if let Some((key, ttl)) = &p.memory {
                    super::memory::record(&mut pipe, key, &p.payload, *ttl);
                }
                pipe.cmd("XADD")
                    .arg(&p.key)
                    .arg("NOMKSTREAM")
                    .arg("*")
                    .arg("n")
                    .arg(wire::EVENT_RESULT)
                    .arg("p")
                    .arg(&p.payload);
            }
            let replies: Vec<redis::RedisResult<Option<String>>> =
                pipe.query_async(&mut redis.mux()).await?;
            let acked: Vec<String> = batch
                .into_iter()
                .zip(&replies)
                .filter(|(_, r)| r.is_ok())
                .map(|(p, _)| p.entry_id)
                .collect();
            let ack: BoxFuture<'static, ()> = if acked.is_empty() {
                Box::pin(std::future::ready(()))
            } else {
                // Sent on the same connection right after the results; the
                // batch does not wait for its reply.
                let mut mux = redis.mux();
                let task = tokio::spawn(async move {
                    let ack: Result<i64, redis::RedisError> = redis::cmd("XACK")
                        .arg(&stream_key)
                        .arg(wire::GROUP_PROVIDER)
                        .arg(&acked)
                        .query_async(&mut mux)
                        .await;
                    if let Err(e) = ack {
                        // Published but not acknowledged: claimed again after
                        // the grace, as if this provider had stopped here.
                        tracing::warn!(error = %e, calls = acked.len(), "acknowledging published results failed");
                    }
                });
                Box::pin(task.map(drop))
            };
            let acked = ack.shared();
            Ok(replies
                .into_iter()
                .map(|r| {
                    r.map(|id| Published {
                        delivered: id.is_some(),
                        acked: acked.clone(),
                    })
                    .map_err(RegistryError::from)
                })
                .collect())
        }
        .boxed()
    })
}
