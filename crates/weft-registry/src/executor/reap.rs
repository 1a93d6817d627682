//! Deleting result streams once their results were read: off the call's
//! path and many keys per `DEL`, so a call costs Redis one command less.
//! The queue is bounded; a key that does not fit is left to the TTL the
//! stream got at admission, which removes it anyway.

use tokio::sync::mpsc;

use crate::conn::Redis;

/// Keys waiting to be deleted before new ones are left to their TTL.
const QUEUE: usize = 4096;

/// Most keys one `DEL` names.
const PER_DEL: usize = 256;

/// Starts the task that deletes the keys sent to it; it ends when every
/// sender is dropped.
pub(super) fn start(redis: Redis) -> mpsc::Sender<String> {
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(run(redis, rx));
    tx
}

async fn run(redis: Redis, mut rx: mpsc::Receiver<String>) {
    let mut keys = Vec::with_capacity(PER_DEL);
    while rx.recv_many(&mut keys, PER_DEL).await > 0 {
        let res: Result<i64, _> = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut redis.mux())
            .await;
        if let Err(e) = res {
            tracing::debug!(error = %e, keys = keys.len(), "deleting result streams failed; their TTL will");
        }
        keys.clear();
    }
}
