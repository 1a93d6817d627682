//! The accept loop: HTTP/1 connections served by hyper with a header-read
//! timeout (a client that never finishes its request line is cut off), a
//! limit on open connections (past it, new ones are closed at once), and a
//! graceful shutdown that waits a bounded time for open connections.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::sync::Semaphore;

/// How the server treats connections; every limit is on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Time a client has to send a request's headers.
    pub header_read_timeout: Duration,
    /// Connections open at once; more are closed on accept.
    pub max_connections: usize,
    /// Time open connections get to finish after shutdown begins.
    pub shutdown_grace: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            max_connections: 4096,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Serves `router` on `listener` under `limits` until `signal` completes;
/// `on_shutdown` runs once accepting has stopped.
pub(crate) async fn accept_loop(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnLimits,
    signal: impl Future<Output = ()> + Send,
    on_shutdown: impl FnOnce(),
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(signal);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off briefly.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::warn!(
                limit = limits.max_connections,
                "connection refused: too many open"
            );
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    on_shutdown();
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("open connections did not finish within the shutdown grace");
    }
    Ok(())
}
