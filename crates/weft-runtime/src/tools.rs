//! Tool execution for a run: routing calls to toolsets, per-call timeouts,
//! panics and cancellation turned into tool errors, and the payload budget.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::Value;
use weft_core::run::ToolCall;
use weft_core::tool::{
    Omission, RetryHint, RetryReason, Telemetry, ToolError, ToolIdent, ToolOutput, ToolRequest,
    ToolResultBody, ToolSpec,
};
use weft_tools::{SchemaCatalog, ToolSet};

/// An agent's tools, listed once: specs, the validating catalog and routing.
pub(crate) struct AgentTools {
    pub(crate) specs: Vec<ToolSpec>,
    pub(crate) catalog: SchemaCatalog,
    route: HashMap<String, usize>,
    toolsets: Vec<Arc<dyn ToolSet>>,
    /// Toolsets whose tools could not be listed (they failed to start), with why.
    pub(crate) unavailable: Vec<(String, ToolError)>,
}

impl AgentTools {
    /// Lists every toolset's tools and builds the catalog. A toolset that
    /// cannot list its tools is left out and named in `unavailable`.
    pub(crate) async fn load(toolsets: &[Arc<dyn ToolSet>]) -> Result<Self, CatalogError> {
        let mut specs = Vec::new();
        let mut route = HashMap::new();
        let mut unavailable = Vec::new();
        for (i, ts) in toolsets.iter().enumerate() {
            if route.insert(ts.name().to_owned(), i).is_some() {
                return Err(CatalogError::DuplicateToolset(ts.name().to_owned()));
            }
            match ts.list_tools().await {
                Ok(listed) => specs.extend(listed),
                Err(e) => unavailable.push((ts.name().to_owned(), e)),
            }
        }
        let catalog = SchemaCatalog::new(specs.clone())?;
        Ok(Self {
            specs,
            catalog,
            route,
            toolsets: toolsets.to_vec(),
            unavailable,
        })
    }

    /// The spec of `tool`.
    pub(crate) fn spec(&self, tool: &ToolIdent) -> Option<&ToolSpec> {
        self.specs.iter().find(|s| &s.name == tool)
    }

    /// Whether `tool`'s toolset can ask the user for input while a call runs
    /// (it answers the elicitation capability).
    pub(crate) fn can_elicit(&self, tool: &ToolIdent) -> bool {
        self.route
            .get(tool.toolset())
            .is_some_and(|&i| weft_tools::find_elicitation(&*self.toolsets[i]).is_some())
    }

    /// Executes one call, never failing: every problem becomes an error output.
    pub(crate) fn execute(
        &self,
        call: &ToolCall,
        request: ToolRequest,
        limits: Limits,
    ) -> impl Future<Output = ToolOutput> + Send + 'static {
        let toolset = self
            .route
            .get(call.name.toolset())
            .map(|&i| self.toolsets[i].clone());
        let (id, name, payload) = (call.id.clone(), call.name.clone(), call.payload.clone());
        async move {
            let started = Instant::now();
            let Some(toolset) = toolset else {
                let err = ToolError::new(
                    ToolError::UNAVAILABLE,
                    format!("no toolset serves `{name}`"),
                );
                return ToolOutput::error(id, name, payload, err);
            };
            // Agents called as tools run until the run's time budget ends them.
            let timeout = if toolset.bounded_by_run_budget() {
                Duration::MAX
            } else {
                limits.timeout
            };
            let fut = AssertUnwindSafe(toolset.call_tool(request)).catch_unwind();
            let mut fut = std::pin::pin!(fut);
            // A call done when first polled needs no timer.
            let done = match (&mut fut).now_or_never() {
                Some(done) => Ok(done),
                None => tokio::time::timeout(timeout, fut).await,
            };
            let mut out = match done {
                Err(_) => {
                    let err = ToolError::new(
                        ToolError::TIMEOUT,
                        format!(
                            "`{name}` did not finish within {} ms",
                            limits.timeout.as_millis()
                        ),
                    );
                    let hint = RetryHint::new(RetryReason::Timeout).for_tool(name.clone());
                    ToolOutput::error(id, name, payload, err).with_retry_hint(Some(hint))
                }
                Ok(Err(panic)) => {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".to_owned());
                    let err =
                        ToolError::new(ToolError::PANICKED, format!("`{name}` panicked: {what}"));
                    ToolOutput::error(id, name, payload, err)
                }
                Ok(Ok(Err(failure))) => ToolOutput::error(id, name, payload, failure.error)
                    .with_retry_hint(failure.retry_hint),
                Ok(Ok(Ok(reply))) => {
                    let mut out = ToolOutput::with_body(id, name, payload, reply.body);
                    out.server_data = reply.server_data.map(Box::new);
                    out.bounds = reply.bounds.map(Box::new);
                    bound_result(&mut out, limits.payload_budget);
                    out
                }
            };
            bound_error(&mut out, limits.payload_budget);
            out.telemetry = Some(Telemetry {
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                tokens: None,
                model: None,
            });
            out
        }
    }
}

/// Per-call limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) timeout: Duration,
    pub(crate) payload_budget: u64,
}

/// Why an agent's tools do not form one catalog.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    /// Two of the agent's toolsets share a name.
    #[error("two toolsets are named `{0}`")]
    DuplicateToolset(String),
    /// Two tools share a name, or a tool's input schema does not compile.
    #[error(transparent)]
    Tools(#[from] weft_tools::CatalogError),
}

/// Most bytes of one error message, cause or field issue a tool's error
/// keeps (within the payload budget when that is smaller).
pub(crate) const MAX_ERROR_TEXT: usize = 8 * 1024;

/// Most causes and field issues an error keeps.
const MAX_ERROR_ITEMS: usize = 64;

/// Cuts an error's texts and lists to their bounds.
fn bound_error(out: &mut ToolOutput, budget: u64) {
    let ToolResultBody::Error(e) = &mut out.result else {
        return;
    };
    let max = MAX_ERROR_TEXT.min(usize::try_from(budget).unwrap_or(usize::MAX));
    cut_text(&mut e.message, max);
    e.causes.truncate(MAX_ERROR_ITEMS);
    for cause in &mut e.causes {
        cut_text(cause, max);
    }
    e.field_issues.truncate(MAX_ERROR_ITEMS);
}

/// Cuts `text` to at most `max` bytes (on a character boundary), saying so.
fn cut_text(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let total = text.len();
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!(" … ({} of {total} bytes cut)", total - end));
}

/// Replaces a result larger than `budget` bytes by an omission marker, and
/// drops server data larger than the budget (it is never shown to models).
fn bound_result(out: &mut ToolOutput, budget: u64) {
    if out
        .server_data
        .as_ref()
        .is_some_and(|d| json_size(d) > budget)
    {
        tracing::warn!(tool = %out.name, limit = budget, "server data over the payload budget dropped");
        out.server_data = None;
    }
    let bytes = match &out.result {
        ToolResultBody::Json(v) => json_size(v),
        ToolResultBody::Content(c) => {
            let mut counter = ByteCounter(0);
            let _ = serde_json::to_writer(&mut counter, c);
            counter.0
        }
        ToolResultBody::Omitted(_) | ToolResultBody::Error(_) => return,
    };
    out.result_bytes = bytes;
    if bytes > budget {
        // The marker says what happened; the bounds stay the tool's own
        // (invented ones would tell the model "returned 0").
        out.result = ToolResultBody::Omitted(Omission::TooLarge {
            bytes,
            limit: budget,
        });
    }
}

fn json_size(v: &Value) -> u64 {
    let mut counter = ByteCounter(0);
    let _ = serde_json::to_writer(&mut counter, v);
    counter.0
}

/// Counts bytes written without storing them.
struct ByteCounter(u64);

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
