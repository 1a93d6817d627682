//! Retrying an operation after a lost connection.
//!
//! PostgreSQL servers drop idle connections, restart, or have their backends
//! terminated by an administrator. The pool finds a dead connection when it
//! comes back (and replaces it), so an operation that was running on it, or
//! that took it from the pool after it died, fails. The operations retried here are safe to run again:
//! reads, and writes that are idempotent (a commit's already-stored events are
//! skipped and its snapshot write is the same).
//!
//! One retry is not enough in practice: a restarting server refuses
//! connections for a while, and an administrator terminating backends may do
//! it again while the retry runs. So a failed attempt is retried with
//! exponential backoff, [`RETRIES`] times (about 1.5 s in all). Retried are
//! connection errors and the errors a database answers when a transaction
//! lost a race and was rolled back whole (SQLite busy or locked past the busy
//! timeout, PostgreSQL serialization failures and deadlocks); anything else
//! is returned at once.

use std::future::Future;
use std::time::Duration;

use weft_core::backoff::BackoffPolicy;

use crate::error::Failure;

/// How many times an operation is retried after a connection error.
pub(crate) const RETRIES: u32 = 5;

/// The waits between attempts: 50 ms before the first retry, doubled for
/// each following one.
const BACKOFF: BackoffPolicy =
    BackoffPolicy::new(Duration::from_millis(50), Duration::from_millis(800));

/// Runs `op`, and again (up to [`RETRIES`] times) while it fails with a
/// connection error.
pub(crate) async fn retrying<T, F, Fut>(label: &str, mut op: F) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut backoff = BACKOFF.start();
    let mut retries = 0;
    loop {
        match op().await {
            Err(e) if e.is_retryable() && retries < RETRIES => {
                retries += 1;
                tracing::warn!(store = label, error = ?e, retry = retries, "store operation failed transiently; retrying");
                tokio::time::sleep(backoff.next_delay()).await;
            }
            other => return other,
        }
    }
}
