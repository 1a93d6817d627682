//! The health pinger: every ping interval, the node holding the pinger
//! lease (`SET NX PX` in Redis, renewed by its holder) publishes a ping to
//! each registered toolset. The ping id carries the toolset's registration
//! token, so a pong for an older registration is ignored.
//!
//! A toolset is unhealthy when a ping has waited for its pong longer than
//! the staleness window (`unanswered_since` in its state, set by the first
//! unanswered ping and cleared by a pong), not when no pong came for a
//! while: pings that were never sent (no gateway ran the pinger, during a
//! restart say) miss no pong. At most one ping waits unread on a request
//! stream: while the `provider` group has not read the last one (no
//! provider is reading), no other is queued behind it. Names whose
//! registration expired are dropped from the set of toolsets. Every change
//! of a toolset's health, every failed pass and the pass after it are
//! logged.

use std::collections::HashSet;

use super::Gateway;
use crate::{pulse, wire};

/// Takes or renews the lease; true when this node holds it.
const LEASE_SCRIPT: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
";

/// Pings one toolset (KEYS: state, request stream; ARGV: the ping
/// message) unless its last ping is still unread: 'sent', 'unread' or
/// 'unknown' (not registered).
const PING_SCRIPT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 'unknown' end
local last = redis.call('HGET', KEYS[1], 'last_ping_id')
local function id_lt(a, b)
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  if not ams or not bms then return false end
  ams, bms = tonumber(ams), tonumber(bms)
  if ams ~= bms then return ams < bms end
  return tonumber(aseq) < tonumber(bseq)
end
if last then
  local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[2])
  if ok then
    for _, g in ipairs(groups) do
      local name, delivered
      for i = 1, #g, 2 do
        if g[i] == 'name' then name = g[i + 1]
        elseif g[i] == 'last-delivered-id' then delivered = g[i + 1] end
      end
      if name == 'provider' and delivered and id_lt(delivered, last) then return 'unread' end
    end
  end
end
local id = redis.call('XADD', KEYS[2], '*', 'n', 'ping', 'p', ARGV[1])
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'last_ping_id', id)
redis.call('HSETNX', KEYS[1], 'unanswered_since', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return 'sent'
";

pub(super) async fn run(gw: Gateway) {
    // The first ping goes out one interval after start, not at once: a
    // toolset registered a moment ago has had no chance to answer anyway.
    let period = gw.config.ping_interval;
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut unhealthy = HashSet::new();
    let mut failing = false;
    loop {
        tick.tick().await;
        match ping_all(&gw, &mut unhealthy).await {
            Ok(()) if failing => {
                failing = false;
                tracing::info!("health pings work again (Redis is reachable)");
            }
            Ok(()) => {}
            Err(e) => {
                failing = true;
                tracing::warn!(error = %e, "health pings failed (Redis unreachable?)");
            }
        }
    }
}

async fn ping_all(
    gw: &Gateway,
    unhealthy: &mut HashSet<String>,
) -> Result<(), crate::RegistryError> {
    let lease_ms = u64::try_from((gw.config.ping_interval * 3).as_millis()).unwrap_or(u64::MAX);
    let held: i64 = redis::Script::new(LEASE_SCRIPT)
        .key(gw.config.namespace.pinger())
        .arg(&gw.config.node_id)
        .arg(lease_ms.max(1))
        .invoke_async(&mut gw.redis.mux())
        .await?;
    if held != 1 {
        return Ok(());
    }
    let mut names: Vec<String> = redis::cmd("SMEMBERS")
        .arg(gw.config.namespace.toolsets())
        .query_async(&mut gw.redis.mux())
        .await?;
    names.sort();
    let ping = redis::Script::new(PING_SCRIPT);
    for name in names {
        let Some(state) = gw.catalog.state(&name).await? else {
            if gw.catalog.prune(&name).await? {
                tracing::info!(toolset = %name, "dropped a toolset whose registration expired without a pong");
            }
            unhealthy.remove(&name);
            continue;
        };
        if !state.healthy() && unhealthy.insert(name.clone()) {
            tracing::warn!(
                toolset = %name,
                unanswered_ms = state.unanswered_ms,
                "a toolset missed its pongs: no provider answered a ping; calls are refused"
            );
        } else if state.healthy() && unhealthy.remove(&name) {
            tracing::info!(toolset = %name, "a toolset answers pings again");
        }
        let msg = wire::ToolCallMessage {
            kind: wire::TYPE_PING.to_owned(),
            ping_id: format!("{}/{}", state.token, uuid::Uuid::new_v4()),
            ..Default::default()
        };
        let sent: String = ping
            .key(gw.config.namespace.state(&name))
            .key(pulse::key(&wire::toolset_stream(&name)))
            .arg(wire::encode(&msg))
            .invoke_async(&mut gw.redis.mux())
            .await?;
        if sent == "unread" {
            tracing::debug!(toolset = %name, "the last ping is unread; no other is queued");
        }
    }
    Ok(())
}
