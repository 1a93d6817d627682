//! The claimer: every claim interval it dead-letters calls delivered too
//! often, takes over calls left idle past the grace period (a crashed
//! provider's) with `XAUTOCLAIM`, and trims request entries every consumer
//! has acknowledged, never an unread or pending one; now and then it tidies
//! dead consumers and old dead letters ([`super::tidy`]). A pass that fails
//! (Redis lost) is logged once, and so is the first pass that works again.

use std::sync::Arc;

use redis::Value;

use super::Shared;
use super::worker::dead_letter_result;
use crate::pulse::{self, Body};
use crate::wire::{self, ToolCallMessage};

/// Most entries looked at per pass.
const BATCH: usize = 64;

/// Claim passes between two tidying passes ([`super::tidy`]).
const TIDY_EVERY: u32 = 12;

pub(crate) async fn run(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(shared.config.claim_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    let mut passes = 0u32;
    loop {
        tick.tick().await;
        passes = passes.wrapping_add(1);
        let mut res = pass(&shared).await;
        if res.is_ok() && passes % TIDY_EVERY == 1 {
            res = super::tidy::pass(&shared).await;
        }
        match res {
            Ok(()) if failing => {
                failing = false;
                tracing::info!(toolset = %shared.registry_toolset, "claiming idle calls works again");
            }
            Ok(()) => {}
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(toolset = %shared.registry_toolset, error = %e, "claiming idle calls failed (Redis unreachable?)");
            }
            Err(e) => tracing::debug!(error = %e, "claim pass failed again"),
        }
    }
}

async fn pass(shared: &Arc<Shared>) -> Result<(), crate::RegistryError> {
    let grace = u64::try_from(shared.config.claim_grace.as_millis()).unwrap_or(u64::MAX);
    dead_letter(shared, grace).await?;
    let free = shared.permits.available_permits();
    if free > 0 {
        let reply: Value = redis::cmd("XAUTOCLAIM")
            .arg(&shared.stream_key)
            .arg(wire::GROUP_PROVIDER)
            .arg(&shared.config.consumer)
            .arg(grace)
            .arg("0-0")
            .arg("COUNT")
            .arg(free.min(BATCH))
            .query_async(&mut shared.redis.mux())
            .await?;
        if let Value::Array(mut parts) = reply
            && parts.len() >= 2
        {
            // Redis 7: the third part lists pending ids no longer in the
            // stream (deleted by hand, or the stream was cut), dropped
            // from the group: calls nobody will answer.
            if let Some(Value::Array(gone)) = parts.get(2)
                && !gone.is_empty()
            {
                tracing::warn!(
                    toolset = %shared.registry_toolset,
                    calls = gone.len(),
                    "pending calls vanished from the request stream (deleted or trimmed by someone else); their callers get no result"
                );
            }
            let entries = pulse::parse_entries(parts.swap_remove(1))?;
            for entry in entries {
                tracing::info!(id = %entry.id, "claimed an idle call");
                shared.handle(entry).await;
            }
        }
    }
    trim(shared).await
}

/// Moves calls delivered `max_deliveries` times to the dead-letter stream,
/// answers them with an error and acknowledges them.
async fn dead_letter(shared: &Arc<Shared>, grace: u64) -> Result<(), crate::RegistryError> {
    let reply: Value = redis::cmd("XPENDING")
        .arg(&shared.stream_key)
        .arg(wire::GROUP_PROVIDER)
        .arg("IDLE")
        .arg(grace)
        .arg("-")
        .arg("+")
        .arg(BATCH)
        .query_async(&mut shared.redis.mux())
        .await?;
    let Value::Array(items) = reply else {
        return Ok(());
    };
    for item in items {
        let Value::Array(fields) = item else { continue };
        let (Some(Value::BulkString(id)), Some(Value::Int(deliveries))) =
            (fields.first(), fields.get(3))
        else {
            continue;
        };
        let deliveries = u64::try_from(*deliveries).unwrap_or(0);
        if deliveries < shared.config.max_deliveries {
            continue;
        }
        let id = String::from_utf8_lossy(id).into_owned();
        let range: Value = redis::cmd("XRANGE")
            .arg(&shared.stream_key)
            .arg(&id)
            .arg(&id)
            .query_async(&mut shared.redis.mux())
            .await?;
        let dead_key = super::tidy::dead_letter_key(&shared.registry_toolset);
        let mut add = redis::cmd("XADD");
        add.arg(&dead_key)
            .arg("MAXLEN")
            .arg("~")
            .arg(shared.config.dead_letter_max)
            .arg("*");
        let mut answer = None;
        match pulse::parse_entries(range)?
            .into_iter()
            .next()
            .map(|e| e.body)
        {
            Some(Body::Event { name, payload }) => {
                add.arg("n").arg(&name).arg("p").arg(&payload);
                if let Ok(msg) = wire::decode::<ToolCallMessage>(&payload)
                    && !msg.tool_use_id.is_empty()
                {
                    answer = Some(msg.tool_use_id);
                }
            }
            _ => {
                add.arg("n").arg("unknown").arg("p").arg("");
            }
        }
        add.arg("reason")
            .arg(format!("delivered {deliveries} times"))
            .arg("id")
            .arg(&id);
        // Recorded first, then answered, then acknowledged.
        let _: Value = add.query_async(&mut shared.redis.mux()).await?;
        if let Some(tool_use_id) = answer {
            let result = wire::encode(&dead_letter_result(&tool_use_id, deliveries));
            let key = pulse::key(&wire::result_stream(&tool_use_id));
            let mut res = redis::cmd("XADD");
            res.arg(&key)
                .arg("NOMKSTREAM")
                .arg("*")
                .arg("n")
                .arg(wire::EVENT_RESULT)
                .arg("p")
                .arg(result);
            let _: Value = res.query_async(&mut shared.redis.mux()).await?;
        }
        shared.ack(&id).await;
        tracing::warn!(toolset = %shared.registry_toolset, %id, deliveries, "dead-lettered a call delivered too often without a result");
    }
    Ok(())
}

/// Trims entries before the oldest one still unread or unacknowledged.
/// The groups' last-delivered ids are read before the pending entries: a
/// call delivered in between is then either past a last-delivered id read
/// (kept) or pending when the pending entries are read (kept), never
/// trimmed while a provider still works on it.
async fn trim(shared: &Shared) -> Result<(), crate::RegistryError> {
    let groups: Value = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(&shared.stream_key)
        .query_async(&mut shared.redis.mux())
        .await?;
    let Value::Array(groups) = groups else {
        return Ok(());
    };
    let summary: Value = redis::cmd("XPENDING")
        .arg(&shared.stream_key)
        .arg(wire::GROUP_PROVIDER)
        .query_async(&mut shared.redis.mux())
        .await?;
    let oldest_pending = match &summary {
        Value::Array(f) => match f.get(1) {
            Some(Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        },
        _ => None,
    };
    let mut min: Option<(u64, u64)> = oldest_pending.as_deref().and_then(parse_id);
    for g in groups {
        let fields = match g {
            Value::Array(f) => f,
            Value::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
            _ => continue,
        };
        let mut it = fields.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            if matches!(&k, Value::BulkString(b) if b == b"last-delivered-id")
                && let Value::BulkString(b) = v
                && let Some((ms, seq)) = parse_id(&String::from_utf8_lossy(&b))
            {
                let next = (ms, seq.saturating_add(1));
                min = Some(min.map_or(next, |m| m.min(next)));
            }
        }
    }
    if let Some((ms, seq)) = min {
        let _: Value = redis::cmd("XTRIM")
            .arg(&shared.stream_key)
            .arg("MINID")
            .arg(format!("{ms}-{seq}"))
            .query_async(&mut shared.redis.mux())
            .await?;
    }
    Ok(())
}

fn parse_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}
