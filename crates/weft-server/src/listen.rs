//! The accept loop: HTTP/1 connections served by hyper with a header-read
//! timeout (a client that never finishes its request line is cut off), a
//! body-read deadline on every request ([`BodyDeadline`]), an idle timeout
//! (a keep-alive connection with no request is closed), a limit on open
//! connections (at it, a new connection takes the place of the one waiting
//! longest without a request, see [`Crowd`]; a few places beyond it are
//! kept for `/healthz` and `/metrics`), fair shares (open connections per
//! peer address, requests in flight per tenant, see `share`), and a
//! graceful shutdown that waits a bounded time for open connections.
//!
//! Both timeouts are kept by each connection's [`Activity`], not by hyper,
//! whose header-read timer also runs while a connection is idle.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::IntoResponse as _;
use hyper::body::Incoming;
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;

use crate::activity::{Activity, Timeouts, Tracked, Watched};
use crate::crowd::Crowd;
use crate::share::{Peers, ShareSlot, Shares};

/// The paths a connection on a probe's place is served.
const PROBES: [&str; 2] = ["/healthz", "/metrics"];

/// How the server treats connections; every limit is on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Time a client has to send a request's headers, from the connection's
    /// accept or, on a kept-alive connection, from the request's first byte.
    pub header_read_timeout: Duration,
    /// Time a client has to send a request's whole body, from the end of
    /// its headers; past it the request is answered 408.
    pub body_read_timeout: Duration,
    /// Time a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// Connections open at once; at the limit a new one takes the place of
    /// the connection waiting longest without a request, and is closed when
    /// every open connection is serving one.
    pub max_connections: usize,
    /// Connections beyond `max_connections` kept for `/healthz` and
    /// `/metrics`: when every other connection is busy, a probe still gets
    /// an answer (any other request on such a connection is answered 503).
    pub reserved_connections: usize,
    /// Connections one peer address may hold open at once; past it a new
    /// one from that address is closed.
    pub max_connections_per_peer: usize,
    /// Requests one tenant may have in flight at once (event streams
    /// included); past it a request is answered 429 before its body is read.
    pub max_requests_per_tenant: usize,
    /// Time open connections get to finish after shutdown begins.
    pub shutdown_grace: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4096,
            reserved_connections: 8,
            max_connections_per_peer: 1024,
            max_requests_per_tenant: 1024,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// When a request's body must have arrived, set on each request as an
/// extension; the JSON body extractors stop reading at it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyDeadline(pub(crate) tokio::time::Instant);

/// Set once a request's body has been read to its end, as an extension
/// of each request. A response sent before then (a refusal: 401, 408, 413,
/// 429) closes the connection, since the rest of the body is still on it;
/// the response says so (`Connection: close`) so a keep-alive client does
/// not send its next request on a connection about to close.
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyRead(Arc<std::sync::atomic::AtomicBool>);

impl BodyRead {
    /// Marks the body read.
    pub(crate) fn done(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn is_done(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Whether a request carries a body (a non-zero length, or chunks).
fn has_body<B>(request: &Request<B>) -> bool {
    let headers = request.headers();
    headers.contains_key(hyper::header::TRANSFER_ENCODING)
        || headers
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0")
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
    let crowd = Crowd::new(limits.max_connections, limits.reserved_connections);
    let peers = Peers::new(limits.max_connections_per_peer);
    let shares = Shares::new(limits.max_requests_per_tenant);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(None);
    let timeouts = Timeouts {
        header_read: limits.header_read_timeout,
        idle: limits.idle_timeout,
    };
    tokio::pin!(signal);
    loop {
        let (stream, peer) = tokio::select! {
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
        let Some(peer_place) = peers.join(peer.ip()) else {
            tracing::debug!(
                limit = limits.max_connections_per_peer,
                "connection refused: its address holds its share of connections"
            );
            drop(stream);
            continue;
        };
        let activity = Activity::new();
        let Ok(place) = crowd.join(activity.clone()) else {
            tracing::warn!(
                limit = limits.max_connections,
                "connection refused: every open connection is serving a request"
            );
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        // Each request, until its response body is done, keeps the
        // connection busy.
        let inner = TowerToHyperService::new(router.clone());
        let reporter = activity.clone();
        let body_read = limits.body_read_timeout;
        let probes_only = place.is_reserved();
        let shares = shares.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            let guard = reporter.begin_request();
            let share = ShareSlot::new(shares.clone());
            request
                .extensions_mut()
                .insert(BodyDeadline(tokio::time::Instant::now() + body_read));
            request.extensions_mut().insert(share.clone());
            let body_read = BodyRead::default();
            let unread = has_body(&request).then(|| body_read.clone());
            request.extensions_mut().insert(body_read);
            let refused = probes_only && !PROBES.contains(&request.uri().path());
            let response = (!refused).then(|| inner.call(request));
            async move {
                let mut response = match response {
                    Some(response) => response.await?,
                    None => crate::error::ApiError::Unavailable(
                        "the server is serving as many requests as it can; try again".into(),
                    )
                    .into_response(),
                };
                if unread.is_some_and(|r| !r.is_done()) {
                    response.headers_mut().insert(
                        hyper::header::CONNECTION,
                        hyper::header::HeaderValue::from_static("close"),
                    );
                }
                // The tenant's share is held until the body ends.
                Ok::<_, std::convert::Infallible>(
                    response.map(|body: Body| Tracked::wrap(body, guard, share)),
                )
            }
        });
        let io = TokioIo::new(Watched::new(stream, activity.clone()));
        let conn = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            tokio::select! {
                served = conn => if let Err(e) = served {
                    tracing::debug!(error = %e, "connection ended with an error");
                },
                () = activity.expired(timeouts) => {
                    tracing::debug!("connection closed: idle, or headers too slow");
                }
                () = place.evicted() => {
                    tracing::debug!("connection closed to make room for a new one");
                }
            }
            drop((place, peer_place));
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
