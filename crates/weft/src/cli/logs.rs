//! Logs of the long-running commands (`weft serve`, `weft registry serve`,
//! `weft provider serve`): a tracing subscriber on stderr, human-readable by
//! default or one JSON object per line, its level from `RUST_LOG` (default
//! `info`). Spans carry the run id, the tenant and the tool call id.

use anyhow::Context as _;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event, with its spans.
    Json,
}

/// Installs the process's log subscriber. A malformed `RUST_LOG` is an error
/// that says so, not a silent default.
pub fn install(format: LogFormat) -> anyhow::Result<()> {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env()
        .context("reading RUST_LOG")?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
    };
    installed.map_err(|e| anyhow::anyhow!("installing the log subscriber: {e}"))
}
