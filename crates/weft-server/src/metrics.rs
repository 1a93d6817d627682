//! The server's metrics and `GET /metrics`, their Prometheus exposition
//! (OpenMetrics text, which Prometheus scrapes natively). It is the only
//! text format `prometheus-client` writes (the classic `text/plain;
//! version=0.0.4` differs in counter names, `# UNIT` and `# EOF`), so it is
//! served whatever the scraper's `Accept` header asks for.
//!
//! [`Metrics`] is the runtime's [`Observer`]: runs started, finished (by
//! outcome) and failed (by failure), driver errors, steps, tool call
//! latency (by tool), model tokens (by model; the estimated part apart),
//! store commit latency and
//! commit batch size; the server adds the open event streams and its HTTP
//! requests (count and latency by route template, see `requests`). Label values
//! are agent, tool and model names from the configured agents (a tool call
//! runs only once the catalog accepted its tool), so their number is bounded
//! by the configuration.
//!
//! Access: the counters span every tenant, so no tenant token opens them.
//! `/metrics` answers only a scraper's own bearer token
//! ([`MetricsAccess::Token`], `WEFT_METRICS_TOKEN` for `weft serve`), or
//! anyone when the operator says so ([`MetricsAccess::Open`], for a private
//! network); by default it is off and answers 404.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use weft_runtime::observe::{Observation, Observer, failure_kind, outcome_kind};

use crate::AppState;
use crate::error::ApiError;
use crate::requests::HttpMetrics;

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Who may read `GET /metrics`.
#[derive(Clone, Default)]
pub enum MetricsAccess {
    /// Nobody: the route answers 404 (the default).
    #[default]
    Off,
    /// Callers presenting this bearer token (compared in constant time).
    Token(Arc<str>),
    /// Anyone who can reach the server.
    Open,
}

impl std::fmt::Debug for MetricsAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MetricsAccess::Off => "Off",
            MetricsAccess::Token(_) => "Token(..)",
            MetricsAccess::Open => "Open",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabels {
    agent: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    agent: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailedLabels {
    agent: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    step: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    model: String,
    r#type: &'static str,
}

/// Latency buckets: 1 ms to about 65 s.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The server's counters, gauges and histograms; see the module docs.
pub struct Metrics {
    registry: Registry,
    runs_started: Family<AgentLabels, Counter>,
    runs_finished: Family<OutcomeLabels, Counter>,
    runs_failed: Family<FailedLabels, Counter>,
    drive_errors: Family<ReasonLabels, Counter>,
    steps: Family<StepLabels, Counter>,
    tool_calls: Family<ToolLabels, Histogram, fn() -> Histogram>,
    tokens: Family<TokenLabels, Counter>,
    estimated_tokens: Family<TokenLabels, Counter>,
    commit_seconds: Histogram,
    commit_events: Histogram,
    event_streams: Gauge,
    pub(crate) http: HttpMetrics,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric at zero, registered under the `weft_` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("weft");
        let m = Metrics {
            runs_started: Family::default(),
            runs_finished: Family::default(),
            runs_failed: Family::default(),
            drive_errors: Family::default(),
            steps: Family::default(),
            tool_calls: Family::new_with_constructor(latency),
            tokens: Family::default(),
            estimated_tokens: Family::default(),
            commit_seconds: latency(),
            commit_events: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            event_streams: Gauge::default(),
            http: HttpMetrics::register(&mut registry, latency),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register("runs_started", "Runs started", m.runs_started.clone());
        r.register(
            "runs_finished",
            "Runs that reached an outcome (completed, failed, cancelled)",
            m.runs_finished.clone(),
        );
        r.register(
            "runs_failed",
            "Runs that finished failed, by why they failed",
            m.runs_failed.clone(),
        );
        r.register(
            "run_drive_errors",
            "Driver tasks that ended without an outcome (store, lease_lost, panic)",
            m.drive_errors.clone(),
        );
        r.register(
            "run_steps",
            "Run machine steps taken, by kind",
            m.steps.clone(),
        );
        r.register_with_unit(
            "tool_call_duration",
            "Tool call latency, by tool and outcome (ok, error)",
            Unit::Seconds,
            m.tool_calls.clone(),
        );
        r.register(
            "model_tokens",
            "Model tokens, by model and type (input, output)",
            m.tokens.clone(),
        );
        r.register(
            "model_tokens_estimated",
            "The part of model_tokens that weft estimated (about four bytes a token) because the provider reported no usage, by model and type",
            m.estimated_tokens.clone(),
        );
        r.register_with_unit(
            "store_commit_duration",
            "Store commit latency, retries included",
            Unit::Seconds,
            m.commit_seconds.clone(),
        );
        r.register(
            "store_commit_events",
            "Events stored per commit",
            m.commit_events.clone(),
        );
        r.register(
            "event_streams_open",
            "Event streams (SSE) open now",
            m.event_streams.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The exposition text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Counts an event stream as open until the returned guard is dropped.
    pub(crate) fn stream_opened(self: &Arc<Self>) -> OpenStream {
        self.event_streams.inc();
        OpenStream(self.clone())
    }
}

impl Observer for Metrics {
    fn observe(&self, observation: &Observation<'_>) {
        match *observation {
            Observation::RunStarted { agent } => {
                let labels = AgentLabels {
                    agent: agent.to_string(),
                };
                self.runs_started.get_or_create(&labels).inc();
            }
            Observation::RunFinished { agent, outcome } => {
                let labels = OutcomeLabels {
                    agent: agent.to_string(),
                    outcome: outcome_kind(outcome),
                };
                self.runs_finished.get_or_create(&labels).inc();
                if let Some(reason) = failure_kind(outcome) {
                    let labels = FailedLabels {
                        agent: labels.agent,
                        reason,
                    };
                    self.runs_failed.get_or_create(&labels).inc();
                }
            }
            Observation::DriveFailed { reason } => {
                let labels = ReasonLabels {
                    reason: reason.as_str(),
                };
                self.drive_errors.get_or_create(&labels).inc();
            }
            Observation::Step { kind } => {
                let labels = StepLabels {
                    step: kind.as_str(),
                };
                self.steps.get_or_create(&labels).inc();
            }
            Observation::ToolCall {
                tool,
                elapsed,
                failed,
            } => {
                let labels = ToolLabels {
                    tool: tool.to_owned(),
                    outcome: if failed { "error" } else { "ok" },
                };
                self.tool_calls
                    .get_or_create(&labels)
                    .observe(seconds(elapsed));
            }
            Observation::Tokens { model, usage } => {
                for (kind, n) in [
                    ("input", usage.input_tokens),
                    ("output", usage.output_tokens),
                ] {
                    let labels = TokenLabels {
                        model: model.to_owned(),
                        r#type: kind,
                    };
                    self.tokens.get_or_create(&labels).inc_by(n);
                    if usage.estimated {
                        self.estimated_tokens.get_or_create(&labels).inc_by(n);
                    }
                }
            }
            Observation::Commit { elapsed, events } => {
                self.commit_seconds.observe(seconds(elapsed));
                self.commit_events.observe(events as f64);
            }
        }
    }
}

/// An open event stream, counted until dropped.
pub(crate) struct OpenStream(Arc<Metrics>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.event_streams.dec();
    }
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// `GET /metrics`: the exposition, for whoever [`MetricsAccess`] lets in.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "The Prometheus exposition (OpenMetrics text) of the server's runs, steps, tool calls, tokens, commits, open event streams and HTTP requests", content_type = "application/openmetrics-text", body = String),
        (status = 401, description = "Missing or wrong metrics token (not a tenant token)", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 404, description = "Metrics are off on this server", body = crate::error::Problem, content_type = "application/problem+json"),
    ),
    security(("metrics_bearer" = []))
)]
pub(crate) async fn serve_metrics(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    match &state.metrics_access {
        MetricsAccess::Off => {
            return Err(ApiError::NotFound(
                "metrics are off on this server (set WEFT_METRICS_TOKEN)".to_owned(),
            ));
        }
        MetricsAccess::Open => {}
        MetricsAccess::Token(expected) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    let (scheme, token) = v.split_once(' ')?;
                    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
                })
                .ok_or(ApiError::Unauthorized)?;
            use subtle::ConstantTimeEq as _;
            if !bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
                return Err(ApiError::Unauthorized);
            }
        }
    }
    let body = state.metrics.encode();
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    Ok(response)
}
