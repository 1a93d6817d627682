//! The provider's read loop: new calls are read from the `provider` group
//! only while a worker is free, so unread calls wait in Redis, never in
//! memory. A lost group is recreated (Redis lost its state), a lost
//! connection reconnected with backoff; the loss is logged once, and so is
//! the recovery.

use std::sync::Arc;
use std::time::Duration;

use weft_core::backoff::BackoffPolicy;

use super::Shared;
use crate::error::{RegistryError, is_nogroup};
use crate::{pulse, wire};

/// Waits between attempts to reach Redis again.
const RECONNECT: BackoffPolicy =
    BackoffPolicy::new(Duration::from_millis(20), Duration::from_secs(2));

/// Reads new calls while there are free workers; recreates the group when
/// Redis lost it and reconnects with backoff when Redis is down.
pub(super) async fn read_loop(shared: Arc<Shared>) -> Result<(), RegistryError> {
    let mut backoff = RECONNECT.start();
    let mut conn = None;
    // Set while Redis is lost: logged when lost and when back, not per retry.
    let mut lost = false;
    loop {
        // Wait for a free worker before reading, so unread calls stay in Redis.
        let free = match shared.permits.available_permits() {
            0 => {
                let _ = shared.permits.acquire().await;
                1
            }
            n => n,
        };
        if conn.is_none() {
            match shared.redis.blocking().await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    if !std::mem::replace(&mut lost, true) {
                        tracing::warn!(toolset = %shared.registry_toolset, error = %e, "Redis is unreachable; reconnecting with backoff");
                    } else {
                        tracing::debug!(error = %e, "connecting to Redis failed again");
                    }
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(wire::GROUP_PROVIDER)
            .arg(&shared.config.consumer)
            .arg("COUNT")
            .arg(free)
            .arg("BLOCK")
            .arg(u64::try_from(shared.config.block.as_millis()).unwrap_or(u64::MAX))
            .arg("STREAMS")
            .arg(&shared.stream_key)
            .arg(">");
        match c.query(&cmd).await {
            Ok(reply) => {
                if std::mem::replace(&mut lost, false) {
                    tracing::info!(toolset = %shared.registry_toolset, "Redis is reachable again; reading calls");
                }
                backoff.reset();
                match pulse::parse_read(reply) {
                    Ok(streams) => {
                        for (_, entries) in streams {
                            for entry in entries {
                                shared.handle(entry).await;
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "unreadable reply"),
                }
            }
            Err(RegistryError::Redis(e)) if is_nogroup(&e) => {
                tracing::warn!(toolset = %shared.registry_toolset, "the request group is gone (Redis lost its state); recreating it");
                if let Err(e) = shared.register().await {
                    tracing::warn!(error = %e, "recreating the group failed");
                    tokio::time::sleep(backoff.next_delay()).await;
                }
            }
            Err(e) => {
                if !std::mem::replace(&mut lost, true) {
                    tracing::warn!(toolset = %shared.registry_toolset, error = %e, "reading calls failed (Redis lost?); reconnecting with backoff");
                } else {
                    tracing::debug!(error = %e, "reading calls failed again");
                }
                conn = None;
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}
