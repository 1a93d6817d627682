//! The gateway (`weft registry serve`): an HTTP/JSON service over the
//! registry state in Redis. Any number of gateway nodes may share one Redis
//! and answer any request; one of them at a time (a Redis lease decides)
//! pings every toolset ([`health`]). Every endpoint but `/healthz` and
//! `/openapi.json` needs a bearer token ([`GatewayAuth`], [`crate::access`]).

mod auth;
mod clock;
mod health;
mod openapi;
mod problem;
mod routes;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};

use crate::catalog::{Catalog, Namespace};
use crate::conn::Redis;
use crate::error::RegistryError;

pub use auth::GatewayAuth;
pub use openapi::openapi;

/// How a gateway behaves.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The registry's namespace in Redis.
    pub namespace: Namespace,
    /// How often the pinger pings each toolset.
    pub ping_interval: Duration,
    /// Pongs a toolset may miss before it is unhealthy.
    pub missed_pongs: u32,
    /// Default bound of a toolset's queue (unread plus in-progress calls).
    pub max_queue: u64,
    /// How long a result stream lives if nobody reads it.
    pub result_ttl: Duration,
    /// Largest call payload accepted over HTTP, in bytes.
    pub max_payload_bytes: usize,
    /// This node's id, for the pinger lease.
    pub node_id: String,
    /// Who may use it; by default no token, which [`Gateway::new`] refuses.
    pub auth: GatewayAuth,
    /// How long a registration lives without a pong: a provider that went
    /// away without unregistering leaves no toolset behind for longer.
    pub registration_ttl: Duration,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            namespace: Namespace::default(),
            ping_interval: Duration::from_secs(10),
            missed_pongs: 3,
            max_queue: 10_000,
            result_ttl: Duration::from_secs(15 * 60),
            max_payload_bytes: 1 << 20,
            node_id: format!("gw-{}", uuid::Uuid::new_v4().simple()),
            auth: GatewayAuth::default(),
            registration_ttl: Duration::from_secs(60 * 60),
        }
    }
}

impl GatewayConfig {
    /// Age of an unanswered ping past which a toolset is unhealthy:
    /// `(missed + 1) × interval`.
    pub fn stale_after(&self) -> Duration {
        self.ping_interval * (self.missed_pongs + 1)
    }

    /// [`GatewayConfig::registration_ttl`] in milliseconds, at least the
    /// staleness window (a live provider renews it before it runs out).
    pub fn registration_ttl_ms(&self) -> u64 {
        let ttl = self.registration_ttl.max(self.stale_after() * 2);
        u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
    }
}

/// What every request handler shares.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) redis: Redis,
    pub(crate) catalog: Catalog,
    pub(crate) config: Arc<GatewayConfig>,
}

impl Gateway {
    /// A gateway over `redis`; refused without a token unless
    /// authentication is explicitly off ([`GatewayAuth::InsecureNoAuth`]).
    pub fn new(redis: Redis, config: GatewayConfig) -> Result<Self, RegistryError> {
        if matches!(&config.auth, GatewayAuth::Tokens(t) if t.is_empty()) {
            return Err(RegistryError::Config(
                "no registry tokens configured: set WEFT_REGISTRY_TOKENS or give --tokens-file \
                 (caller:NAME=TOKEN, provider:NAME=TOKEN:TOOLSET|TOOLSET, admin:NAME=TOKEN), \
                 or pass --insecure-no-auth to let anyone who reaches the gateway call, \
                 register and delete toolsets"
                    .into(),
            ));
        }
        if config.ping_interval.is_zero() || config.max_queue == 0 {
            return Err(RegistryError::Config(
                "ping_interval and max_queue must be positive".into(),
            ));
        }
        Ok(Self {
            catalog: Catalog::new(redis.clone(), config.namespace.clone()),
            redis,
            config: Arc::new(config),
        })
    }

    /// The HTTP routes.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/healthz", get(routes::healthz))
            .route("/openapi.json", get(openapi::serve))
            .route("/v1/toolsets", post(routes::register).get(routes::list))
            .route(
                "/v1/toolsets/{name}",
                get(routes::get_toolset).delete(routes::unregister),
            )
            .route("/v1/toolsets/{name}/pong", post(routes::pong))
            .route("/v1/toolsets/{name}/tools/{tool}/call", post(routes::call))
            .route("/v1/search", get(routes::search))
            .layer(axum::extract::DefaultBodyLimit::max(
                self.config.max_payload_bytes.saturating_add(64 * 1024),
            ))
            .with_state(self.clone())
    }

    /// Serves on `listener` and runs the pinger until the listener fails
    /// or the future is dropped (the pinger stops with it).
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let _pinger = AbortOnDrop(tokio::spawn(health::run(self.clone())));
        axum::serve(listener, self.router()).await
    }

    /// Runs only the pinger (for embedding the gateway in another server).
    pub fn spawn_pinger(&self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(health::run(self.clone()))
    }
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
