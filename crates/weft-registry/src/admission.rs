//! Admission of one call, in one Lua script on Redis: the toolset must be
//! registered and healthy and its queue below its bound; then the result
//! stream is created (with `init`, the `agent` group at `0` or just past
//! `init`, see [`GroupStart`], and a TTL) and the call
//! is published. When the result stream already exists the call was
//! published before under the same `tool_use_id` and is not published again:
//! the caller re-attaches to it. Used by the gateway and by executors, so
//! both honour the same health and queue bound.

use crate::catalog::Namespace;
use crate::conn::Redis;
use crate::error::RegistryError;
use crate::{pulse, wire};

/// What admission decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// The call was published (its request entry id).
    Published(String),
    /// The call's result stream already existed: re-attach, do not publish.
    Reattach,
    /// The toolset is not registered.
    UnknownToolset,
    /// No provider answered a ping within the staleness window.
    Unhealthy {
        /// Milliseconds since the last pong.
        pong_age_ms: i64,
    },
    /// The toolset's queue is full.
    QueueFull {
        /// Calls queued (unread plus in progress).
        depth: i64,
        /// The bound.
        max: i64,
    },
}

const ADMIT_SCRIPT: &str = r"
local s = redis.call('HMGET', KEYS[1], 'last_pong_ms', 'stale_ms', 'max_queue')
if not s[1] then return {'unknown'} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local age = now - tonumber(s[1])
if age > tonumber(s[2]) then return {'unhealthy', age} end
local depth = -1
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[2])
if ok then
  for _, g in ipairs(groups) do
    local f = {}
    for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
    if f['name'] == 'provider' then
      local lag = f['lag']
      if type(lag) ~= 'number' then lag = redis.call('XLEN', KEYS[2]) end
      depth = lag + f['pending']
    end
  end
end
if depth < 0 then depth = redis.call('XLEN', KEYS[2]) end
local max = tonumber(s[3])
if depth >= max then return {'queue_full', depth, max} end
if redis.call('EXISTS', KEYS[3]) == 1 then return {'reattach'} end
local init = redis.call('XADD', KEYS[3], '*', 'n', 'init', 'p', '{}')
redis.call('PEXPIRE', KEYS[3], ARGV[2])
local start = '0'
if ARGV[3] == 'after_init' then start = init end
redis.call('XGROUP', 'CREATE', KEYS[3], 'agent', start)
local id = redis.call('XADD', KEYS[2], '*', 'n', 'call', 'p', ARGV[1])
return {'published', id}
";

/// Where the result stream's `agent` group starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupStart {
    /// At `0`, so the group's first read returns `init`: what a reader of
    /// the protocol expects (the gateway's calls, read by any executor).
    Oldest,
    /// Just past `init`, so the first read waits for the call's first delta
    /// or its result: one read fewer per call. weft's executor, which
    /// creates the stream and reads it, asks for this.
    AfterInit,
}

/// Admits and publishes one call message (already encoded).
pub async fn admit(
    redis: &Redis,
    ns: &Namespace,
    toolset: &str,
    tool_use_id: &str,
    message: &[u8],
    result_ttl_ms: u64,
    start: GroupStart,
) -> Result<Admission, RegistryError> {
    let reply: redis::Value = admit_script()
        .key(ns.state(toolset))
        .key(pulse::key(&wire::toolset_stream(toolset)))
        .key(pulse::key(&wire::result_stream(tool_use_id)))
        .arg(message)
        .arg(result_ttl_ms.max(1))
        .arg(match start {
            GroupStart::Oldest => "oldest",
            GroupStart::AfterInit => "after_init",
        })
        .invoke_async(&mut redis.mux())
        .await?;
    let (tag, rest) = split(reply)?;
    let int = |i: usize| match rest.get(i) {
        Some(redis::Value::Int(n)) => Ok(*n),
        other => Err(pulse::ReplyError(format!("admission number {other:?}"))),
    };
    Ok(match tag.as_str() {
        "published" => Admission::Published(match rest.first() {
            Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
            other => return Err(pulse::ReplyError(format!("entry id {other:?}")).into()),
        }),
        "reattach" => Admission::Reattach,
        "unknown" => Admission::UnknownToolset,
        "unhealthy" => Admission::Unhealthy {
            pong_age_ms: int(0)?,
        },
        "queue_full" => Admission::QueueFull {
            depth: int(0)?,
            max: int(1)?,
        },
        other => return Err(pulse::ReplyError(format!("admission outcome `{other}`")).into()),
    })
}

fn split(reply: redis::Value) -> Result<(String, Vec<redis::Value>), RegistryError> {
    let redis::Value::Array(mut items) = reply else {
        return Err(pulse::ReplyError(format!("admission reply {reply:?}")).into());
    };
    if items.is_empty() {
        return Err(pulse::ReplyError("empty admission reply".into()).into());
    }
    let tag = match items.remove(0) {
        redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        redis::Value::SimpleString(s) => s,
        other => return Err(pulse::ReplyError(format!("admission tag {other:?}")).into()),
    };
    Ok((tag, items))
}

/// The script, hashed once.
fn admit_script() -> &'static redis::Script {
    static SCRIPT: std::sync::LazyLock<redis::Script> =
        std::sync::LazyLock::new(|| redis::Script::new(ADMIT_SCRIPT));
    &SCRIPT
}
