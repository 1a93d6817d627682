//! `weft serve`: the HTTP API over a durable store, with the agents of the
//! given agent files (also A2A agents at `/a2a/{agent}`, behind the same
//! tenant tokens). Any number of servers may share one store: each takes
//! over runs nobody holds (a dead server's, once their leases lapse, and
//! queued ones) as it starts and every half lease TTL after; on shutdown it
//! frees the leases of the runs it drove, so the others continue them at once.
//! [`ServeLimits`] are the server's limits as flags.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use weft_runtime::Runtime;
use weft_server::{AppState, ConnLimits, Metrics, MetricsAccess, TenantQuotas, Tenants};

use super::logs::LogFormat;

/// What `weft serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeArgs {
    /// Agent files to serve.
    pub agents: Vec<PathBuf>,
    /// The store URL (SQLite path or `postgres://`).
    pub db: String,
    /// Address to listen on.
    pub addr: String,
    /// A file of `tenant=token` entries; `WEFT_TOKENS` when absent.
    pub tokens_file: Option<PathBuf>,
    /// How log lines are written.
    pub log_format: LogFormat,
    /// How long a run's lease lasts unless renewed.
    pub lease_ttl: std::time::Duration,
    /// What the store's commits survive; `sync` when absent.
    pub durability: Option<weft_store::Durability>,
    /// The base URL clients reach the server at (A2A cards); the request's
    /// `Host` when absent.
    pub public_url: Option<String>,
    /// The server's limits.
    pub limits: ServeLimits,
}

/// The limits of `weft serve` a flag can change; every one is on by default.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeLimits {
    /// Runs each tenant may have running, awaiting or paused at once, across
    /// every server on the store (0: no cap).
    #[arg(long, default_value_t = 100)]
    pub max_unfinished_runs: u32,
    /// Runs each tenant may start in any 60 s, across every server on the
    /// store (0: no cap).
    #[arg(long, default_value_t = 600)]
    pub runs_per_minute: u32,
    /// Event streams (SSE) each tenant may hold open per server process (0: no cap).
    #[arg(long, default_value_t = 64)]
    pub max_event_streams: u32,
    /// Stored events an event stream reads at a time when it catches up.
    #[arg(long, alias = "replay-page", default_value_t = weft_server::DEFAULT_CATCH_UP_PAGE)]
    pub catch_up_page: NonZeroU32,
    /// Seconds a kept-alive connection may wait for its next request.
    #[arg(long, default_value_t = 60)]
    pub idle_timeout_secs: u64,
    /// Seconds a client has to send a request's whole body (past it: 408).
    #[arg(long, default_value_t = 30)]
    pub body_read_timeout_secs: u64,
    /// Runs this server drives at once; runs started past it wait in the
    /// store's queue for whichever server on the store has room.
    #[arg(long, default_value_t = weft_runtime::DEFAULT_MAX_DRIVEN_RUNS)]
    pub max_driven_runs: usize,
    /// Requests one tenant may have in flight at once, event streams
    /// included (past it: 429 before the body is read).
    #[arg(long, default_value_t = ConnLimits::default().max_requests_per_tenant)]
    pub max_requests_per_tenant: usize,
    /// Connections one client address may hold open at once (behind a
    /// reverse proxy every client shares its address: raise it).
    #[arg(long, default_value_t = ConnLimits::default().max_connections_per_peer)]
    pub max_connections_per_peer: usize,
}

impl ServeLimits {
    /// `state` under these limits.
    pub fn apply(&self, state: AppState) -> AppState {
        let conn_limits = ConnLimits {
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            body_read_timeout: Duration::from_secs(self.body_read_timeout_secs),
            max_requests_per_tenant: self.max_requests_per_tenant,
            max_connections_per_peer: self.max_connections_per_peer,
            ..state.conn_limits
        };
        state
            .with_tenant_quotas(TenantQuotas {
                max_unfinished_runs: NonZeroU32::new(self.max_unfinished_runs),
                runs_per_minute: NonZeroU32::new(self.runs_per_minute),
                max_event_streams: NonZeroU32::new(self.max_event_streams),
            })
            .with_catch_up_page(self.catch_up_page)
            .with_conn_limits(conn_limits)
    }
}

/// The variable holding `tenant=token` pairs.
pub const TOKENS_VAR: &str = "WEFT_TOKENS";

/// The variable holding the bearer token that reads `GET /metrics`; without
/// it, `/metrics` is off.
pub const METRICS_TOKEN_VAR: &str = "WEFT_METRICS_TOKEN";

/// Who may read `GET /metrics`: the holder of `WEFT_METRICS_TOKEN`, or nobody.
fn metrics_access() -> MetricsAccess {
    match std::env::var(METRICS_TOKEN_VAR) {
        Ok(token) if !token.trim().is_empty() => MetricsAccess::Token(token.trim().into()),
        _ => MetricsAccess::Off,
    }
}

/// Runs the server until ctrl-c.
pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Flushes the traces when `serve` returns.
    let _telemetry = super::logs::install(args.log_format)?;
    let spec = match &args.tokens_file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the tokens file {}", path.display()))?,
        None => std::env::var(TOKENS_VAR).with_context(|| {
            format!("give --tokens-file <file of tenant=token lines> or set {TOKENS_VAR}")
        })?,
    };
    let tenants = Tenants::parse(&spec).context("reading the tenant tokens")?;
    let mut agents = Vec::new();
    for path in &args.agents {
        // An agent's agent tools bring their agents in with it.
        for agent in crate::agent_file::load_team(path, None)? {
            if !agents
                .iter()
                .any(|a: &weft_runtime::Agent| a.id() == agent.id())
            {
                agents.push(agent);
            }
        }
    }
    if agents.is_empty() {
        anyhow::bail!("give at least one agent file with --agent <file>");
    }
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let store = weft_store::connect_with(&args.db, args.durability).await?;
        let metrics = Arc::new(Metrics::new());
        let mut builder = Runtime::builder()
            .session_store(store.clone())
            .prompts(store.clone())
            .lease_ttl(args.lease_ttl)
            .max_driven_runs(args.limits.max_driven_runs)
            .observer(metrics.clone());
        for a in agents {
            builder = builder.agent(a);
        }
        let runtime = builder.build();
        let recovered = runtime.recover_unfinished().await?;
        let sweeper = runtime.start_sweeper();
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        let addr = listener.local_addr()?;
        eprintln!(
            "weft: serving on http://{addr} ({recovered} unfinished run(s) recovered); run viewer at http://{addr}{}",
            weft_server::UI_PATH
        );
        let mut state =
            AppState::new(runtime.clone(), store, tenants).with_metrics(metrics, metrics_access());
        if let Some(url) = args.public_url {
            state = state.with_public_url(url);
        }
        let state = args.limits.apply(state);
        let served = weft_server::serve(listener, state).await;
        sweeper.abort();
        runtime.shutdown().await;
        served?;
        Ok(ExitCode::SUCCESS)
    })
}
