//! The registry's state in Redis, shared by every gateway node: registered
//! toolsets with their tools and schemas, and per toolset the hot-path state
//! (registration token, last pong, staleness window, queue bound) that
//! admission and health read, and the provider identity that registered it
//! (`owner`), which alone may register it again, pong or unregister it.

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

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
    /// Pong age past which the toolset is unhealthy.
    pub stale_ms: i64,
    /// Most calls queued (unread plus in progress) before `queue_full`.
    pub max_queue: i64,
}

impl ToolsetState {
    /// Whether a provider answered recently enough.
    pub fn healthy(&self) -> bool {
        self.pong_age_ms <= self.stale_ms
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

/// Reads the state hash and Redis's clock in one step.
const STATE_SCRIPT: &str = r"
local s = redis.call('HMGET', KEYS[1], 'token', 'last_pong_ms', 'stale_ms', 'max_queue')
if not s[1] then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {s[1], now - tonumber(s[2]), tonumber(s[3]), tonumber(s[4])}
";

/// Records a pong when its ping id starts with the current token and the
/// pong comes from the registration's owner (ARGV[2]; empty: anyone).
const PONG_SCRIPT: &str = r"
local s = redis.call('HMGET', KEYS[1], 'token', 'owner')
local token = s[1]
if not token then return 'unknown' end
if ARGV[2] ~= '' and s[2] and s[2] ~= '' and s[2] ~= ARGV[2] then return 'not_owner' end
if string.sub(ARGV[1], 1, string.len(token) + 1) ~= token .. '/' then return 'stale' end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'last_pong_ms', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return 'recorded'
";

/// Saves a registration: record, membership, and a fresh hot-path state
/// (registration counts as a pong) with its owner, unless another owner
/// (ARGV[6]; empty: no check) registered the toolset.
const SAVE_SCRIPT: &str = r"
local owner = redis.call('HGET', KEYS[3], 'owner')
if ARGV[6] ~= '' and owner and owner ~= '' and owner ~= ARGV[6] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[5])
local t = redis.call('TIME')
redis.call('HSET', KEYS[3], 'token', ARGV[2], 'stale_ms', ARGV[3], 'max_queue', ARGV[4],
  'last_pong_ms', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), 'owner', ARGV[6])
return 1
";

/// Removes a registration unless another owner (ARGV[2]; empty: no check)
/// made it: -1 refused, else how many records were removed.
const DELETE_SCRIPT: &str = r"
local owner = redis.call('HGET', KEYS[3], 'owner')
if ARGV[2] ~= '' and owner and owner ~= '' and owner ~= ARGV[2] then return -1 end
local removed = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
return removed
";

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
        let reply: Option<(String, i64, i64, i64)> = redis::Script::new(STATE_SCRIPT)
            .key(self.ns.state(name))
            .invoke_async(&mut self.redis.mux())
            .await?;
        Ok(
            reply.map(|(token, pong_age_ms, stale_ms, max_queue)| ToolsetState {
                token,
                pong_age_ms,
                stale_ms,
                max_queue,
            }),
        )
    }

    /// Records a pong for `ping_id` from `owner` (empty: no check).
    pub async fn record_pong(
        &self,
        name: &str,
        ping_id: &str,
        owner: &str,
    ) -> Result<PongOutcome, RegistryError> {
        let outcome: String = redis::Script::new(PONG_SCRIPT)
            .key(self.ns.state(name))
            .arg(ping_id)
            .arg(owner)
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
