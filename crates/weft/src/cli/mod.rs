//! The `weft` command's subcommands; `main.rs` only parses and dispatches.

pub mod a2a;
pub mod admin;
pub mod ask;
pub mod logs;
pub mod mcp;
#[cfg(feature = "local")]
pub mod models;
pub mod prompts;
pub mod provider;
pub mod registry;
pub mod replay;
pub mod run;
pub mod serve;
pub mod telemetry;

/// A multi-threaded async runtime for one command.
pub(crate) fn async_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Resolves when the process is asked to stop: ctrl-c (SIGINT) or, on
/// Unix, SIGTERM (what a service manager or a container runtime sends).
pub(crate) async fn stop_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Opens the store at `db` for a command that reads it: a SQLite file that
/// does not exist is an error, not a new empty store (a mistyped `--db`
/// would otherwise list nothing and exit 0).
pub(crate) async fn existing_store(
    db: &str,
) -> anyhow::Result<std::sync::Arc<dyn weft_core::session::FullStore>> {
    let path = db
        .strip_prefix("sqlite://")
        .or_else(|| db.strip_prefix("sqlite:"))
        .unwrap_or(db);
    if !path.contains("://") && !std::path::Path::new(path).exists() {
        anyhow::bail!(
            "no store at `{db}`: --db names an existing SQLite file or a postgres:// URL"
        );
    }
    Ok(weft_store::connect(db).await?)
}

/// A runtime builder with `agent`, on the store at `db` when one is given
/// (in memory otherwise), whose commits survive what `durability` says.
pub(crate) async fn runtime_for(
    agent: weft_runtime::Agent,
    db: Option<&str>,
    durability: Option<weft_store::Durability>,
) -> anyhow::Result<weft_runtime::RuntimeBuilder> {
    let mut builder = weft_runtime::Runtime::builder().agent(agent);
    if let Some(url) = db {
        let store = weft_store::connect_with(url, durability).await?;
        builder = builder.session_store(store.clone()).prompts(store);
    }
    Ok(builder)
}

/// Connects to Redis at `url` (a `rediss://` one trusting the CA of
/// `ca_file` when given), saying where on failure without the password.
pub(crate) async fn connect_redis(
    url: &str,
    ca_file: Option<&std::path::Path>,
) -> anyhow::Result<weft_registry::Redis> {
    use anyhow::Context;
    let ca_pem = match ca_file {
        Some(path) => Some(
            std::fs::read(path)
                .with_context(|| format!("reading the Redis CA file {}", path.display()))?,
        ),
        None => None,
    };
    let options = weft_registry::RedisOptions {
        ca_pem,
        ..weft_registry::RedisOptions::default()
    };
    weft_registry::Redis::connect_opts(url, options)
        .await
        .with_context(|| {
            format!(
                "connecting to Redis at {}",
                weft_registry::conn::redacted(url)
            )
        })
}

/// `e` and its causes on one line, each said once: an error whose message
/// already quotes its cause (`cannot read agent file x: No such file ...`)
/// is not followed by that cause again.
pub fn one_message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let said = cause.to_string();
        if said.is_empty() || out.contains(&said) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&said);
    }
    out
}
