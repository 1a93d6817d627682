//! `weft registry serve`: the tool registry gateway over Redis (register,
//! pong, discovery, calls) with its health pinger.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use weft_registry::{Gateway, GatewayConfig, Namespace};

/// `weft registry`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RegistryCmd {
    /// Serves the registry gateway (register, pong, list, search, call) with its health pinger.
    Serve {
        /// The Redis URL.
        #[arg(long, default_value = "redis://127.0.0.1:6379")]
        redis: String,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8790")]
        addr: String,
        /// Milliseconds between health pings.
        #[arg(long, default_value_t = 10_000)]
        ping_interval_ms: u64,
        /// Pongs a toolset may miss before it is unhealthy.
        #[arg(long, default_value_t = 3)]
        missed_pongs: u32,
        /// Default bound of a toolset's queue.
        #[arg(long, default_value_t = 10_000)]
        max_queue: u64,
        /// The registry's key prefix in Redis (default `weft:registry`).
        #[arg(long)]
        namespace: Option<String>,
    },
}

/// What `weft registry serve` was asked to do.
#[derive(Debug, Clone)]
pub struct RegistryArgs {
    /// The Redis URL.
    pub redis: String,
    /// Address to listen on.
    pub addr: String,
    /// Milliseconds between health pings.
    pub ping_interval_ms: u64,
    /// Pongs a toolset may miss before it is unhealthy.
    pub missed_pongs: u32,
    /// Default queue bound per toolset.
    pub max_queue: u64,
    /// The registry's key prefix in Redis.
    pub namespace: Option<String>,
}

/// Serves the gateway until ctrl-c.
pub fn serve(args: RegistryArgs) -> anyhow::Result<ExitCode> {
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let redis = super::connect_redis(&args.redis).await?;
        let mut config = GatewayConfig {
            ping_interval: Duration::from_millis(args.ping_interval_ms.max(1)),
            missed_pongs: args.missed_pongs,
            max_queue: args.max_queue,
            ..GatewayConfig::default()
        };
        if let Some(ns) = args.namespace {
            config.namespace = Namespace::new(ns);
        }
        let gateway = Gateway::new(redis, config)?;
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        eprintln!(
            "weft: registry gateway on http://{}",
            listener.local_addr()?
        );
        tokio::select! {
            res = gateway.serve(listener) => res?,
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok(ExitCode::SUCCESS)
    })
}
