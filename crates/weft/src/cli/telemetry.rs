//! Traces: the GenAI spans (target `gen_ai`: `invoke_agent`, `chat`,
//! `execute_tool`) exported over OTLP/HTTP in protobuf when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is
//! set, with W3C trace context as the process's propagator.
//!
//! Spans carry only what their code records: the bridge's own attributes
//! (`target`, `code.*`, `thread.*`, busy and idle times) are turned off,
//! and tracing events are not exported (the GenAI events are added to
//! their spans as OpenTelemetry events, with no `level` or `target`).
//!
//! The exporter reads the standard variables itself (endpoint, headers,
//! timeout; `OTEL_SERVICE_NAME`, default `weft`; `OTEL_BSP_*` for the batch
//! processor). Spans are sent in batches from the SDK's own thread with a
//! blocking client, so no export ever waits on the async runtime; the
//! [`Telemetry`] guard flushes and shuts the provider down when dropped.

use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The tracing target of the GenAI spans (the runtime's, the model
/// clients' and the registry's).
pub const GENAI_TARGET: &str = weft_runtime::GENAI_TARGET;

/// The variables that turn the exporter on.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// Keeps the trace exporter running; flushes and stops it when dropped.
#[must_use = "dropping the guard stops the trace exporter"]
#[derive(Default)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn is_exporting(&self) -> bool {
        self.provider.is_some()
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("weft: flushing traces failed: {e}");
        }
    }
}

/// A boxed layer of a subscriber `S`.
pub type BoxedLayer<S> = Box<dyn Layer<S> + Send + Sync>;

/// The trace exporter's layer and its guard, when an endpoint is set: a
/// layer that sees only the GenAI spans.
pub fn layer<S>() -> anyhow::Result<(Option<BoxedLayer<S>>, Telemetry)>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let Some(provider) = provider()? else {
        return Ok((None, Telemetry::default()));
    };
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("weft"))
        .with_target(false)
        .with_location(false)
        .with_threads(false)
        .with_level(false)
        .with_tracked_inactivity(false)
        .with_filter(filter_fn(|meta| {
            meta.is_span() && meta.target() == GENAI_TARGET
        }));
    let telemetry = Telemetry {
        provider: Some(provider),
    };
    Ok((Some(Box::new(layer)), telemetry))
}

/// Installs a subscriber with the trace exporter alone (no log lines), for
/// the commands that print their own output (`weft run`, `weft provider
/// serve`); nothing when no endpoint is set.
pub fn install_traces_only() -> anyhow::Result<Telemetry> {
    let (layer, telemetry) = layer()?;
    if let Some(layer) = layer {
        tracing_subscriber::registry()
            .with(layer)
            .try_init()
            .map_err(|e| anyhow::anyhow!("installing the trace subscriber: {e}"))?;
    }
    Ok(telemetry)
}

/// The tracer provider exporting to the configured endpoint, if any.
fn provider() -> anyhow::Result<Option<SdkTracerProvider>> {
    let set = ENDPOINT_VARS
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
    if !set {
        return Ok(None);
    }
    weft_mcp::client::install_crypto_provider();
    // The blocking client runs its own small runtime thread; it is built
    // here, outside any async runtime.
    let client = rmcp_reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .context("building the OTLP HTTP client")?;
    use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(client)
        .build()
        .context("configuring the OTLP trace exporter (OTEL_EXPORTER_OTLP_*)")?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("weft");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    Ok(Some(provider))
}
