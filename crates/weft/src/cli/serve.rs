//! `weft serve`: the HTTP API over a durable store, with the agents of the
//! given agent files. Any number of servers may share one store: each takes
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
use weft_core::store::RunStore;
use weft_runtime::Runtime;
use weft_server::{AppState, ConnLimits, TenantQuotas, Tenants};

use super::logs::LogFormat;
use crate::agent_file::AgentFile;

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
    /// Runs each tenant may start per minute, per server process (0: no cap).
    #[arg(long, default_value_t = 600)]
    pub runs_per_minute: u32,
    /// Event streams (SSE) each tenant may hold open per server process (0: no cap).
    #[arg(long, default_value_t = 64)]
    pub max_event_streams: u32,
    /// Stored events an event stream reads at a time when it replays.
    #[arg(long, default_value_t = weft_server::DEFAULT_REPLAY_PAGE)]
    pub replay_page: NonZeroU32,
    /// Seconds a kept-alive connection may wait for its next request.
    #[arg(long, default_value_t = 60)]
    pub idle_timeout_secs: u64,
}

impl ServeLimits {
    /// `state` under these limits.
    pub fn apply(&self, state: AppState) -> AppState {
        let conn_limits = ConnLimits {
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            ..state.conn_limits
        };
        state
            .with_tenant_quotas(TenantQuotas {
                max_unfinished_runs: NonZeroU32::new(self.max_unfinished_runs),
                runs_per_minute: NonZeroU32::new(self.runs_per_minute),
                max_event_streams: NonZeroU32::new(self.max_event_streams),
            })
            .with_replay_page(self.replay_page)
            .with_conn_limits(conn_limits)
    }
}

/// The variable holding `tenant=token` pairs.
pub const TOKENS_VAR: &str = "WEFT_TOKENS";

/// Runs the server until ctrl-c.
pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    super::logs::install(args.log_format)?;
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
        let file = AgentFile::load(path)?;
        let planner = file.planner(None)?;
        agents.push(file.agent(planner));
    }
    if agents.is_empty() {
        anyhow::bail!("give at least one agent file with --agent <file>");
    }
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let store = weft_store::connect(&args.db).await?;
        let run_store: Arc<dyn RunStore> = store.clone();
        let mut builder = Runtime::builder()
            .store(run_store)
            .lease_ttl(args.lease_ttl);
        for a in agents {
            builder = builder.agent(a);
        }
        let runtime = builder.build();
        let recovered = runtime.recover_unfinished().await?;
        let sweeper = runtime.start_sweeper();
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        eprintln!(
            "weft: serving on http://{} ({} unfinished run(s) recovered)",
            listener.local_addr()?,
            recovered
        );
        let state = args
            .limits
            .apply(AppState::new(runtime.clone(), store, tenants));
        let served = weft_server::serve(listener, state).await;
        sweeper.abort();
        runtime.shutdown().await;
        served?;
        Ok(ExitCode::SUCCESS)
    })
}
