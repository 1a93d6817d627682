//! The provider: serves a weft [`ToolSet`] from a toolset's request stream.
//!
//! One dedicated connection reads the `provider` consumer group, asking only
//! for as many calls as the worker pool has free slots (unread calls wait in
//! Redis, never in memory). Each call runs on a worker; its result is
//! published, then the call acknowledged (one pipeline and one `XACK` for
//! the results ready at the same time), so a call is never acknowledged
//! without its result. Pings are answered with a pong to the gateway. A
//! claimer ([`claim`]) takes over calls a crashed provider left idle,
//! dead-letters calls delivered too often and trims acknowledged entries.
//! A call to a tool that is not idempotent runs at most once: the provider
//! remembers it in Redis ([`memory`]) and answers a repeat from there.
//! Garbage entries are acknowledged and logged; nothing in a message can
//! stop the loop.

mod claim;
mod deltas;
mod memory;
mod publish;
mod read;
pub mod reply;
mod tidy;
mod worker;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use weft_core::backoff::BackoffPolicy;
use weft_core::tool::ToolIdent;
use weft_tools::{ArgsValidator, ToolSet};

use crate::batch::Batcher;
use crate::client::{GatewayClient, PongReply};
use crate::conn::Redis;
use crate::dto::RegisterRequest;
use crate::error::RegistryError;
use crate::pulse::{self, Body, Entry};
use crate::wire::{self, ToolCallMessage};

/// How a provider behaves.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// This provider's consumer name in the `provider` group (unique per process).
    pub consumer: String,
    /// Most calls executing at once.
    pub max_concurrent: usize,
    /// How long a call may stay unacknowledged before another provider claims it.
    pub claim_grace: Duration,
    /// How often to look for idle calls.
    pub claim_interval: Duration,
    /// Deliveries after which a call goes to the dead-letter stream.
    pub max_deliveries: u64,
    /// Longest a call may run.
    pub call_timeout: Duration,
    /// Largest payload accepted, in bytes.
    pub max_payload_bytes: usize,
    /// How long one blocking read waits.
    pub block: Duration,
    /// How long the provider remembers a call to a tool that is not
    /// idempotent, and its result, so that call runs at most once
    /// ([`memory`]).
    pub remember_for: Duration,
    /// A consumer of the `provider` group idle this long with nothing
    /// pending is a provider that stopped; it is deleted.
    pub dead_consumer_after: Duration,
    /// Most entries kept in the toolset's dead-letter stream.
    pub dead_letter_max: usize,
    /// How long a dead letter is kept.
    pub dead_letter_ttl: Duration,
    /// Unregister the toolset at the gateway when serving stops.
    pub unregister_on_stop: bool,
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            consumer: format!("weft-{}", uuid::Uuid::new_v4().simple()),
            max_concurrent: 32,
            claim_grace: Duration::from_secs(30),
            claim_interval: Duration::from_secs(5),
            max_deliveries: 5,
            call_timeout: Duration::from_secs(600),
            max_payload_bytes: 1 << 20,
            block: Duration::from_secs(2),
            remember_for: Duration::from_secs(60 * 60),
            dead_consumer_after: Duration::from_secs(60 * 60),
            dead_letter_max: 10_000,
            dead_letter_ttl: Duration::from_secs(7 * 24 * 60 * 60),
            unregister_on_stop: true,
        }
    }
}

/// One tool this provider serves.
pub(crate) struct Served {
    pub(crate) ident: ToolIdent,
    pub(crate) validator: ArgsValidator,
    /// Its spec says running it twice is safe; otherwise its calls go
    /// through the provider's [`memory`].
    pub(crate) idempotent: bool,
}

/// How long a pong is retried before its ping is given up.
const PONG_PATIENCE: Duration = Duration::from_secs(30);

/// A running provider's shared state.
pub(crate) struct Shared {
    pub(crate) redis: Redis,
    pub(crate) registry_toolset: String,
    pub(crate) stream_key: String,
    pub(crate) toolset: Arc<dyn ToolSet>,
    pub(crate) tools: HashMap<String, Served>,
    pub(crate) config: ProviderConfig,
    pub(crate) permits: Arc<Semaphore>,
    /// Publishes results and acknowledges their calls, batched.
    pub(crate) publisher: Batcher<publish::Publish, publish::Published>,
    gateway: Option<GatewayClient>,
    registration: RegisterRequest,
}

/// Serves one toolset from Redis.
pub struct Provider {
    shared: Arc<Shared>,
}

impl Provider {
    /// A provider of `toolset` under the registry name `registry_toolset`;
    /// with a gateway it registers there and answers pings.
    pub async fn new(
        redis: Redis,
        registry_toolset: &str,
        toolset: Arc<dyn ToolSet>,
        gateway: Option<GatewayClient>,
        config: ProviderConfig,
    ) -> Result<Self, RegistryError> {
        if config.max_concurrent == 0 || config.max_deliveries == 0 {
            return Err(RegistryError::Config(
                "max_concurrent and max_deliveries must be at least 1".into(),
            ));
        }
        let specs = toolset
            .list_tools()
            .await
            .map_err(|e| RegistryError::Config(format!("listing the toolset's tools: {e}")))?;
        let mut tools = HashMap::new();
        let mut schemas = Vec::new();
        for spec in specs {
            let remote = format!("{registry_toolset}.{}", spec.name.tool());
            let validator = ArgsValidator::compile(&spec.input_schema).map_err(|e| {
                RegistryError::InvalidSchema {
                    tool: spec.name.to_string(),
                    message: e.message,
                }
            })?;
            schemas.push(crate::catalog::ToolSchema {
                name: remote.clone(),
                description: spec.description.clone(),
                tags: spec.tags.clone(),
                payload_schema: spec.input_schema.clone(),
                result_schema: Some(
                    spec.output_schema
                        .clone()
                        .unwrap_or_else(|| serde_json::json!({})),
                ),
                sidecar_schema: None,
                idempotent: spec.annotations.idempotent,
            });
            tools.insert(
                remote,
                Served {
                    ident: spec.name.clone(),
                    validator,
                    idempotent: spec.annotations.idempotent,
                },
            );
        }
        let registration = RegisterRequest {
            name: registry_toolset.to_owned(),
            description: weft_tools::capability::find_public_description(&*toolset)
                .map(|d| d.public_description_text())
                .unwrap_or_default(),
            version: None,
            tags: Vec::new(),
            tools: schemas,
            max_queue: None,
        };
        let permits = Arc::new(Semaphore::new(config.max_concurrent));
        let stream_key = pulse::key(&wire::toolset_stream(registry_toolset));
        Ok(Self {
            shared: Arc::new(Shared {
                publisher: publish::publisher(redis.clone(), stream_key.clone()),
                redis,
                registry_toolset: registry_toolset.to_owned(),
                stream_key,
                toolset,
                tools,
                config,
                permits,
                gateway,
                registration,
            }),
        })
    }

    /// What the provider registers at the gateway.
    pub fn registration(&self) -> &RegisterRequest {
        &self.shared.registration
    }

    /// Registers at the gateway (when there is one) and makes sure the
    /// request stream and its group exist.
    pub async fn register(&self) -> Result<(), RegistryError> {
        self.shared.register().await
    }

    /// Reads and serves calls until `shutdown` resolves; in-flight calls
    /// finish (their results are published) before it returns.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), RegistryError> {
        self.shared.register().await?;
        let claimer = tokio::spawn(claim::run(self.shared.clone()));
        let reader = read::read_loop(self.shared.clone());
        tokio::select! {
            () = shutdown => {}
            res = reader => {
                claimer.abort();
                return res;
            }
        }
        claimer.abort();
        // Wait for in-flight calls: every permit back.
        let all = u32::try_from(self.shared.config.max_concurrent).unwrap_or(u32::MAX);
        let _ = self.shared.permits.acquire_many(all).await;
        self.shared.unregister().await;
        Ok(())
    }
}

impl Shared {
    /// Whether calls of the full tool name `tool` go through the memory.
    pub(crate) fn remembers(&self, tool: &str) -> bool {
        self.tools.get(tool).is_some_and(|t| !t.idempotent)
    }

    /// [`ProviderConfig::remember_for`] in milliseconds.
    pub(crate) fn remember_ms(&self) -> u64 {
        u64::try_from(self.config.remember_for.as_millis()).unwrap_or(u64::MAX)
    }

    /// Takes the toolset off the gateway when serving stops (unless
    /// [`ProviderConfig::unregister_on_stop`] is off): callers get
    /// `unknown_toolset` at once instead of calls queued for nobody. Other
    /// providers of the toolset register it again at their next pong.
    async fn unregister(&self) {
        let Some(gw) = self
            .gateway
            .as_ref()
            .filter(|_| self.config.unregister_on_stop)
        else {
            return;
        };
        match tokio::time::timeout(
            Duration::from_secs(5),
            gw.unregister(&self.registry_toolset),
        )
        .await
        {
            Ok(Ok(())) => {
                tracing::info!(toolset = %self.registry_toolset, "unregistered the toolset")
            }
            Ok(Err(e)) => {
                tracing::warn!(toolset = %self.registry_toolset, error = %e, "unregistering failed")
            }
            Err(_) => tracing::warn!(toolset = %self.registry_toolset, "unregistering timed out"),
        }
    }

    async fn register(&self) -> Result<(), RegistryError> {
        crate::catalog::ensure_provider_group(&self.redis, &self.registry_toolset).await?;
        if let Some(gw) = &self.gateway {
            gw.register(&self.registration).await?;
        }
        Ok(())
    }

    /// Handles one entry read from the request stream.
    pub(crate) async fn handle(self: &Arc<Self>, entry: Entry) {
        let (name, payload) = match entry.body {
            Body::Event { name, payload } => (name, payload),
            Body::Garbage(why) => {
                tracing::warn!(id = %entry.id, %why, "acknowledging a malformed request entry");
                self.ack(&entry.id).await;
                return;
            }
        };
        let msg: ToolCallMessage = match wire::decode(&payload) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(id = %entry.id, event = %name, error = %e, "acknowledging an undecodable request");
                self.ack(&entry.id).await;
                return;
            }
        };
        match msg.kind.as_str() {
            wire::TYPE_PING => {
                self.ack(&entry.id).await;
                let this = self.clone();
                tokio::spawn(async move { this.pong(&msg.ping_id).await });
            }
            wire::TYPE_CALL
                if !msg.tool_use_id.is_empty()
                    && msg.deadline_ms.is_some_and(|d| d <= wire::unix_ms()) =>
            {
                tracing::info!(
                    tool_use_id = %msg.tool_use_id,
                    tool = %msg.tool,
                    "a call expired in the queue (its caller's deadline passed); not running it"
                );
                let this = self.clone();
                tokio::spawn(async move { worker::expire(&this, entry.id, msg).await });
            }
            wire::TYPE_CALL if !msg.tool_use_id.is_empty() => {
                let Ok(permit) = self.permits.clone().acquire_owned().await else {
                    return;
                };
                let this = self.clone();
                tokio::spawn(async move {
                    worker::execute(&this, entry.id, msg).await;
                    drop(permit);
                });
            }
            other => {
                tracing::warn!(id = %entry.id, kind = %other, "acknowledging an unknown or incomplete message");
                self.ack(&entry.id).await;
            }
        }
    }

    /// Answers a ping. A pong the gateway did not take (it is restarting,
    /// say) is sent again with backoff for up to [`PONG_PATIENCE`]: a
    /// ping left unanswered makes the toolset unhealthy.
    async fn pong(&self, ping_id: &str) {
        let Some(gw) = &self.gateway else { return };
        let give_up = tokio::time::Instant::now() + PONG_PATIENCE;
        let mut backoff =
            BackoffPolicy::new(Duration::from_millis(100), Duration::from_secs(5)).start();
        loop {
            let reply = tokio::time::timeout(
                Duration::from_secs(5),
                gw.pong(&self.registry_toolset, ping_id),
            )
            .await;
            let failed = match reply {
                Ok(Ok(PongReply::Done)) => return,
                Ok(Ok(PongReply::Unregistered)) => {
                    tracing::warn!(toolset = %self.registry_toolset, "the gateway forgot the toolset; registering again");
                    if let Err(e) = self.register().await {
                        tracing::warn!(error = %e, "registering again failed");
                    }
                    return;
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => "timed out".to_owned(),
            };
            let delay = backoff.next_delay();
            if tokio::time::Instant::now() + delay > give_up {
                tracing::warn!(toolset = %self.registry_toolset, error = %failed, "pong failed; giving up on this ping");
                return;
            }
            tracing::debug!(toolset = %self.registry_toolset, error = %failed, "pong failed; sending it again");
            tokio::time::sleep(delay).await;
        }
    }

    pub(crate) async fn ack(&self, id: &str) {
        let res: Result<i64, _> = redis::cmd("XACK")
            .arg(&self.stream_key)
            .arg(wire::GROUP_PROVIDER)
            .arg(id)
            .query_async(&mut self.redis.mux())
            .await;
        if let Err(e) = res {
            tracing::warn!(id, error = %e, "acknowledging failed");
        }
    }
}
