//! `weft provider serve <agent-file-or-toolset>`: serves built-in toolsets
//! (named, or those an agent file lists) to the registry from Redis,
//! registering them with a provider token (`WEFT_REGISTRY_TOKEN` or
//! `--token-file`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use weft_registry::{GatewayClient, Provider, ProviderConfig};
use weft_tools::ToolSet;

use crate::agent_file::AgentFile;
use crate::builtin;
use crate::toolset_spec::{ToolsetSpec, ToolsetTable};

/// What `weft provider serve` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct ProviderArgs {
    /// An agent file, or a built-in toolset's name (`calc`, `text`, `journal`).
    pub source: String,
    /// The registry gateway's URL.
    #[arg(long, default_value = "http://127.0.0.1:8790")]
    pub gateway: String,
    /// The Redis URL (`rediss://` for TLS, `redis://user:password@host` for an ACL user).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis: String,
    /// PEM file of the CA a `rediss://` server's certificate must chain to.
    #[arg(long)]
    pub redis_ca_file: Option<PathBuf>,
    /// A file whose first line is the provider token; `WEFT_REGISTRY_TOKEN` when absent.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Most calls at once per toolset.
    #[arg(long, default_value_t = 32)]
    pub max_concurrent: usize,
    /// Milliseconds before another provider may claim an unfinished call.
    #[arg(long, default_value_t = 30_000)]
    pub claim_grace_ms: u64,
    /// The registry name to serve a single toolset under (default: its own name).
    #[arg(long)]
    pub name: Option<String>,
    /// Keep the registration when stopping (by default the toolset is
    /// unregistered at the gateway on ctrl-c or SIGTERM).
    #[arg(long)]
    pub keep_registration: bool,
    /// How log lines are written on stderr.
    #[arg(long, value_enum, default_value_t = super::logs::LogFormat::Text)]
    pub log_format: super::logs::LogFormat,
}

/// Serves until ctrl-c or SIGTERM; in-flight calls finish first, then the
/// toolsets are unregistered.
pub fn serve(args: ProviderArgs) -> anyhow::Result<ExitCode> {
    let _telemetry = super::logs::install(args.log_format)?;
    let toolsets = toolsets(&args.source)?;
    if args.name.is_some() && toolsets.len() > 1 {
        anyhow::bail!(
            "--name needs exactly one toolset; {} has {}",
            args.source,
            toolsets.len()
        );
    }
    let token = super::registry::client_token(args.token_file.as_deref())?;
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let redis = super::connect_redis(&args.redis, args.redis_ca_file.as_deref()).await?;
        let gateway = GatewayClient::new(&args.gateway)?.with_token(token);
        let mut tasks = Vec::new();
        let (stop_tx, _) = tokio::sync::broadcast::channel::<()>(1);
        for ts in toolsets {
            let config = ProviderConfig {
                max_concurrent: args.max_concurrent.max(1),
                claim_grace: Duration::from_millis(args.claim_grace_ms.max(1)),
                unregister_on_stop: !args.keep_registration,
                ..ProviderConfig::default()
            };
            let name = args.name.clone().unwrap_or_else(|| ts.name().to_owned());
            let provider = Provider::new(redis.clone(), &name, ts, Some(gateway.clone()), config)
                .await
                .with_context(|| format!("preparing toolset `{name}`"))?;
            provider
                .register()
                .await
                .with_context(|| format!("registering toolset `{name}` at {}", args.gateway))?;
            eprintln!("weft: serving toolset `{name}` to {}", args.gateway);
            let mut stop = stop_tx.subscribe();
            tasks.push(tokio::spawn(async move {
                provider
                    .serve(async move {
                        let _ = stop.recv().await;
                    })
                    .await
            }));
        }
        super::stop_requested().await;
        let _ = stop_tx.send(());
        for t in tasks {
            t.await??;
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The built-in toolsets `source` names: a toolset's name, or an agent
/// file's built-in toolsets.
fn toolsets(source: &str) -> anyhow::Result<Vec<Arc<dyn ToolSet>>> {
    if let Some(ts) = builtin::by_name(source) {
        return Ok(vec![ts]);
    }
    if !Path::new(source).exists() {
        anyhow::bail!(
            "`{source}` is neither an agent file nor a built-in toolset ({})",
            builtin::NAMES.join(", ")
        );
    }
    let file = AgentFile::load(Path::new(source))?;
    let out: Vec<_> = file
        .toolsets
        .iter()
        // Built-in and MCP toolsets are served; a registry toolset is
        // already served by its own providers.
        .filter_map(|e| match e {
            ToolsetSpec::Table(ToolsetTable::Registry(_)) => None,
            other => other.build(),
        })
        .collect();
    if out.is_empty() {
        anyhow::bail!("{source} names no built-in or MCP toolset to serve");
    }
    Ok(out)
}
