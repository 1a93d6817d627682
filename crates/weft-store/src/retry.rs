//! Retrying an operation once after a lost connection.
//!
//! PostgreSQL servers drop idle connections, restart, or have their backends
//! terminated by an administrator. The pool replaces a dead connection when
//! it is next acquired (`test_before_acquire`), but an operation already
//! running on it fails. The operations retried here are safe to run twice:
//! reads, and writes that are idempotent (a commit's already-stored events are
//! skipped and its snapshot write is the same).

use std::future::Future;
use std::time::Duration;

use crate::error::Failure;

/// How long to wait before the retry, so a restarting server can come back.
const RETRY_DELAY: Duration = Duration::from_millis(100);

/// Runs `op`, and once more if it failed with a connection error.
pub(crate) async fn once<T, F, Fut>(label: &str, mut op: F) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    match op().await {
        Err(e) if e.is_connection() => {
            tracing::warn!(store = label, error = ?e, "store connection lost; retrying once");
            tokio::time::sleep(RETRY_DELAY).await;
            op().await
        }
        other => other,
    }
}
