//! Where a waiting call's result-stream entries come from ([`Source`]):
//! the executor's shared [`Reader`](super::reader::Reader), or a dedicated
//! connection reading the call's stream alone (a lone call's, see
//! [`lone`](super::lone)).
//!
//! A dedicated read that fails on its connection hands the call over to the
//! shared reader: the `agent` group is set back to the last entry the call
//! took, so nothing the failed read may have taken (reads are `NOACK`) is
//! lost, and nothing is delivered twice.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::RegistryToolSet;
use super::reader::{Item, MAX_BLOCK, Registration};
use crate::conn::Blocking;
use crate::error::{RegistryError, is_nogroup};
use crate::pulse::{self, Entry};
use crate::wire;

/// How long past its `BLOCK` a dedicated read may take before its
/// connection is given up.
const GRACE: Duration = Duration::from_secs(2);

/// Most entries one dedicated read returns.
pub(super) const COUNT: usize = 64;

/// What waiting on a source gave.
#[derive(Debug)]
pub(super) enum Next {
    /// An entry, or word that the stream is gone.
    Item(Item),
    /// The deadline passed.
    TimedOut,
    /// The shared reader stopped.
    Stopped,
}

/// Where a call's entries come from.
pub(super) enum Source {
    /// The executor's shared reader.
    Shared(Registration),
    /// A dedicated connection reading this call's stream alone.
    Own(Own),
}

/// A dedicated connection reading one result stream in the `agent` group.
pub(super) struct Own {
    conn: Blocking,
    key: String,
    /// Entries read and not yet taken.
    buffered: VecDeque<Entry>,
    /// The id of the last entry taken (`0`: none).
    last_id: String,
}

impl Own {
    /// Reads `key` on `conn`; `first` is what the first read (sent with
    /// the call's admission) returned.
    pub(super) fn new(conn: Blocking, key: String, first: Vec<Entry>) -> Self {
        Self {
            conn,
            key,
            buffered: first.into(),
            last_id: "0".to_owned(),
        }
    }
}

/// The `XREADGROUP` of one result stream, blocking up to `block` (at least
/// 1 ms: `BLOCK 0` would wait forever).
pub(super) fn read_cmd(consumer: &str, key: &str, block: Duration) -> redis::Cmd {
    let ms = u64::try_from(block.as_millis()).unwrap_or(u64::MAX).max(1);
    let mut cmd = redis::cmd("XREADGROUP");
    cmd.arg("GROUP")
        .arg(wire::GROUP_AGENT)
        .arg(consumer)
        .arg("COUNT")
        .arg(COUNT)
        .arg("BLOCK")
        .arg(ms)
        .arg("NOACK")
        .arg("STREAMS")
        .arg(key)
        .arg(">");
    cmd
}

/// The first read's block: up to the deadline, at most [`MAX_BLOCK`].
pub(super) fn block_until(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .min(MAX_BLOCK)
}

/// The entries of a one-stream read (`nil` when it timed out).
pub(super) fn entries(reply: redis::Value) -> Result<Vec<Entry>, pulse::ReplyError> {
    Ok(pulse::parse_read(reply)?
        .into_iter()
        .flat_map(|(_, entries)| entries)
        .collect())
}

impl Source {
    /// The next entry of the call's stream, waiting until `deadline`.
    pub(super) async fn next(&mut self, ex: &RegistryToolSet, deadline: Instant) -> Next {
        loop {
            let own = match self {
                Source::Shared(reg) => {
                    return match tokio::time::timeout_at(deadline.into(), reg.next()).await {
                        Err(_) => Next::TimedOut,
                        Ok(None) => Next::Stopped,
                        Ok(Some(item)) => Next::Item(item),
                    };
                }
                Source::Own(own) => own,
            };
            if let Some(entry) = own.buffered.pop_front() {
                own.last_id.clone_from(&entry.id);
                return Next::Item(Item::Entry(entry));
            }
            let block = block_until(deadline);
            if block.is_zero() {
                return Next::TimedOut;
            }
            let cmd = read_cmd(&ex.config.consumer, &own.key, block);
            let read = tokio::time::timeout(block + GRACE, own.conn.query(&cmd)).await;
            let failed = match read {
                Ok(Ok(reply)) => match entries(reply) {
                    Ok(got) => {
                        own.buffered.extend(got);
                        continue;
                    }
                    Err(e) => e.to_string(),
                },
                Ok(Err(RegistryError::Redis(e))) if is_nogroup(&e) => {
                    return Next::Item(Item::Gone);
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => "no reply within its block".to_owned(),
            };
            tracing::debug!(key = %own.key, error = %failed, "a dedicated result read failed; the shared reader takes over");
            match hand_over(ex, &own.key, &own.last_id).await {
                Ok(()) => *self = Source::Shared(ex.reader.register(&own.key).await),
                Err(RegistryError::Redis(e)) if is_nogroup(&e) => return Next::Item(Item::Gone),
                Err(e) => {
                    // Redis is unreachable: the shared reader reconnects,
                    // and reads from where the group stands.
                    tracing::warn!(key = %own.key, error = %e, "could not rewind a result stream's group");
                    *self = Source::Shared(ex.reader.register(&own.key).await);
                }
            }
        }
    }
}

/// Sets the stream's `agent` group back to `last_id`, the last entry taken.
async fn hand_over(ex: &RegistryToolSet, key: &str, last_id: &str) -> Result<(), RegistryError> {
    redis::cmd("XGROUP")
        .arg("SETID")
        .arg(key)
        .arg(wire::GROUP_AGENT)
        .arg(last_id)
        .query_async::<()>(&mut ex.redis.mux())
        .await
        .map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cmd: &redis::Cmd) -> Vec<String> {
        cmd.args_iter()
            .map(|a| match a {
                redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
                _ => "<other>".to_owned(),
            })
            .collect()
    }

    #[test]
    fn a_read_never_blocks_forever() {
        let block = |d: Duration| {
            let a = args(&read_cmd("c", "k", d));
            let i = a.iter().position(|x| x == "BLOCK").unwrap();
            a[i + 1].clone()
        };
        assert_eq!(block(Duration::ZERO), "1", "BLOCK 0 would wait forever");
        assert_eq!(block(Duration::from_micros(300)), "1");
        assert_eq!(block(Duration::from_millis(2500)), "2500");
        let a = args(&read_cmd("me", "key", Duration::from_secs(1)));
        assert_eq!(
            a,
            [
                "XREADGROUP",
                "GROUP",
                "agent",
                "me",
                "COUNT",
                "64",
                "BLOCK",
                "1000",
                "NOACK",
                "STREAMS",
                "key",
                ">"
            ]
        );
    }

    #[test]
    fn the_block_ends_at_the_deadline_and_is_capped() {
        let now = Instant::now();
        assert_eq!(block_until(now), Duration::ZERO);
        assert_eq!(
            block_until(now + Duration::from_secs(3600)),
            MAX_BLOCK,
            "a long call reads in bounded steps"
        );
        let soon = block_until(now + Duration::from_millis(800));
        assert!(soon <= Duration::from_millis(800) && soon > Duration::from_millis(700));
    }

    #[test]
    fn a_timed_out_read_has_no_entries() {
        assert!(entries(redis::Value::Nil).unwrap().is_empty());
        assert!(entries(redis::Value::Int(3)).is_err());
    }
}
