//! What one connection is doing, for its timeouts: waiting for a request's
//! headers, idle between requests, or busy with a request.
//!
//! hyper's own header-read timer starts whenever the connection waits for a
//! request, so it cannot tell a slow client (headers trickling in) from an
//! idle keep-alive connection. The accept loop therefore turns hyper's timer
//! off and keeps the phase here instead:
//!
//! - a new connection, and an idle one once a byte arrives, is
//!   [`Phase::AwaitingHead`]: its headers must be complete within the
//!   header-read timeout (counted from the accept, or from that first byte);
//! - a request handed to the router makes it [`Phase::Busy`] until its
//!   response body is written or dropped (event streams stay busy for their
//!   whole life, and no timeout applies);
//! - after the last response, it is [`Phase::Idle`] until the idle timeout.
//!
//! [`Watched`] (the socket) reports reads, [`Activity::begin_request`] and
//! [`Tracked`] (the response body) report requests; [`Activity::expired`]
//! resolves when the phase's deadline passes, and the accept loop then drops
//! the connection.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio::time::Instant;

/// Where a connection is between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting for a request's headers, since this instant.
    AwaitingHead { since: Instant },
    /// Serving this many requests.
    Busy { requests: usize },
    /// Nothing to do since this instant.
    Idle { since: Instant },
}

/// The phase of one connection, shared by its socket, its service and its
/// watchdog.
#[derive(Clone)]
pub(crate) struct Activity {
    phase: Arc<watch::Sender<Phase>>,
}

/// The timeouts [`Activity::expired`] applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// For [`Phase::AwaitingHead`].
    pub header_read: Duration,
    /// For [`Phase::Idle`].
    pub idle: Duration,
}

impl Activity {
    /// A connection accepted now: waiting for its first request.
    pub(crate) fn new() -> Self {
        let phase = Phase::AwaitingHead {
            since: Instant::now(),
        };
        Self {
            phase: Arc::new(watch::channel(phase).0),
        }
    }

    /// Where the connection is now.
    pub(crate) fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Bytes arrived: an idle connection now waits for a request's headers.
    fn bytes_read(&self) {
        self.phase.send_if_modified(|phase| match phase {
            Phase::Idle { .. } => {
                *phase = Phase::AwaitingHead {
                    since: Instant::now(),
                };
                true
            }
            _ => false,
        });
    }

    /// A request reached the router; it lasts until the guard drops.
    pub(crate) fn begin_request(&self) -> RequestGuard {
        self.phase.send_modify(|phase| {
            *phase = match *phase {
                Phase::Busy { requests } => Phase::Busy {
                    requests: requests + 1,
                },
                _ => Phase::Busy { requests: 1 },
            }
        });
        RequestGuard {
            activity: self.clone(),
        }
    }

    fn end_request(&self) {
        self.phase.send_modify(|phase| {
            *phase = match *phase {
                Phase::Busy { requests } if requests > 1 => Phase::Busy {
                    requests: requests - 1,
                },
                _ => Phase::Idle {
                    since: Instant::now(),
                },
            }
        });
    }

    /// Resolves once the connection has been waiting for headers, or idle,
    /// for longer than `timeouts` allow.
    pub(crate) async fn expired(&self, timeouts: Timeouts) {
        let mut rx = self.phase.subscribe();
        loop {
            let deadline = match *rx.borrow_and_update() {
                Phase::AwaitingHead { since } => Some(since + timeouts.header_read),
                Phase::Idle { since } => Some(since + timeouts.idle),
                Phase::Busy { .. } => None,
            };
            let changed = async {
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            match deadline {
                Some(deadline) => tokio::select! {
                    () = tokio::time::sleep_until(deadline) => return,
                    () = changed => {}
                },
                None => changed.await,
            }
        }
    }
}

/// Marks one request as in progress while it lives.
pub(crate) struct RequestGuard {
    activity: Activity,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.activity.end_request();
    }
}

/// A response body that holds its request's guard (and its tenant's share,
/// see `share`) until written or dropped.
pub(crate) struct Tracked {
    inner: Body,
    _guard: RequestGuard,
    _share: crate::share::ShareSlot,
}

impl Tracked {
    /// `body`, ending its request (and giving back its share) when it ends.
    pub(crate) fn wrap(body: Body, guard: RequestGuard, share: crate::share::ShareSlot) -> Body {
        Body::new(Tracked {
            inner: body,
            _guard: guard,
            _share: share,
        })
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A socket that reports each read to its connection's [`Activity`].
pub(crate) struct Watched<S> {
    inner: S,
    activity: Activity,
}

impl<S> Watched<S> {
    /// `inner`, reporting to `activity`.
    pub(crate) fn new(inner: S, activity: Activity) -> Self {
        Self { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
