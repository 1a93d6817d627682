//! The raw floors of `weft bench registry`: a consumer-group reader answering
//! each request on a stream with plain Redis commands, no weft code between.
//!
//! Three clients over the same server: plain (a blocking read of the call's
//! own result stream), shared (every result on one stream, read in batches),
//! and protocol (what the registry's protocol asks of Redis per call, in
//! native pipelined commands: the call's result stream created with `init`,
//! a TTL and the `agent` group; the request published; the result read in
//! that group by one batched read over every waiting stream; the stream
//! deleted). The protocol floor tells the protocol's cost from weft's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use weft_registry::{Redis, pulse};

/// How the raw floor's client waits for results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Client {
    /// A blocking `XREAD` of each call's own result stream.
    Plain,
    /// Every result on one shared stream, read in batches.
    Shared,
    /// Per-call result streams as the registry protocol makes them.
    Protocol,
}

/// The raw floor: a consumer-group reader answering each request on a stream.
pub(super) struct RawServer {
    redis: Redis,
    req_key: String,
    results_key: String,
    waiters: Arc<Mutex<HashMap<String, oneshot::Sender<()>>>>,
    seq: AtomicU64,
    /// Wakes the protocol reader when a call registers.
    registered: Notify,
}

impl RawServer {
    pub(super) async fn start(
        redis: &Redis,
        prefix: &str,
        client: Client,
    ) -> anyhow::Result<Arc<Self>> {
        let req_key = format!("{prefix}:requests");
        let _: () = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&req_key)
            .arg("g")
            .arg("$")
            .arg("MKSTREAM")
            .query_async(&mut redis.mux())
            .await?;
        let this = Arc::new(Self {
            redis: redis.clone(),
            req_key,
            results_key: format!("{prefix}:results"),
            waiters: Arc::default(),
            seq: AtomicU64::new(0),
            registered: Notify::new(),
        });
        tokio::spawn(this.clone().serve(client != Client::Plain));
        match client {
            Client::Plain => {}
            Client::Shared => drop(tokio::spawn(this.clone().read_results())),
            Client::Protocol => drop(tokio::spawn(this.clone().read_protocol())),
        }
        Ok(this)
    }

    /// Reads requests in the group and answers each with an `XADD` to the
    /// stream its payload names, then acknowledges (batched: one pipeline).
    async fn serve(self: Arc<Self>, batched: bool) -> anyhow::Result<()> {
        let mut conn = self.redis.blocking().await?;
        loop {
            let mut cmd = redis::cmd("XREADGROUP");
            cmd.arg("GROUP")
                .arg("g")
                .arg("c")
                .arg("COUNT")
                .arg(256)
                .arg("BLOCK")
                .arg(200)
                .arg("STREAMS")
                .arg(&self.req_key)
                .arg(">");
            let streams = pulse::parse_read(conn.query(&cmd).await?)?;
            let entries: Vec<_> = streams.into_iter().flat_map(|(_, e)| e).collect();
            let mut pipe = redis::pipe();
            for e in &entries {
                if let pulse::Body::Event { payload, .. } = &e.body {
                    let target = String::from_utf8_lossy(payload).into_owned();
                    let (key, id) = target.split_once('|').unwrap_or((&target, ""));
                    pipe.cmd("XADD")
                        .arg(key)
                        .arg("*")
                        .arg("n")
                        .arg("result")
                        .arg("p")
                        .arg(id)
                        .ignore();
                }
                if !batched {
                    pipe.cmd("XACK")
                        .arg(&self.req_key)
                        .arg("g")
                        .arg(&e.id)
                        .ignore();
                    let one = std::mem::replace(&mut pipe, redis::pipe());
                    let mut mux = self.redis.mux();
                    tokio::spawn(async move {
                        let _: Result<(), _> = one.query_async(&mut mux).await;
                    });
                }
            }
            if batched && !entries.is_empty() {
                let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
                pipe.cmd("XACK")
                    .arg(&self.req_key)
                    .arg("g")
                    .arg(&ids)
                    .ignore();
                let _: () = pipe.query_async(&mut self.redis.mux()).await?;
            }
        }
    }

    /// One call, plain: `XADD` the request, block on its own result stream.
    pub(super) async fn call_plain(&self) -> anyhow::Result<()> {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let key = format!("{}:{n}", self.results_key);
        let _: String = pulse::xadd(&self.req_key, "call", key.as_bytes())
            .query_async(&mut self.redis.mux())
            .await?;
        let mut conn = self.redis.blocking().await?;
        let mut cmd = redis::cmd("XREAD");
        cmd.arg("BLOCK")
            .arg(5000)
            .arg("STREAMS")
            .arg(&key)
            .arg("0-0");
        let got = pulse::parse_read(conn.query(&cmd).await?)?;
        anyhow::ensure!(!got.is_empty(), "no raw result within 5 s");
        drop(conn);
        let mut mux = self.redis.mux();
        tokio::spawn(async move {
            let _: Result<i64, _> = redis::cmd("DEL").arg(&key).query_async(&mut mux).await;
        });
        Ok(())
    }

    /// One call, batched: results share one stream read by one reader.
    pub(super) async fn call_batched(&self) -> anyhow::Result<()> {
        let id = self.seq.fetch_add(1, Ordering::Relaxed).to_string();
        let (tx, rx) = oneshot::channel();
        self.waiters
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .insert(id.clone(), tx);
        let payload = format!("{}|{id}", self.results_key);
        let _: String = pulse::xadd(&self.req_key, "call", payload.as_bytes())
            .query_async(&mut self.redis.mux())
            .await?;
        tokio::time::timeout(Duration::from_secs(5), rx).await??;
        Ok(())
    }

    async fn read_results(self: Arc<Self>) -> anyhow::Result<()> {
        let mut conn = self.redis.blocking().await?;
        let mut last = "0-0".to_owned();
        loop {
            let mut cmd = redis::cmd("XREAD");
            cmd.arg("COUNT")
                .arg(1024)
                .arg("BLOCK")
                .arg(200)
                .arg("STREAMS")
                .arg(&self.results_key)
                .arg(&last);
            for (_, entries) in pulse::parse_read(conn.query(&cmd).await?)? {
                for e in entries {
                    last = e.id.clone();
                    if let pulse::Body::Event { payload, .. } = e.body {
                        let id = String::from_utf8_lossy(&payload).into_owned();
                        let tx = self.waiters.lock().ok().and_then(|mut w| w.remove(&id));
                        if let Some(tx) = tx {
                            let _ = tx.send(());
                        }
                    }
                }
            }
        }
    }

    /// One call as the protocol makes it: create the result stream (`init`,
    /// TTL, `agent` group past `init`) and publish the request in one
    /// pipeline, then wait for the reader to hand over the result.
    pub(super) async fn call_protocol(&self) -> anyhow::Result<()> {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let key = format!("{}:{n}", self.results_key);
        let mut pipe = redis::pipe();
        pipe.add_command(pulse::xadd(&key, "init", b"{}"))
            .ignore()
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(60_000)
            .ignore()
            .cmd("XGROUP")
            .arg("CREATE")
            .arg(&key)
            .arg("agent")
            .arg("$")
            .ignore()
            .add_command(pulse::xadd(&self.req_key, "call", key.as_bytes()))
            .ignore();
        let _: () = pipe.query_async(&mut self.redis.mux()).await?;
        let (tx, rx) = oneshot::channel();
        self.waiters
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .insert(key, tx);
        self.registered.notify_one();
        tokio::time::timeout(Duration::from_secs(5), rx).await??;
        Ok(())
    }

    /// One `XREADGROUP ... NOACK` over every waiting call's stream at a
    /// time (a call registered mid-read joins the next, at most 1 ms
    /// later); each stream read is deleted, many per `DEL`.
    async fn read_protocol(self: Arc<Self>) -> anyhow::Result<()> {
        let mut conn = self.redis.blocking().await?;
        loop {
            let keys: Vec<String> = match self.waiters.lock() {
                Ok(w) => w.keys().cloned().collect(),
                Err(_) => anyhow::bail!("poisoned"),
            };
            if keys.is_empty() {
                let wait = self.registered.notified();
                let _ = tokio::time::timeout(Duration::from_millis(200), wait).await;
                continue;
            }
            let mut cmd = redis::cmd("XREADGROUP");
            cmd.arg("GROUP")
                .arg("agent")
                .arg("c")
                .arg("COUNT")
                .arg(16)
                .arg("BLOCK")
                .arg(1)
                .arg("NOACK")
                .arg("STREAMS")
                .arg(&keys);
            for _ in &keys {
                cmd.arg(">");
            }
            let mut done = Vec::new();
            for (key, _) in pulse::parse_read(conn.query(&cmd).await?)? {
                let tx = self.waiters.lock().ok().and_then(|mut w| w.remove(&key));
                if let Some(tx) = tx {
                    let _ = tx.send(());
                }
                done.push(key);
            }
            if !done.is_empty() {
                let mut mux = self.redis.mux();
                tokio::spawn(async move {
                    let _: Result<i64, _> =
                        redis::cmd("DEL").arg(&done).query_async(&mut mux).await;
                });
            }
        }
    }
}
