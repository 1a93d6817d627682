//! The executor: a weft [`ToolSet`] whose tools are a registry toolset's.
//!
//! It learns the tools and schemas once from the gateway, then calls
//! straight through Redis: it validates the payload against the cached
//! schema, admits and publishes the call in one script (health and queue
//! bound as the gateway keeps them; calls made at the same time share one
//! script), and waits on the call's result stream ([`wait`]) with an
//! absolute deadline, forwarding output deltas to the call's output sink.
//! One [`reader`] reads the result streams of every call in flight; a call
//! made while few others are in flight takes the [`lone`] lane instead (its
//! admission and first read in one pipeline, its stream read on a
//! dedicated connection). The gateway is not a hop on the hot path.
//!
//! The `tool_use_id` is `<run id>/<tool call id>`: the runtime's call id,
//! qualified by its run so two runs' `call_1` never meet. A retried or
//! recovered call has the same id, finds its result stream and re-attaches to
//! it instead of publishing again, and a provider answers a repeat of a call
//! to a tool that is not idempotent from its memory instead of running it
//! again. A registry tool is idempotent for the runtime's crash recovery
//! only when its registration says so.
//!
//! When Redis fails around a call, the executor tells the two cases apart:
//! a call that was never published fails `tool_unavailable` (calling again
//! is safe), one that was published and whose result was then lost fails
//! `outcome_unknown` (it may have taken effect). After a failed admission it
//! asks Redis whether the call's result stream exists ([`outcome`]).

mod lazy;
mod lone;
mod outcome;
mod reader;
mod reap;
mod source;
mod wait;

pub use lazy::LazyRegistryToolSet;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::FutureExt;
use serde_json::Value;
use weft_core::tool::{
    RetryHint, RetryReason, ToolAnnotations, ToolError, ToolIdent, ToolRequest, ToolSpec,
};
use weft_tools::{ArgsValidator, ToolFailure, ToolReply, ToolSet};

use crate::access::BearerToken;
use crate::admission::{self, Admission};
use crate::batch::Batcher;
use crate::catalog::Namespace;
use crate::client::GatewayClient;
use crate::conn::Redis;
use crate::error::RegistryError;
use crate::wire::{self, ToolCallMessage, ToolCallMeta};

/// How an executor reaches a registry toolset.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// The gateway to learn the tools from.
    pub gateway: String,
    /// The caller token sent to the gateway.
    pub token: Option<BearerToken>,
    /// The registry toolset's name.
    pub toolset: String,
    /// The toolset's name in weft (its tools are `<alias>.<tool>`); the
    /// registry name when absent.
    pub alias: Option<String>,
    /// The registry's namespace in Redis.
    pub namespace: Namespace,
    /// How long a result stream lives if nobody reads it.
    pub result_ttl: Duration,
    /// The absolute deadline of one call, from its start.
    pub call_timeout: Duration,
    /// Largest encoded call accepted, in bytes.
    pub max_payload_bytes: usize,
    /// This executor's consumer name in result streams' `agent` group.
    pub consumer: String,
}

impl ExecutorConfig {
    /// Defaults for `toolset` served through the gateway at `gateway`.
    pub fn new(gateway: impl Into<String>, toolset: impl Into<String>) -> Self {
        Self {
            gateway: gateway.into(),
            token: None,
            toolset: toolset.into(),
            alias: None,
            namespace: Namespace::default(),
            result_ttl: Duration::from_secs(15 * 60),
            call_timeout: Duration::from_secs(10 * 60),
            max_payload_bytes: 1 << 20,
            consumer: format!("weft-{}", uuid::Uuid::new_v4().simple()),
        }
    }
}

struct RemoteTool {
    remote: String,
    validator: ArgsValidator,
}

/// A registry toolset as a weft [`ToolSet`].
pub struct RegistryToolSet {
    name: String,
    redis: Redis,
    config: ExecutorConfig,
    specs: Vec<ToolSpec>,
    tools: HashMap<String, RemoteTool>,
    /// Result streams to delete ([`reap`]).
    reaper: tokio::sync::mpsc::Sender<String>,
    /// Reads every result stream a call waits on.
    reader: Arc<reader::Reader>,
    /// Admits concurrent calls in one script.
    admitter: Batcher<admission::Call, Admission>,
    /// Calls in flight, which decides whether a call takes the [`lone`] lane.
    in_flight: AtomicUsize,
}

impl std::fmt::Debug for RegistryToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryToolSet")
            .field("name", &self.name)
            .field("toolset", &self.config.toolset)
            .finish_non_exhaustive()
    }
}

impl RegistryToolSet {
    /// Learns the toolset's tools from the gateway.
    pub async fn connect(redis: Redis, config: ExecutorConfig) -> Result<Self, RegistryError> {
        let view = GatewayClient::new(&config.gateway)?
            .with_token(config.token.clone())
            .toolset(&config.toolset)
            .await?;
        let name = config
            .alias
            .clone()
            .unwrap_or_else(|| config.toolset.clone());
        let prefix = format!("{}.", config.toolset);
        let mut specs = Vec::new();
        let mut tools = HashMap::new();
        for t in view.toolset.tools {
            let short = t.name.strip_prefix(&prefix).unwrap_or(&t.name);
            let ident = ToolIdent::from_parts(&name, short);
            let validator = ArgsValidator::compile(&t.payload_schema).map_err(|e| {
                RegistryError::InvalidSchema {
                    tool: t.name.clone(),
                    message: e.message,
                }
            })?;
            specs.push(ToolSpec {
                name: ident.clone(),
                description: t.description,
                input_schema: t.payload_schema,
                output_schema: t
                    .result_schema
                    .filter(|s| s != &Value::Object(Default::default())),
                annotations: ToolAnnotations {
                    idempotent: t.idempotent,
                    ..ToolAnnotations::default()
                },
                tags: t.tags,
            });
            tools.insert(
                ident.as_str().to_owned(),
                RemoteTool {
                    remote: t.name,
                    validator,
                },
            );
        }
        Ok(Self {
            name,
            admitter: admitter(&redis, &config),
            reaper: reap::start(redis.clone()),
            reader: reader::Reader::start(redis.clone(), &config.consumer),
            redis,
            config,
            specs,
            tools,
            in_flight: AtomicUsize::new(0),
        })
    }

    /// The transport id of a request's call: `<run id>/<tool call id>`.
    pub fn tool_use_id(request: &ToolRequest) -> String {
        format!("{}/{}", request.run_id, request.tool_call_id)
    }

    async fn call(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let started = Instant::now();
        let Some(tool) = self.tools.get(request.name.as_str()) else {
            return Err(failure(
                &request.name,
                "unknown_tool",
                format!(
                    "registry toolset `{}` has no tool `{}`",
                    self.config.toolset, request.name
                ),
            ));
        };
        if let Err(issues) = tool.validator.validate(&request.payload) {
            return Err(tool
                .validator
                .failure(&request.name, &request.payload, issues));
        }
        let tool_use_id = Self::tool_use_id(&request);
        let (traceparent, tracestate) = crate::trace::outgoing();
        let msg = ToolCallMessage {
            kind: wire::TYPE_CALL.to_owned(),
            tool_use_id: tool_use_id.clone(),
            tool: tool.remote.clone(),
            payload: Some(wire::raw(
                &tool.validator.normalize((*request.payload).clone()),
            )),
            meta: Some(ToolCallMeta {
                run_id: request.run_id.to_string(),
                session_id: request.session_id.to_string(),
                turn_id: request.turn_id.to_string(),
                tool_call_id: request.tool_call_id.to_string(),
                parent_tool_call_id: request
                    .parent_tool_call_id
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
            }),
            traceparent,
            tracestate,
            deadline_ms: Some(wire::deadline_in(
                self.config.call_timeout.saturating_sub(started.elapsed()),
            )),
            ..Default::default()
        };
        let bytes = wire::encode(&msg);
        if bytes.len() > self.config.max_payload_bytes {
            return Err(failure(
                &request.name,
                ToolError::INVALID_ARGUMENTS,
                format!(
                    "the call is {} bytes; the limit is {}",
                    bytes.len(),
                    self.config.max_payload_bytes
                ),
            ));
        }
        let call = admission::Call {
            tool_use_id: tool_use_id.clone(),
            message: bytes,
        };
        let deadline = started + self.config.call_timeout;
        let in_flight = InFlight::enter(&self.in_flight);
        let lone = if in_flight.before < lone::MAX_IN_FLIGHT {
            lone::admit(self, &call, deadline).await
        } else {
            None
        };
        let (admitted, source) = match lone {
            Some(lone) => lone,
            None => match self.admitter.submit(call).await {
                Ok(admitted) => (admitted, None),
                // The script may have run before its reply was lost.
                Err(e) => (
                    outcome::after_failed_admission(self, &request.name, &tool_use_id, &e).await?,
                    None,
                ),
            },
        };
        match admitted {
            Admission::Published(_) | Admission::Reattach => {}
            Admission::UnknownToolset => {
                return Err(failure(
                    &request.name,
                    "unknown_toolset",
                    format!(
                        "registry toolset `{}` is not registered",
                        self.config.toolset
                    ),
                ));
            }
            Admission::Unhealthy { pong_age_ms } => {
                return Err(failure(
                    &request.name,
                    "service_unavailable",
                    format!(
                        "no healthy provider for `{}` (last pong {pong_age_ms} ms ago)",
                        self.config.toolset
                    ),
                ));
            }
            Admission::QueueFull { depth, max } => {
                return Err(failure(
                    &request.name,
                    "queue_full",
                    format!(
                        "`{}` has {depth} queued calls (limit {max})",
                        self.config.toolset
                    ),
                ));
            }
        }
        let source = match source {
            Some(source) => source,
            None => {
                let key = crate::pulse::key(&wire::result_stream(&tool_use_id));
                source::Source::Shared(self.reader.register(&key).await)
            }
        };
        wait::wait(self, &request, &tool_use_id, source, deadline).await
    }
}

/// One call counted in flight until dropped.
struct InFlight<'a> {
    count: &'a AtomicUsize,
    /// Calls in flight before this one.
    before: usize,
}

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        let before = count.fetch_add(1, Ordering::Relaxed);
        Self { count, before }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Most calls admitted in one script, and most waiting for their turn.
const ADMIT_BATCH: usize = 256;
const ADMIT_QUEUE: usize = 4096;

/// The batcher admitting this toolset's calls ([`admission::admit_batch`]).
fn admitter(redis: &Redis, config: &ExecutorConfig) -> Batcher<admission::Call, Admission> {
    let (redis, ns, toolset) = (
        redis.clone(),
        config.namespace.clone(),
        config.toolset.clone(),
    );
    let ttl = u64::try_from(config.result_ttl.as_millis()).unwrap_or(u64::MAX);
    Batcher::new(
        ADMIT_BATCH,
        ADMIT_QUEUE,
        move |calls: Vec<admission::Call>| {
            let (redis, ns, toolset) = (redis.clone(), ns.clone(), toolset.clone());
            async move {
                let start = admission::GroupStart::AfterInit;
                let outcomes =
                    admission::admit_batch(&redis, &ns, &toolset, &calls, ttl, start).await?;
                Ok(outcomes.into_iter().map(Ok).collect())
            }
            .boxed()
        },
    )
}

/// A failure with its retry hint derived from its code.
pub(crate) fn failure(
    tool: &ToolIdent,
    code: impl Into<weft_core::tool::ToolErrorCode>,
    message: String,
) -> ToolFailure {
    let error = ToolError::new(code, message);
    let code = error.code.as_str();
    let retry_hint = crate::provider::reply::retry_hint(tool, code, &error)
        .or_else(|| Some(RetryHint::new(RetryReason::ToolUnavailable).for_tool(tool.clone())))
        .filter(|_| code != "unknown_tool");
    ToolFailure { error, retry_hint }
}

#[async_trait]
impl ToolSet for RegistryToolSet {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(self.specs.clone())
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        self.call(request).await
    }
}
