//! The health pinger: every ping interval, the node holding the pinger
//! lease (`SET NX PX` in Redis, renewed by its holder) publishes a ping to
//! each registered toolset. The ping id carries the toolset's registration
//! token, so a pong for an older registration is ignored.

use redis::Value;

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

pub(super) async fn run(gw: Gateway) {
    // The first ping goes out one interval after start, not at once: a
    // toolset registered a moment ago has had no chance to answer anyway.
    let period = gw.config.ping_interval;
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = ping_all(&gw).await {
            tracing::warn!(error = %e, "health pings failed");
        }
    }
}

async fn ping_all(gw: &Gateway) -> Result<(), crate::RegistryError> {
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
    for name in names {
        let Some(state) = gw.catalog.state(&name).await? else {
            continue;
        };
        let msg = wire::ToolCallMessage {
            kind: wire::TYPE_PING.to_owned(),
            ping_id: format!("{}/{}", state.token, uuid::Uuid::new_v4()),
            ..Default::default()
        };
        let key = pulse::key(&wire::toolset_stream(&name));
        let _: Value = pulse::xadd(&key, wire::TYPE_PING, &wire::encode(&msg))
            .query_async(&mut gw.redis.mux())
            .await?;
    }
    Ok(())
}
