//! One reader for every result stream an executor waits on ([`Reader`]).
//!
//! A blocking read per call costs a connection, a task hop and two system
//! calls per call, and reads one result at a time. The reader instead keeps
//! one `XREADGROUP ... NOACK` in flight over every stream with a waiting
//! call, on one dedicated connection, and hands each entry to its call:
//! under load one read returns many calls' results.
//!
//! A call registers its stream once its admission created the stream and
//! the `agent` group. A read already in flight does not name the new stream,
//! so the first call registered during a read adds an entry to this reader's
//! wake stream, which every read names too: the read returns, and the next
//! one names every waiting stream. At most one wake is sent per read. With no
//! call waiting the reader sleeps until one registers.
//!
//! Each call's entries go through a channel of its own, unbounded: one
//! read brings at most [`COUNT`] entries of a stream, and the call drains
//! its channel as it forwards them.
//!
//! A stream that vanished (TTL, deletion, Redis lost its data) fails the
//! whole read with `NOGROUP`, naming the key: that call is told its stream
//! is gone, and the read goes on without it. A lost connection is reopened
//! with backoff; calls keep waiting until their own deadlines.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use weft_core::backoff::BackoffPolicy;

use crate::conn::{Blocking, Redis};
use crate::error::{RegistryError, is_busygroup, is_nogroup};
use crate::pulse::{self, Body, Entry};
use crate::wire;

/// Longest single blocking read, so a broken connection is noticed (the
/// shared reader's and a lone call's dedicated reads alike).
pub(super) const MAX_BLOCK: Duration = Duration::from_secs(5);

/// Most entries one read returns per stream.
const COUNT: usize = 256;

/// How long the wake stream lives after its last wake.
const WAKE_TTL_MS: u64 = 60 * 60 * 1000;

/// What the reader hands a waiting call.
#[derive(Debug)]
pub(super) enum Item {
    /// An entry of the call's result stream.
    Entry(Entry),
    /// The call's stream or its group no longer exists.
    Gone,
}

/// The reader of one executor's result streams.
pub(super) struct Reader {
    redis: Redis,
    consumer: String,
    /// This reader's wake stream.
    wake_key: String,
    state: Mutex<State>,
    idle: Arc<Notify>,
}

#[derive(Default)]
struct State {
    /// Each waiting call's stream, registration number and channel.
    waiters: HashMap<String, (u64, mpsc::UnboundedSender<Item>)>,
    next_id: u64,
    /// A read is in flight, over the streams waited on when it began.
    reading: bool,
    /// A wake was sent since that read began.
    woken: bool,
}

impl Reader {
    /// A reader for `consumer` in the result streams' `agent` group, and
    /// its task, which ends once every holder has dropped the reader (the
    /// task keeps only a weak reference while it waits).
    pub(super) fn start(redis: Redis, consumer: &str) -> Arc<Self> {
        let reader = Arc::new(Self {
            redis,
            // Its own, even if two executors were given one consumer name:
            // a wake must reach this reader, not another in the group.
            wake_key: pulse::key(&format!(
                "executor:{consumer}:{}:wake",
                uuid::Uuid::new_v4().simple()
            )),
            consumer: consumer.to_owned(),
            state: Mutex::new(State::default()),
            idle: Arc::new(Notify::new()),
        });
        tokio::spawn(run(Arc::downgrade(&reader)));
        reader
    }

    /// Waits on the stream `key` (its group must exist): entries arrive on
    /// the returned registration until it is dropped.
    pub(super) async fn register(self: &Arc<Self>, key: &str) -> Registration {
        let (tx, rx) = mpsc::unbounded_channel();
        let (id, wake) = {
            let mut state = self.lock();
            let id = state.next_id;
            state.next_id += 1;
            state.waiters.insert(key.to_owned(), (id, tx));
            let wake = if !state.reading {
                self.idle.notify_one();
                false
            } else if state.woken {
                false
            } else {
                state.woken = true;
                true
            };
            (id, wake)
        };
        if wake {
            self.wake().await;
        }
        Registration {
            reader: self.clone(),
            key: key.to_owned(),
            id,
            rx,
        }
    }

    /// Makes the read in flight return.
    async fn wake(&self) {
        let sent: Result<(), redis::RedisError> = redis::pipe()
            .cmd("XADD")
            .arg(&self.wake_key)
            .arg("MAXLEN")
            .arg("~")
            .arg(16)
            .arg("*")
            .arg("n")
            .arg("wake")
            .arg("p")
            .arg("{}")
            .ignore()
            .cmd("PEXPIRE")
            .arg(&self.wake_key)
            .arg(WAKE_TTL_MS)
            .ignore()
            .query_async(&mut self.redis.mux())
            .await;
        if let Err(e) = sent {
            // The read returns by itself within MAX_BLOCK.
            tracing::debug!(error = %e, "waking the result reader failed");
        }
    }

    /// Creates the wake stream's group (the stream with it) if missing.
    async fn ensure_wake_group(&self) -> Result<(), RegistryError> {
        let created: Result<(), redis::RedisError> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&self.wake_key)
            .arg(wire::GROUP_AGENT)
            .arg("$")
            .arg("MKSTREAM")
            .query_async(&mut self.redis.mux())
            .await;
        match created {
            Err(e) if !is_busygroup(&e) => Err(e.into()),
            _ => {
                let _: Result<(), redis::RedisError> = redis::cmd("PEXPIRE")
                    .arg(&self.wake_key)
                    .arg(WAKE_TTL_MS)
                    .query_async(&mut self.redis.mux())
                    .await;
                Ok(())
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The map holds senders only; a panic elsewhere leaves it usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The streams to read now, or `None` (and the reader marked idle)
    /// when no call waits.
    fn begin_read(&self) -> Option<Vec<String>> {
        let mut state = self.lock();
        if state.waiters.is_empty() {
            state.reading = false;
            return None;
        }
        state.reading = true;
        state.woken = false;
        Some(state.waiters.keys().cloned().collect())
    }

    /// Hands `entries` of stream `key` to its call. A result ends the
    /// call's wait, so the stream leaves the next read at once (its call
    /// deletes it, and a read naming a deleted stream fails).
    fn deliver(&self, key: &str, entries: Vec<Entry>) {
        let mut state = self.lock();
        let Some((_, tx)) = state.waiters.get(key) else {
            return;
        };
        let mut ended = false;
        for entry in entries {
            ended |= matches!(&entry.body, Body::Event { name, .. } if name == wire::EVENT_RESULT);
            let _ = tx.send(Item::Entry(entry));
        }
        if ended {
            state.waiters.remove(key);
        }
    }

    /// Tells the call waiting on `key` that its stream is gone.
    fn gone(&self, key: &str) {
        if let Some((_, tx)) = self.lock().waiters.remove(key) {
            let _ = tx.send(Item::Gone);
        }
    }
}

/// A call waiting on its result stream; it stops waiting when dropped.
pub(super) struct Registration {
    reader: Arc<Reader>,
    key: String,
    id: u64,
    rx: mpsc::UnboundedReceiver<Item>,
}

impl Registration {
    /// The next entry, or `None` when the reader stopped.
    pub(super) async fn next(&mut self) -> Option<Item> {
        self.rx.recv().await
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut state = self.reader.lock();
        // Only this registration: a newer one for the same stream may have
        // replaced it.
        if state
            .waiters
            .get(&self.key)
            .is_some_and(|(id, _)| *id == self.id)
        {
            state.waiters.remove(&self.key);
        }
    }
}

/// The reader's loop; it ends once the [`Reader`] is gone.
async fn run(reader: std::sync::Weak<Reader>) {
    let mut conn: Option<Blocking> = None;
    let mut backoff = BackoffPolicy::new(Duration::from_millis(20), Duration::from_secs(1)).start();
    let mut wake_ready = false;
    // The last read failed with a server error.
    let mut cut_short = false;
    loop {
        let Some(r) = reader.upgrade() else { return };
        let Some(keys) = r.begin_read() else {
            // A registration notifies (or leaves a permit, if it came
            // first). Holding no strong reference while idle lets the
            // reader go; the timeout notices that.
            let idle = r.idle.clone();
            drop(r);
            tokio::select! {
                () = idle.notified() => {}
                () = tokio::time::sleep(MAX_BLOCK) => {}
            }
            continue;
        };
        if !wake_ready {
            match r.ensure_wake_group().await {
                Ok(()) => wake_ready = true,
                Err(e) => {
                    tracing::warn!(error = %e, "creating the result reader's wake group failed; retrying");
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
            }
        }
        if conn.is_none() {
            match r.redis.blocking().await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    tracing::warn!(error = %e, "connecting to Redis failed; retrying");
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(wire::GROUP_AGENT)
            .arg(&r.consumer)
            .arg("COUNT")
            .arg(COUNT)
            .arg("BLOCK")
            .arg(u64::try_from(MAX_BLOCK.as_millis()).unwrap_or(u64::MAX))
            .arg("NOACK")
            .arg("STREAMS")
            .arg(&r.wake_key)
            .arg(&keys);
        for _ in 0..=keys.len() {
            cmd.arg(">");
        }
        // The read may block for long: hold no strong reference meanwhile.
        let wake_key = r.wake_key.clone();
        drop(r);
        let reply = c.query(&cmd).await;
        let Some(r) = reader.upgrade() else { return };
        if reply.is_ok() {
            cut_short = false;
        }
        match reply {
            Ok(reply) => {
                backoff.reset();
                match pulse::parse_read(reply) {
                    Ok(streams) => {
                        for (key, entries) in streams {
                            if key != wake_key {
                                r.deliver(&key, entries);
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "unreadable result read"),
                }
            }
            Err(RegistryError::Redis(e)) if is_nogroup(&e) => match nogroup_key(&e.to_string()) {
                Some(key) if key == wake_key => wake_ready = false,
                Some(key) => r.gone(&key),
                None => {
                    tracing::warn!(error = %e, "a result stream is gone; cannot tell which");
                    tokio::time::sleep(backoff.next_delay()).await;
                }
            },
            // A stream deleted while the read blocked on it (a call that
            // timed out) unblocks the read with an error: read again.
            Err(RegistryError::Redis(e)) if !broken(&e) && !r.lock().waiters.is_empty() => {
                tracing::debug!(error = %e, "a result read was cut short; reading again");
                // Once at once; an error that repeats backs off.
                if cut_short {
                    tokio::time::sleep(backoff.next_delay()).await;
                }
                cut_short = true;
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading results failed; reconnecting");
                conn = None;
                wake_ready = false;
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}

/// Whether `e` means the connection is no longer usable.
fn broken(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() || e.is_timeout()
}

/// The key a `NOGROUP` error names: `No such key '<key>' or consumer group
/// ...`.
fn nogroup_key(text: &str) -> Option<String> {
    let start = text.find('\'')? + 1;
    let len = text[start..].find('\'')?;
    Some(text[start..start + len].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_key_of_a_nogroup_error() {
        let text = "NOGROUP: No such key 'pulse:stream:result:r/c' or consumer group 'agent' \
                    in XREADGROUP with GROUP option";
        assert_eq!(
            nogroup_key(text).as_deref(),
            Some("pulse:stream:result:r/c")
        );
        assert_eq!(nogroup_key("NOGROUP garbled"), None);
    }
}
