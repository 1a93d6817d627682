//! Keeping a toolset's streams bounded: consumers of the `provider` group
//! that have been idle past [`super::ProviderConfig::dead_consumer_after`]
//! with nothing pending (providers that stopped) are deleted, and the
//! dead-letter stream keeps at most
//! [`super::ProviderConfig::dead_letter_max`] entries, none older than
//! [`super::ProviderConfig::dead_letter_ttl`]. Run by the claimer now and
//! then; every deletion is logged.

use redis::Value;

use super::Shared;
use crate::RegistryError;
use crate::{pulse, wire};

/// The dead-letter stream's key.
pub(crate) fn dead_letter_key(toolset: &str) -> String {
    pulse::key(&format!("toolset:{toolset}:dead"))
}

/// One tidying pass.
pub(crate) async fn pass(shared: &Shared) -> Result<(), RegistryError> {
    drop_dead_consumers(shared).await?;
    trim_dead_letters(shared).await
}

async fn drop_dead_consumers(shared: &Shared) -> Result<(), RegistryError> {
    let reply: Value = redis::cmd("XINFO")
        .arg("CONSUMERS")
        .arg(&shared.stream_key)
        .arg(wire::GROUP_PROVIDER)
        .query_async(&mut shared.redis.mux())
        .await?;
    let Value::Array(consumers) = reply else {
        return Ok(());
    };
    let limit = i64::try_from(shared.config.dead_consumer_after.as_millis()).unwrap_or(i64::MAX);
    for c in consumers {
        let Some(info) = consumer_info(c) else {
            continue;
        };
        if info.name == shared.config.consumer || info.pending > 0 || info.idle_ms < limit {
            continue;
        }
        let _: i64 = redis::cmd("XGROUP")
            .arg("DELCONSUMER")
            .arg(&shared.stream_key)
            .arg(wire::GROUP_PROVIDER)
            .arg(&info.name)
            .query_async(&mut shared.redis.mux())
            .await?;
        tracing::info!(
            toolset = %shared.registry_toolset,
            consumer = %info.name,
            idle_ms = info.idle_ms,
            "deleted a provider consumer idle with nothing pending (a provider that stopped)"
        );
    }
    Ok(())
}

struct ConsumerInfo {
    name: String,
    pending: i64,
    idle_ms: i64,
}

/// One entry of `XINFO CONSUMERS` (a flat array in RESP2, a map in RESP3).
fn consumer_info(v: Value) -> Option<ConsumerInfo> {
    let fields: Vec<Value> = match v {
        Value::Array(f) => f,
        Value::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        _ => return None,
    };
    let (mut name, mut pending, mut idle) = (None, None, None);
    let mut it = fields.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        let Value::BulkString(k) = k else { continue };
        match (k.as_slice(), v) {
            (b"name", Value::BulkString(n)) => {
                name = Some(String::from_utf8_lossy(&n).into_owned())
            }
            (b"pending", Value::Int(n)) => pending = Some(n),
            (b"idle", Value::Int(n)) => idle = Some(n),
            _ => {}
        }
    }
    Some(ConsumerInfo {
        name: name?,
        pending: pending?,
        idle_ms: idle?,
    })
}

async fn trim_dead_letters(shared: &Shared) -> Result<(), RegistryError> {
    let key = dead_letter_key(&shared.registry_toolset);
    let ttl = u64::try_from(shared.config.dead_letter_ttl.as_millis()).unwrap_or(u64::MAX);
    let oldest = wire::unix_ms().saturating_sub(ttl);
    let by_age: i64 = redis::cmd("XTRIM")
        .arg(&key)
        .arg("MINID")
        .arg(oldest)
        .query_async(&mut shared.redis.mux())
        .await?;
    let by_count: i64 = redis::cmd("XTRIM")
        .arg(&key)
        .arg("MAXLEN")
        .arg(shared.config.dead_letter_max)
        .query_async(&mut shared.redis.mux())
        .await?;
    if by_age + by_count > 0 {
        tracing::info!(
            toolset = %shared.registry_toolset,
            expired = by_age,
            over_limit = by_count,
            "trimmed the dead-letter stream"
        );
    }
    Ok(())
}
