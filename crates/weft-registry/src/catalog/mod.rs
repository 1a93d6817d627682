//! The registry's state in Redis, shared by every gateway node: registered
//! toolsets with their tools and schemas, and per toolset the hot-path state
//! (registration token, last pong, staleness window, queue bound) that
//! admission and health read, and the provider identity that registered it
//! (`owner`), which alone may register it again, pong or unregister it.

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

mod scripts;
use scripts::{DELETE_SCRIPT, PONG_SCRIPT, PRUNE_SCRIPT, SAVE_SCRIPT, STATE_SCRIPT};

use crate::conn::Redis;
use crate::error::{RegistryError, is_busygroup};
use crate::{pulse, wire};

/// Where the registry keeps its state: a key prefix, so several registries
/// (or tests) can share one Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace(String);

impl Default for Namespace {
    fn default() -> Self {
        Self("weft:registry".to_owned())
    }
}

impl Namespace {
    /// A namespace with this prefix.
    pub fn new(prefix: impl Into<String>) -> Self {
        Self(prefix.into())
    }

    /// The set of registered toolset names.
    pub fn toolsets(&self) -> String {
        format!("{}:toolsets", self.0)
    }

    /// A toolset's record.
    pub fn toolset(&self, name: &str) -> String {
        format!("{}:toolset:{name}", self.0)
    }

    /// A toolset's hot-path state hash.
    pub fn state(&self, name: &str) -> String {
        format!("{}:state:{name}", self.0)
    }

    /// The pinger lease.
    pub fn pinger(&self) -> String {
        format!("{}:pinger", self.0)
    }
}

/// One tool as registered: loom-mcp's `ToolSchema`, schemas as JSON values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolSchema {
    /// The tool's full name, `toolset.tool`.
    pub name: String,
    /// What the tool does.
    #[serde(default)]
    pub description: String,
    /// Tags for filtering.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// JSON Schema of the payload.
    pub payload_schema: Value,
    /// JSON Schema of the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_schema: Option<Value>,
    /// JSON Schema of the UI-only sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar_schema: Option<Value>,
    /// Calling it twice has the effect of calling it once (the tool's spec
    /// says so). Callers may run such a call again after a crash; calls to
    /// other tools run at most once. weft's own field: absent (`false`) in
    /// loom-mcp's registrations.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent: bool,
}

/// A registered toolset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolsetRecord {
    /// Its unique name.
    pub name: String,
    /// What it offers.
    #[serde(default)]
    pub description: String,
    /// Its semantic version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Tags for filtering.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Its tools.
    pub tools: Vec<ToolSchema>,
    /// When it was (last) registered, RFC 3339.
    pub registered_at: String,
}

/// A toolset's hot-path state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsetState {
    /// The current registration token.
    pub token: String,
    /// Milliseconds since the last pong (or registration), by Redis's clock.
    pub pong_age_ms: i64,
    /// Milliseconds since the oldest ping no pong has answered yet; `0`
    /// when every ping sent was answered.
    pub unanswered_ms: i64,
    /// Age of an unanswered ping past which the toolset is unhealthy.
    pub stale_ms: i64,
    /// Most calls queued (unread plus in progress) before `queue_full`.
    pub max_queue: i64,
}

impl ToolsetState {
    /// Whether its providers answer: no ping has waited for a pong longer
    /// than the staleness window. A toolset nobody pinged (no gateway ran
    /// its pinger for a while) stays healthy: a pong the gateway never
    /// asked for is not missing.
    pub fn healthy(&self) -> bool {
        self.unanswered_ms <= self.stale_ms
    }
}

/// How a pong was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PongOutcome {
    /// It matched the current registration and refreshed the toolset's health.
    Recorded,
    /// It answered a ping of an older registration and was ignored.
    Stale,
    /// The toolset is not registered.
    Unknown,
    /// Another provider identity registered the toolset.
    NotOwner,
}

/// A registration's hot-path settings and who makes it.
#[derive(Debug, Clone, Copy)]
pub struct Registration<'a> {
    /// The new registration token (pings carry it).
    pub token: &'a str,
    /// Pong age past which the toolset is unhealthy.
    pub stale_ms: u64,
    /// Most calls queued before `queue_full`.
    pub max_queue: u64,
    /// The registering provider's identity; empty: none (an open gateway).
    pub owner: &'a str,
    /// How long the registration lives without a pong, in milliseconds.
    pub ttl_ms: u64,
}

/// What became of a registration, a pong or an unregistration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// Done.
    Done,
    /// The toolset is not registered.
    Unknown,
    /// Another provider identity registered the toolset: refused.
    NotOwner,
}

/// The registry state in one Redis.
#[derive(Debug, Clone)]
pub struct Catalog {
    redis: Redis,
    ns: Namespace,
}

impl Catalog {
    /// The catalog in `ns` on `redis`.
    pub fn new(redis: Redis, ns: Namespace) -> Self {
        Self { redis, ns }
    }

    /// The namespace.
    pub fn namespace(&self) -> &Namespace {
        &self.ns
    }

    /// Stores a registration and creates the toolset's request stream and
    /// its `provider` group; [`Ownership::NotOwner`] (nothing written) when
    /// another owner registered the toolset.
    pub async fn save(
        &self,
        record: &ToolsetRecord,
        reg: Registration<'_>,
    ) -> Result<Ownership, RegistryError> {
        ensure_provider_group(&self.redis, &record.name).await?;
        let json = serde_json::to_string(record)
            .map_err(|e| RegistryError::Config(format!("toolset record: {e}")))?;
        let saved = redis::Script::new(SAVE_SCRIPT)
            .key(self.ns.toolset(&record.name))
            .key(self.ns.toolsets())
            .key(self.ns.state(&record.name))
            .arg(json)
            .arg(reg.token)
            .arg(reg.stale_ms)
            .arg(reg.max_queue)
            .arg(&record.name)
            .arg(reg.owner)
            .arg(reg.ttl_ms.max(1))
            .invoke_async::<i64>(&mut self.redis.mux())
            .await?;
        Ok(if saved == 1 {
            Ownership::Done
        } else {
            Ownership::NotOwner
        })
    }

    /// One toolset, if registered.
    pub async fn get(&self, name: &str) -> Result<Option<ToolsetRecord>, RegistryError> {
        let json: Option<String> = self.redis.mux().get(self.ns.toolset(name)).await?;
        json.map(|j| parse_record(name, &j)).transpose()
    }

    /// Every registered toolset, by name.
    pub async fn list(&self) -> Result<Vec<ToolsetRecord>, RegistryError> {
        let mut mux = self.redis.mux();
        let mut names: Vec<String> = mux.smembers(self.ns.toolsets()).await?;
        names.sort();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            if let Some(r) = self.get(&name).await? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Removes a toolset; false when it was not registered.
    pub async fn delete(&self, name: &str) -> Result<bool, RegistryError> {
        Ok(self.delete_owned(name, "").await? == Ownership::Done)
    }

    /// Removes a toolset if `owner` registered it (empty: whoever did).
    pub async fn delete_owned(&self, name: &str, owner: &str) -> Result<Ownership, RegistryError> {
        let removed: i64 = redis::Script::new(DELETE_SCRIPT)
            .key(self.ns.toolset(name))
            .key(self.ns.toolsets())
            .key(self.ns.state(name))
            .arg(name)
            .arg(owner)
            .invoke_async(&mut self.redis.mux())
            .await?;
        Ok(match removed {
            -1 => Ownership::NotOwner,
            0 => Ownership::Unknown,
            _ => Ownership::Done,
        })
    }

    /// A toolset's hot-path state, if registered.
    pub async fn state(&self, name: &str) -> Result<Option<ToolsetState>, RegistryError> {
        let reply: Option<(String, i64, i64, i64, i64)> = redis::Script::new(STATE_SCRIPT)
            .key(self.ns.state(name))
            .invoke_async(&mut self.redis.mux())
            .await?;
        Ok(reply.map(
            |(token, pong_age_ms, stale_ms, max_queue, unanswered_ms)| ToolsetState {
                token,
                pong_age_ms,
                unanswered_ms,
                stale_ms,
                max_queue,
            },
        ))
    }

    /// Drops `name` from the set of toolsets if its registration expired;
    /// true when it did.
    pub async fn prune(&self, name: &str) -> Result<bool, RegistryError> {
        let removed: i64 = redis::Script::new(PRUNE_SCRIPT)
            .key(self.ns.toolset(name))
            .key(self.ns.toolsets())
            .key(self.ns.state(name))
            .arg(name)
            .invoke_async(&mut self.redis.mux())
            .await?;
        Ok(removed == 1)
    }

    /// Records a pong for `ping_id` from `owner` (empty: no check); the
    /// registration then lives another `ttl_ms`.
    pub async fn record_pong(
        &self,
        name: &str,
        ping_id: &str,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<PongOutcome, RegistryError> {
        let outcome: String = redis::Script::new(PONG_SCRIPT)
            .key(self.ns.state(name))
            .key(self.ns.toolset(name))
            .arg(ping_id)
            .arg(owner)
            .arg(ttl_ms.max(1))
            .invoke_async(&mut self.redis.mux())
            .await?;
        Ok(match outcome.as_str() {
            "recorded" => PongOutcome::Recorded,
            "stale" => PongOutcome::Stale,
            "not_owner" => PongOutcome::NotOwner,
            _ => PongOutcome::Unknown,
        })
    }
}

fn parse_record(name: &str, json: &str) -> Result<ToolsetRecord, RegistryError> {
    serde_json::from_str(json).map_err(|e| {
        RegistryError::Config(format!(
            "the stored record of toolset `{name}` is unreadable: {e}"
        ))
    })
}

/// Creates a toolset's request stream and its `provider` group (from the
/// oldest entry) unless the group exists.
pub async fn ensure_provider_group(redis: &Redis, toolset: &str) -> Result<(), RegistryError> {
    let key = pulse::key(&wire::toolset_stream(toolset));
    let res: Result<(), redis::RedisError> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(&key)
        .arg(wire::GROUP_PROVIDER)
        .arg("0")
        .arg("MKSTREAM")
        .query_async(&mut redis.mux())
        .await;
    match res {
        Err(e) if !is_busygroup(&e) => Err(e.into()),
        _ => Ok(()),
    }
}
