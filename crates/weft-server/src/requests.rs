//! What the server records of each request, in the middleware around every
//! route: its id, its log line and its HTTP metrics.
//!
//! - The id: a well-formed `x-request-id` the client sent (1 to 64 visible
//!   ASCII characters), else a fresh random one. It is echoed in the
//!   response's `x-request-id`, named in the problem body of an error
//!   (`request_id`) and in the request's span.
//! - The log line (message `request`): method, route template (the matched
//!   route, `/v1/runs/{run_id}`, never the raw path), status, duration,
//!   request id and, once its token is checked, tenant; never a header
//!   value or a body. A 5xx is logged at info level, anything else at
//!   debug (off by default); debug lines are capped at
//!   [`DEBUG_LINES_PER_SECOND`], and the next line after a capped second
//!   says how many were left out (`suppressed`).
//! - The metrics ([`HttpMetrics`]): requests by method, route and status,
//!   and their duration (to the response's headers: an event stream's
//!   body is not waited for) by method, route and status class. A request
//!   no route matched is labelled route `unmatched`, and a method outside
//!   the standard ones `other`, so label values stay bounded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::AppState;

/// The request id header, read from requests and set on every response.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest request id taken from a client.
const MAX_ID_LEN: usize = 64;

/// The route label of a request no route matched.
const UNMATCHED: &str = "unmatched";

/// Debug-level request lines logged at most per second.
pub const DEBUG_LINES_PER_SECOND: u64 = 100;

tokio::task_local! {
    /// The id of the request being handled, for problem bodies.
    static CURRENT_ID: Arc<str>;
}

/// The id of the request being handled on this task, if any.
pub(crate) fn current_id() -> Option<String> {
    CURRENT_ID.try_with(|id| id.to_string()).ok()
}

/// Where the tenant extractor leaves the caller's tenant for the log line.
#[derive(Clone, Default)]
pub(crate) struct TenantSlot(Arc<OnceLock<String>>);

impl TenantSlot {
    /// Records the request's tenant (the first one recorded stays).
    pub(crate) fn set(&self, tenant: &str) {
        let _ = self.0.set(tenant.to_owned());
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabels {
    method: &'static str,
    route: String,
    status_class: &'static str,
}

/// The HTTP families of [`crate::Metrics`].
pub(crate) struct HttpMetrics {
    requests: Family<StatusLabels, Counter>,
    durations: Family<ClassLabels, Histogram, fn() -> Histogram>,
}

impl HttpMetrics {
    /// The families, registered in `registry` with `latency` buckets.
    pub(crate) fn register(registry: &mut Registry, latency: fn() -> Histogram) -> Self {
        let m = HttpMetrics {
            requests: Family::default(),
            durations: Family::new_with_constructor(latency),
        };
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, route template and status",
            m.requests.clone(),
        );
        registry.register_with_unit(
            "http_request_duration",
            "HTTP request latency to the response headers, by method, route template and status class (2xx, 4xx, 5xx)",
            Unit::Seconds,
            m.durations.clone(),
        );
        m
    }

    fn observe(&self, method: &'static str, route: &str, status: StatusCode, elapsed: Duration) {
        let labels = StatusLabels {
            method,
            route: route.to_owned(),
            status: status.as_u16(),
        };
        self.requests.get_or_create(&labels).inc();
        let labels = ClassLabels {
            method,
            route: labels.route,
            status_class: status_class(status),
        };
        self.durations
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }
}

fn status_class(status: StatusCode) -> &'static str {
    match status.as_u16() {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// The client's request id when well formed, else a fresh one.
fn request_id(headers: &HeaderMap) -> Arc<str> {
    let given = headers
        .get(&REQUEST_ID)
        .map(HeaderValue::as_bytes)
        .filter(|id| {
            !id.is_empty() && id.len() <= MAX_ID_LEN && id.iter().all(|b| b.is_ascii_graphic())
        })
        .and_then(|id| std::str::from_utf8(id).ok());
    match given {
        Some(id) => id.into(),
        None => uuid::Uuid::new_v4().simple().to_string().into(),
    }
}

/// The middleware: see the module docs.
pub(crate) async fn track(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    use tracing::Instrument as _;
    let started = Instant::now();
    let id = request_id(request.headers());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
        .to_owned();
    let method = method_label(request.method());
    let tenant = TenantSlot::default();
    request.extensions_mut().insert(tenant.clone());
    let span = tracing::info_span!(
        "request",
        method = %method,
        route = %route,
        request_id = %id,
        tenant = tracing::field::Empty,
    );
    let mut response = CURRENT_ID
        .scope(id.clone(), next.run(request))
        .instrument(span)
        .await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let elapsed = started.elapsed();
    let status = response.status();
    state.metrics.http.observe(method, &route, status, elapsed);
    let line = Line {
        method,
        route: &route,
        status,
        elapsed,
        id: &id,
        tenant: tenant.0.get().map(String::as_str),
    };
    line.log();
    response
}

/// One request's log line.
struct Line<'a> {
    method: &'static str,
    route: &'a str,
    status: StatusCode,
    elapsed: Duration,
    id: &'a str,
    tenant: Option<&'a str>,
}

impl Line<'_> {
    fn log(&self) {
        // Milliseconds, to the microsecond.
        let duration_ms = self.elapsed.as_micros() as f64 / 1000.0;
        let status = self.status.as_u16();
        let (method, route, request_id) = (self.method, self.route, self.id);
        let tenant = self.tenant.map(tracing::field::display);
        if self.status.is_server_error() {
            tracing::info!(
                method = %method,
                route = %route,
                status,
                duration_ms,
                request_id = %request_id,
                tenant,
                "request"
            );
            return;
        }
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
        let Some(suppressed) = DEBUG_BUDGET.take() else {
            return;
        };
        let suppressed = (suppressed > 0).then_some(suppressed);
        tracing::debug!(
            method = %method,
            route = %route,
            status,
            duration_ms,
            request_id = %request_id,
            tenant,
            suppressed,
            "request"
        );
    }
}

/// The debug lines left this second: a window of one second, its count,
/// and the lines left out since the last one logged.
struct Budget {
    window: AtomicU64,
    used: AtomicU64,
    suppressed: AtomicU64,
}

static DEBUG_BUDGET: Budget = Budget {
    window: AtomicU64::new(0),
    used: AtomicU64::new(0),
    suppressed: AtomicU64::new(0),
};

/// Seconds since the process's first request, on a monotonic clock.
fn second() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs() + 1
}

impl Budget {
    /// Takes one line: `None` past the cap, else how many lines were left
    /// out before it.
    fn take(&self) -> Option<u64> {
        let now = second();
        let window = self.window.load(Ordering::Relaxed);
        if window != now
            && self
                .window
                .compare_exchange(window, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.used.store(0, Ordering::Relaxed);
        }
        if self.used.fetch_add(1, Ordering::Relaxed) >= DEBUG_LINES_PER_SECOND {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_formed_id_is_kept_and_any_other_replaced() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(REQUEST_ID, HeaderValue::from_str(v).unwrap());
            request_id(&h)
        };
        assert_eq!(&*with("abc-123"), "abc-123");
        assert_eq!(&*with(&"x".repeat(64)), "x".repeat(64));
        for bad in ["", "a b", &"x".repeat(65), "é"] {
            let mut h = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(bad) {
                h.insert(REQUEST_ID, v);
            }
            let id = request_id(&h);
            assert_eq!(id.len(), 32, "{bad:?} replaced by {id}");
        }
    }

    #[test]
    fn debug_lines_are_capped_per_second() {
        let budget = Budget {
            window: AtomicU64::new(second()),
            used: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        };
        let taken = (0..DEBUG_LINES_PER_SECOND + 5)
            .filter(|_| budget.take().is_some())
            .count();
        // A second may turn during the loop; at most the cap twice over.
        assert!(taken as u64 <= 2 * DEBUG_LINES_PER_SECOND);
        assert!(taken as u64 >= DEBUG_LINES_PER_SECOND);
    }
}
