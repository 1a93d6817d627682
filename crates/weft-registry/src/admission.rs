//! Admission of calls, in one Lua script on Redis per batch of calls to one
//! toolset. When a call's result stream already exists the call was
//! published before under the same `tool_use_id` and is not published
//! again: the caller re-attaches to it. Otherwise the toolset must be
//! registered and healthy (no health ping unanswered past the staleness
//! window) and its queue below its bound; then the call's
//! result stream is created (with `init`, the `agent` group at `0` or just
//! past `init`, see [`GroupStart`], and a TTL) and the call is published.
//! Used by the gateway (one call per script) and by executors (their
//! concurrent calls batched, or a lone call pipelined with its first read),
//! so both honour the same health and queue bound.
//!
//! The queue's depth is the `provider` group's unread entries (its lag)
//! plus its pending ones: the group every provider reads in, the only one
//! weft makes on a request stream. Another group a deployment adds to read
//! the same stream (an audit reader, say) is not counted.

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

/// KEYS: state, request stream, then one result stream per call; ARGV:
/// result TTL, group start, then one message per call. A call whose result
/// stream exists re-attaches whatever the toolset's state (it was admitted
/// before); with `after_init` its group is rewound to `0` so the caller
/// reads the stream again from `init`. The health check and queue depth
/// are read once; calls published earlier in the batch count against the
/// bound. A new stream is made by `XGROUP CREATE ... MKSTREAM` (which fails
/// when the stream and its group exist: a re-attach) and gets `init` at the
/// fixed id `0-1`, so the group's start is known before `init` is written.
const ADMIT_SCRIPT: &str = r"
local refuse = nil
local depth, max = 0, 0
local s = redis.call('HMGET', KEYS[1], 'last_pong_ms', 'stale_ms', 'max_queue', 'unanswered_since')
if not s[1] then
  refuse = {'unknown'}
else
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if s[4] and now - tonumber(s[4]) > tonumber(s[2]) then
    refuse = {'unhealthy', now - tonumber(s[1])}
  else
    depth = -1
    local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[2])
    if ok then
      for _, g in ipairs(groups) do
        local name, pending, lag
        for i = 1, #g, 2 do
          local k = g[i]
          if k == 'name' then name = g[i + 1]
          elseif k == 'pending' then pending = g[i + 1]
          elseif k == 'lag' then lag = g[i + 1] end
        end
        if name == 'provider' then
          if type(lag) ~= 'number' then lag = redis.call('XLEN', KEYS[2]) end
          depth = lag + pending
        end
      end
    end
    if depth < 0 then depth = redis.call('XLEN', KEYS[2]) end
    max = tonumber(s[3])
  end
end
local rewind = ARGV[2] == 'after_init'
local start = '0'
if rewind then start = '0-1' end
local function reattach(key)
  if rewind and not pcall(redis.call, 'XGROUP', 'SETID', key, 'agent', '0') then
    pcall(redis.call, 'XGROUP', 'CREATE', key, 'agent', '0')
  end
  return {'reattach'}
end
local out = {}
for i = 3, #KEYS do
  if refuse or depth >= max then
    if redis.call('EXISTS', KEYS[i]) == 1 then
      out[#out + 1] = reattach(KEYS[i])
    elseif refuse then
      out[#out + 1] = refuse
    else
      out[#out + 1] = {'queue_full', depth, max}
    end
  elseif not pcall(redis.call, 'XGROUP', 'CREATE', KEYS[i], 'agent', start, 'MKSTREAM') then
    out[#out + 1] = reattach(KEYS[i])
  elseif not pcall(redis.call, 'XADD', KEYS[i], '0-1', 'n', 'init', 'p', '{}') then
    -- A stream made by someone else, without the group: not a new call.
    out[#out + 1] = reattach(KEYS[i])
  else
    redis.call('PEXPIRE', KEYS[i], ARGV[1])
    out[#out + 1] = {'published', redis.call('XADD', KEYS[2], '*', 'n', 'call', 'p', ARGV[i])}
    depth = depth + 1
  end
end
return out
";

/// Where the result stream's `agent` group starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupStart {
    /// At `0`, so the group's first read returns `init`: what a reader of
    /// the protocol expects (the gateway's calls, read by any executor).
    Oldest,
    /// Just past `init`, so the first read waits for the call's first delta
    /// or its result: one read fewer per call. A re-attached call's group
    /// is rewound to `0`, so its caller reads the stream again from the
    /// start. weft's executor, which creates the stream and reads it, asks
    /// for this.
    AfterInit,
}

/// One call to admit: its transport id and its encoded call message.
#[derive(Debug, Clone)]
pub struct Call {
    /// The call's `tool_use_id` (names its result stream).
    pub tool_use_id: String,
    /// The encoded call message.
    pub message: Vec<u8>,
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
    let call = Call {
        tool_use_id: tool_use_id.to_owned(),
        message: message.to_vec(),
    };
    admit_batch(redis, ns, toolset, &[call], result_ttl_ms, start)
        .await?
        .pop()
        .ok_or_else(|| pulse::ReplyError("no admission outcome".into()).into())
}

/// Admits calls of one toolset in one script, in order: one outcome per call.
pub async fn admit_batch(
    redis: &Redis,
    ns: &Namespace,
    toolset: &str,
    calls: &[Call],
    result_ttl_ms: u64,
    start: GroupStart,
) -> Result<Vec<Admission>, RegistryError> {
    let script = invocation(ns, toolset, calls, result_ttl_ms, start);
    let reply: redis::Value = script.invoke_async(&mut redis.mux()).await?;
    outcomes(reply, calls.len())
}

/// The admission script's invocation for `calls` (the script itself may
/// still have to be loaded: [`redis::ScriptInvocation::invoke_async`] does
/// that, a pipeline's `EVALSHA` does not).
pub(crate) fn invocation(
    ns: &Namespace,
    toolset: &str,
    calls: &[Call],
    result_ttl_ms: u64,
    start: GroupStart,
) -> redis::ScriptInvocation<'static> {
    let mut script = admit_script().prepare_invoke();
    script
        .key(ns.state(toolset))
        .key(pulse::key(&wire::toolset_stream(toolset)))
        .arg(result_ttl_ms.max(1))
        .arg(match start {
            GroupStart::Oldest => "oldest",
            GroupStart::AfterInit => "after_init",
        });
    for call in calls {
        script
            .key(pulse::key(&wire::result_stream(&call.tool_use_id)))
            .arg(&call.message);
    }
    script
}

/// The script's reply read as one outcome per call, `n` calls.
pub(crate) fn outcomes(reply: redis::Value, n: usize) -> Result<Vec<Admission>, RegistryError> {
    let redis::Value::Array(items) = reply else {
        return Err(pulse::ReplyError(format!("admission reply {reply:?}")).into());
    };
    if items.len() != n {
        let got = items.len();
        return Err(pulse::ReplyError(format!("{got} admission outcomes for {n} calls")).into());
    }
    items
        .into_iter()
        .map(|o| {
            let (tag, rest) = split(o)?;
            outcome(&tag, &rest)
        })
        .collect()
}

fn outcome(tag: &str, rest: &[redis::Value]) -> Result<Admission, RegistryError> {
    let int = |i: usize| match rest.get(i) {
        Some(redis::Value::Int(n)) => Ok(*n),
        other => Err(pulse::ReplyError(format!("admission number {other:?}"))),
    };
    Ok(match tag {
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
