//! Logs of the long-running commands (`weft serve`, `weft registry serve`,
//! `weft provider serve`): a tracing subscriber on stderr, human-readable by
//! default (coloured only when stderr is a terminal) or one JSON object per
//! line, its level from `RUST_LOG` (default `info`). Spans carry the run
//! id, the tenant and the tool call id, and each request's log line its
//! route, status and request id (see `weft_server`'s `requests`). The
//! GenAI spans (target `gen_ai`) stay out of log lines; they go to the
//! trace exporter when one is configured ([`super::telemetry`]).

use std::io::IsTerminal as _;

use anyhow::Context as _;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{FilterExt as _, LevelFilter, filter_fn};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use super::telemetry::{self, GENAI_TARGET, Telemetry};

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event, with its spans.
    Json,
}

/// Installs the process's log subscriber, with the trace exporter when one
/// is configured; the returned guard flushes traces when dropped. A
/// malformed `RUST_LOG` is an error that says so, not a silent default.
pub fn install(format: LogFormat) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env()
        .context("reading RUST_LOG")?
        .and(filter_fn(|meta| meta.target() != GENAI_TARGET));
    // Colour codes only for a terminal: a log redirected to a file or a
    // pipe stays plain text.
    let colour = std::io::stderr().is_terminal();
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    let fmt = match format {
        LogFormat::Text => fmt.with_filter(filter).boxed(),
        LogFormat::Json => fmt
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_filter(filter)
            .boxed(),
    };
    let (traces, telemetry) = telemetry::layer()?;
    tracing_subscriber::registry()
        .with(fmt)
        .with(traces)
        .try_init()
        .map_err(|e| anyhow::anyhow!("installing the log subscriber: {e}"))?;
    Ok(telemetry)
}
