//! weft-server: the HTTP API of the weft runtime (axum), and the only crate
//! that knows HTTP.
//!
//! [`app`] builds the router from an [`AppState`] (tests call it without a
//! socket); [`serve`] runs it on a listener until ctrl-c, and
//! [`serve_with_shutdown`] until any future completes. Both end open event
//! streams when shutting down, so graceful shutdown does not wait forever
//! on Server-Sent Events clients.
//!
//! Architecture invariant: the server holds no run state of its own. Runs
//! live in the runtime and the store; handlers translate HTTP into
//! [`weft_runtime::Runtime`] and store calls, and errors into RFC 9457
//! problems ([`ApiError`]).
//!
//! Organization:
//! - [`auth`]: bearer tokens per tenant ([`Tenants`], parsed from
//!   `tenant-a=tok1,tenant-b=tok2`) and the [`Tenant`] extractor. Sessions and
//!   runs carry the label `weft.tenant`; another tenant's resource is a 404.
//! - [`error`]: [`ApiError`], the single error type, as `application/problem+json`.
//! - [`json`]: [`JsonBody`], body extraction that names the faulty field;
//!   `clip`: how much of a client's input an error may repeat.
//! - [`dto`]: request and response bodies (the sessions' in
//!   `session_bodies`, re-exported there).
//! - `agents` (the served agents), `sessions`, `runs`, `events` (SSE),
//!   `control` (answers, pause, continue, cancel): the handlers; `access`:
//!   the tenant and input checks they share;
//!   `listing`: a tenant's runs and sessions as the store lists them;
//!   `prompts`: a tenant's prompt overrides (list, set, clear).
//! - `quota`: per-tenant quotas ([`TenantQuotas`]) on unfinished runs, starts
//!   per minute and open event streams.
//! - `listen`, `activity` and `crowd`: the accept loop, each connection's
//!   timeouts ([`ConnLimits`]) and the connection limit, with places kept
//!   for probes; `share`: fair shares (connections per peer address,
//!   requests in flight per tenant).
//! - `openapi`: the document served at `/openapi.json`, with the schemas of
//!   weft-core's shapes in `message_schema`, `await_schema`, `event_schema`
//!   and `elicit_schema`.
//! - `requests`: each request's id (`x-request-id`, echoed and named in
//!   problem bodies), its log line and its HTTP metrics.
//! - `ui`: the run viewer, static files from `ui/` embedded in the binary
//!   and served at `/ui/`; a browser client of the API, not part of it.
//!
//! Every limit is on by default and set on [`AppState`]: the body limit,
//! [`ConnLimits`], [`TenantQuotas`] and the catch-up page.
//!
//! Runs created outside the server (without a `weft.tenant` label) are
//! visible to no tenant.
//!
//! - [`metrics`]: [`Metrics`] (the runtime's observer) and `GET /metrics`,
//!   behind its own token ([`MetricsAccess`]).
//!
//! Endpoints: `GET /healthz`, `GET /openapi.json`, `GET /metrics`, the viewer at
//! `GET /ui/`, and under `/v1`: `GET /agents`,
//! `POST|GET /sessions`, `GET|DELETE /sessions/{id}`, `POST /sessions/{id}/end`,
//! `POST|GET /runs`, `GET /runs/{id}`, `GET /runs/{id}/events` (SSE),
//! `POST /runs/{id}/answers`, `POST /runs/{id}/pause|continue|cancel`,
//! `POST|GET /prompts`, `POST /prompts/clear`.
//!
//! With `WEFT_TOKENS="acme=tok1"`, a client starts a run, follows its events
//! and answers an await like this:
//!
//! ```text
//! curl -H 'Authorization: Bearer tok1' -H 'Content-Type: application/json' \
//!      -d '{"agent": "assistant", "input": "Plan my trip"}' localhost:8080/v1/runs
//! curl -N -H 'Authorization: Bearer tok1' -H 'Last-Event-ID: 0' \
//!      localhost:8080/v1/runs/RUN_ID/events
//! curl -H 'Authorization: Bearer tok1' -H 'Content-Type: application/json' \
//!      -d '{"item_id": "which", "answer": {"kind": "clarification", "text": "Lisbon"}}' \
//!      localhost:8080/v1/runs/RUN_ID/answers
//! ```
//!
//! Wiring (what `weft serve` does): open the store with `weft_store::connect`,
//! build the runtime on it, recover unfinished runs, then serve:
//!
//! ```text
//! let store = weft_store::connect("weft.db").await?;
//! let runtime = Runtime::builder().store(store.clone()).agent(agent).build();
//! runtime.recover_unfinished().await?;
//! let tenants = Tenants::parse(&std::env::var("WEFT_TOKENS")?)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! weft_server::serve(listener, AppState::new(runtime, store, tenants)).await?;
//! ```

mod a2a;
mod access;
mod activity;
mod agents;
pub mod auth;
mod await_schema;
mod clip;
mod control;
mod crowd;
pub mod dto;
mod elicit_schema;
pub mod error;
mod event_schema;
mod events;
pub mod json;
mod listen;
mod listing;
mod message_schema;
pub mod metrics;
mod openapi;
mod outcome_schema;
mod prompts;
mod quota;
mod requests;
mod runs;
mod session_bodies;
mod sessions;
mod share;
mod ui;

use std::future::Future;
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::sync::watch;
use weft_core::session::FullStore;
use weft_runtime::Runtime;

pub use auth::{TENANT_LABEL, Tenant, Tenants, TokensError};
pub use error::{ApiError, BoxError, FieldError, Problem};
pub use json::JsonBody;
pub use listen::ConnLimits;
pub use metrics::{Metrics, MetricsAccess};
pub use openapi::openapi;
pub use quota::TenantQuotas;
pub use requests::{DEBUG_LINES_PER_SECOND, REQUEST_ID};
pub use ui::{CONTENT_SECURITY_POLICY, UI_PATH};

/// The default request body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// The default number of stored events an event stream reads at a time.
pub const DEFAULT_CATCH_UP_PAGE: NonZeroU32 = NonZeroU32::new(256).unwrap();

/// What the handlers share: the runtime, the store behind it, and the tenants.
#[derive(Clone)]
pub struct AppState {
    /// Drives runs; its store must be the same object as `sessions`.
    pub runtime: Runtime,
    /// Sessions, and runs read back for views.
    pub sessions: Arc<dyn FullStore>,
    /// Which tenant each bearer token belongs to.
    pub tenants: Arc<Tenants>,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// Connection limits: header-read and idle timeouts, open connections,
    /// shutdown grace.
    pub conn_limits: ConnLimits,
    /// How many stored events an event stream reads at a time, so a catch-up
    /// from far back holds one page in memory, not the whole log.
    pub catch_up_page: NonZeroU32,
    /// The metrics `GET /metrics` shows; the runtime's observer should be
    /// the same object, so runs and tool calls are counted.
    pub metrics: Arc<Metrics>,
    /// Who may read `GET /metrics` (nobody by default).
    pub metrics_access: MetricsAccess,
    /// The URL clients reach the server at, for A2A cards (the request's
    /// `Host` when unset).
    pub public_url: Option<String>,
    /// One permit per open A2A stream.
    pub(crate) a2a_streams: Arc<tokio::sync::Semaphore>,
    quotas: Arc<quota::Quotas>,
    shutdown: watch::Sender<bool>,
}

impl AppState {
    /// The state of a server over `runtime`, whose store is `sessions`.
    pub fn new(runtime: Runtime, sessions: Arc<dyn FullStore>, tenants: Tenants) -> Self {
        Self {
            runtime,
            sessions,
            tenants: Arc::new(tenants),
            body_limit: DEFAULT_BODY_LIMIT,
            conn_limits: ConnLimits::default(),
            catch_up_page: DEFAULT_CATCH_UP_PAGE,
            metrics: Arc::new(Metrics::new()),
            metrics_access: MetricsAccess::Off,
            public_url: None,
            a2a_streams: Arc::new(tokio::sync::Semaphore::new(weft_a2a::MAX_STREAMS)),
            quotas: quota::Quotas::new(TenantQuotas::default()),
            shutdown: watch::channel(false).0,
        }
    }

    /// Sets the request body limit in bytes.
    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Sets the connection limits.
    pub fn with_conn_limits(mut self, limits: ConnLimits) -> Self {
        self.conn_limits = limits;
        self
    }

    /// Sets the per-tenant quotas, with nothing counted yet.
    pub fn with_tenant_quotas(mut self, quotas: TenantQuotas) -> Self {
        self.quotas = quota::Quotas::new(quotas);
        self
    }

    /// The per-tenant quotas applied.
    pub fn tenant_quotas(&self) -> TenantQuotas {
        self.quotas.limits()
    }

    /// Sets the URL clients reach the server at, for A2A cards.
    pub fn with_public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into());
        self
    }

    /// Sets how many stored events an event stream reads at a time.
    pub fn with_catch_up_page(mut self, events: NonZeroU32) -> Self {
        self.catch_up_page = events;
        self
    }

    /// Serves `metrics` at `GET /metrics` to whoever `access` lets in.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>, access: MetricsAccess) -> Self {
        self.metrics = metrics;
        self.metrics_access = access;
        self
    }

    /// A fresh id with `prefix`, unique across processes with high probability.
    pub(crate) fn new_id(&self, prefix: &str) -> String {
        // A v7 UUID: 74 random bits after the millisecond timestamp, so no
        // client can guess, probe or take another tenant's next id, and
        // ids sort by creation time, so a new run's or session's rows go
        // after older ones' in the store's indexes.
        let now = uuid::Timestamp::now(uuid::NoContext);
        format!("{prefix}_{}", uuid::Uuid::new_v7(now).simple())
    }

    /// Resolves when the server begins shutting down.
    pub(crate) fn shutting_down(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.shutdown.subscribe();
        async move {
            let _ = rx.wait_for(|down| *down).await;
        }
    }
}

/// The current time as a weft timestamp.
pub(crate) fn now() -> weft_core::Timestamp {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    weft_core::Timestamp::from_millis(u64::try_from(millis).unwrap_or(u64::MAX))
}

/// The API router.
pub fn app(state: AppState) -> Router {
    let limit = state.body_limit;
    Router::new()
        .route("/healthz", get(runs::health))
        .route("/openapi.json", get(openapi::serve_document))
        .route("/metrics", get(metrics::serve_metrics))
        .route(
            "/v1/sessions",
            post(sessions::create_session).get(sessions::list_sessions),
        )
        .route(
            "/v1/sessions/{session_id}",
            get(sessions::get_session).delete(sessions::delete_session),
        )
        .route("/v1/sessions/{session_id}/end", post(sessions::end_session))
        .route("/v1/agents", get(agents::list_agents))
        .route("/v1/runs", post(runs::start_run).get(runs::list_runs))
        .route("/v1/runs/{run_id}", get(runs::get_run))
        .route("/v1/runs/{run_id}/events", get(events::run_events))
        .route("/v1/runs/{run_id}/answers", post(control::answer_await))
        .route("/v1/runs/{run_id}/pause", post(control::pause_run))
        .route("/v1/runs/{run_id}/continue", post(control::continue_run))
        .route("/v1/runs/{run_id}/cancel", post(control::cancel_run))
        .route(
            "/v1/prompts",
            post(prompts::set_prompt).get(prompts::list_prompts),
        )
        .route("/v1/prompts/clear", post(prompts::clear_prompt))
        .route(
            "/a2a/{agent}/.well-known/agent-card.json",
            get(a2a::agent_card),
        )
        .route("/a2a/{agent}", post(a2a::endpoint))
        .route("/a2a/{agent}/v0.3", post(a2a::endpoint_v03))
        .merge(ui::routes())
        .fallback(|| async { ApiError::NotFound("no such route".to_owned()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            requests::track,
        ))
        .with_state(state)
}

/// Serves the API on `listener` until ctrl-c, then shuts down gracefully.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    serve_with_shutdown(listener, state, async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for ctrl-c; serving until killed");
            std::future::pending::<()>().await;
        }
    })
    .await
}

/// Serves the API on `listener` until `signal` completes, then stops
/// accepting connections, ends open event streams and waits for in-flight
/// requests.
pub async fn serve_with_shutdown(
    listener: tokio::net::TcpListener,
    state: AppState,
    signal: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let shutdown = state.shutdown.clone();
    let limits = state.conn_limits;
    let router = app(state);
    listen::accept_loop(listener, router, limits, signal, move || {
        shutdown.send_replace(true);
    })
    .await
}
