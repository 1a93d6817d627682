//! `weft registry serve`: the tool registry gateway over Redis (register,
//! pong, discovery, calls) with its health pinger, and where its bearer
//! tokens come from (`WEFT_REGISTRY_TOKENS` or `--tokens-file`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use weft_registry::{Gateway, GatewayAuth, GatewayConfig, Namespace, RegistryTokens};

/// The variable holding the gateway's tokens: `caller:NAME=TOKEN`,
/// `provider:NAME=TOKEN:TOOLSET|TOOLSET` and `admin:NAME=TOKEN` entries
/// separated by commas or lines.
pub const TOKENS_VAR: &str = "WEFT_REGISTRY_TOKENS";

/// The variable holding the one token a client of the gateway sends: a
/// caller token for `weft run` and `weft serve`, a provider token for
/// `weft provider serve`.
pub const TOKEN_VAR: &str = "WEFT_REGISTRY_TOKEN";

/// `weft registry`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RegistryCmd {
    /// Serves the registry gateway (register, pong, list, search, call) with its health pinger.
    Serve(RegistryArgs),
}

/// What `weft registry serve` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryArgs {
    /// The Redis URL (`rediss://` for TLS, `redis://user:password@host` for an ACL user).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis: String,
    /// PEM file of the CA a `rediss://` server's certificate must chain to
    /// (default: the system's roots).
    #[arg(long)]
    pub redis_ca_file: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8790")]
    pub addr: String,
    /// Milliseconds between health pings.
    #[arg(long, default_value_t = 10_000)]
    pub ping_interval_ms: u64,
    /// Pongs a toolset may miss before it is unhealthy.
    #[arg(long, default_value_t = 3)]
    pub missed_pongs: u32,
    /// Default bound of a toolset's queue.
    #[arg(long, default_value_t = 10_000)]
    pub max_queue: u64,
    /// The registry's key prefix in Redis (default `weft:registry`).
    #[arg(long)]
    pub namespace: Option<String>,
    /// A file of token entries, one per line; `WEFT_REGISTRY_TOKENS` when absent.
    #[arg(long)]
    pub tokens_file: Option<PathBuf>,
    /// Serves without authentication: anyone who reaches the gateway may
    /// call tools, register toolsets and delete them.
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// Seconds a registration lives without a pong (a provider that went
    /// away without unregistering leaves no toolset behind for longer).
    #[arg(long, default_value_t = 3600)]
    pub registration_ttl_secs: u64,
    /// How log lines are written on stderr.
    #[arg(long, value_enum, default_value_t = super::logs::LogFormat::Text)]
    pub log_format: super::logs::LogFormat,
}

/// Who may use the gateway: the tokens of `--tokens-file` or
/// `WEFT_REGISTRY_TOKENS`, or nobody checked with `--insecure-no-auth`.
fn auth(args: &RegistryArgs) -> anyhow::Result<GatewayAuth> {
    let spec = match &args.tokens_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the tokens file {}", path.display()))?,
        ),
        None => std::env::var(TOKENS_VAR)
            .ok()
            .filter(|s| !s.trim().is_empty()),
    };
    match (spec, args.insecure_no_auth) {
        (Some(_), true) => anyhow::bail!(
            "--insecure-no-auth and registry tokens ({TOKENS_VAR} or --tokens-file) exclude each other"
        ),
        (None, true) => Ok(GatewayAuth::InsecureNoAuth),
        (None, false) => anyhow::bail!(
            "the registry gateway needs tokens: set {TOKENS_VAR} or give --tokens-file \
             (entries `caller:NAME=TOKEN`, `provider:NAME=TOKEN:TOOLSET|TOOLSET`, \
             `admin:NAME=TOKEN`), or pass --insecure-no-auth to serve without authentication"
        ),
        (Some(spec), false) => Ok(GatewayAuth::Tokens(
            RegistryTokens::parse(&spec).context("reading the registry tokens")?,
        )),
    }
}

/// Serves the gateway until ctrl-c or SIGTERM.
pub fn serve(args: RegistryArgs) -> anyhow::Result<ExitCode> {
    let auth = auth(&args)?;
    let _telemetry = super::logs::install(args.log_format)?;
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let redis = super::connect_redis(&args.redis, args.redis_ca_file.as_deref()).await?;
        let insecure = matches!(auth, GatewayAuth::InsecureNoAuth);
        let mut config = GatewayConfig {
            ping_interval: Duration::from_millis(args.ping_interval_ms.max(1)),
            missed_pongs: args.missed_pongs,
            max_queue: args.max_queue,
            auth,
            registration_ttl: Duration::from_secs(args.registration_ttl_secs.max(1)),
            ..GatewayConfig::default()
        };
        if let Some(ns) = args.namespace {
            config.namespace = Namespace::new(ns);
        }
        let gateway = Gateway::new(redis, config)?;
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        if insecure {
            eprintln!(
                "weft: WARNING: the registry gateway serves without authentication (--insecure-no-auth)"
            );
        }
        eprintln!(
            "weft: registry gateway on http://{}",
            listener.local_addr()?
        );
        tokio::select! {
            res = gateway.serve(listener) => res?,
            () = super::stop_requested() => {}
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The token a client of the gateway sends: the first line of `file`, else
/// `WEFT_REGISTRY_TOKEN`, else none.
pub(crate) fn client_token(
    file: Option<&std::path::Path>,
) -> anyhow::Result<Option<weft_registry::BearerToken>> {
    let token = match file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the token file {}", path.display()))?
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        ),
        None => return Ok(env_token(None)),
    };
    Ok(token.and_then(weft_registry::BearerToken::new))
}

/// The token in the variable `var` of weft's environment (default
/// `WEFT_REGISTRY_TOKEN`), if set and not blank.
pub fn env_token(var: Option<&str>) -> Option<weft_registry::BearerToken> {
    std::env::var(var.unwrap_or(TOKEN_VAR))
        .ok()
        .and_then(weft_registry::BearerToken::new)
}
