//! `weft bench registry`: a tool call through the Redis Streams registry
//! (executor → Redis → provider → Redis → executor, gateway for setup only)
//! against the raw floor on the same Redis: `XADD` → `XREADGROUP` → `XADD`
//! → `XREAD`, one in flight (p50/p99) and 64 in flight (calls/s), plain and
//! pipelined with batched reads. Prints JSON lines.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use weft_core::tool::{ToolIdent, ToolRequest};
use weft_core::{RunId, SessionId, ToolCallId, TurnId};
use weft_registry::{
    ExecutorConfig, Gateway, GatewayClient, GatewayConfig, Namespace, Provider, ProviderConfig,
    Redis, RegistryToolSet, pulse,
};
use weft_tools::ToolSet;

/// What to measure.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The Redis URL.
    pub redis: String,
    /// Calls measured one at a time.
    pub sequential_calls: usize,
    /// Seconds of each concurrent measurement.
    pub seconds: f64,
    /// Calls in flight for the throughput figures.
    pub in_flight: usize,
}

/// Runs every measurement; one JSON line each, then the ratios.
pub fn run(s: &Settings) -> anyhow::Result<Vec<Value>> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    tokio.block_on(async {
        let redis = Redis::connect(&s.redis)
            .await
            .with_context(|| format!("connecting to {}", s.redis))?;
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let mut out = Vec::new();
        let raw = RawServer::start(&redis, &format!("bench:{tag}:raw"), false).await?;
        let raw_lat = latency(s.sequential_calls, || raw.call_plain()).await?;
        out.push(line("raw", 1, &raw_lat, None));
        let raw_tp = throughput(s, |_| raw.call_plain()).await?;
        out.push(line("raw", s.in_flight, &[], Some(raw_tp)));
        raw.stop();
        let piped = RawServer::start(&redis, &format!("bench:{tag}:piped"), true).await?;
        let piped_tp = throughput(s, |_| piped.call_batched()).await?;
        out.push(line("raw_pipelined", s.in_flight, &[], Some(piped_tp)));
        piped.stop();

        let weft = WeftSetup::start(&redis, &tag).await?;
        let seq = AtomicU64::new(0);
        let weft_lat = latency(s.sequential_calls, || {
            weft.call(seq.fetch_add(1, Ordering::Relaxed))
        })
        .await?;
        out.push(line("weft", 1, &weft_lat, None));
        let weft_tp = throughput(s, |_| weft.call(seq.fetch_add(1, Ordering::Relaxed))).await?;
        out.push(line("weft", s.in_flight, &[], Some(weft_tp)));
        weft.provider.abort();
        let best = raw_tp.max(piped_tp);
        out.push(json!({
            "bench": "registry",
            "summary": true,
            "p50_ratio_weft_over_raw": ratio(pct(&weft_lat, 50), pct(&raw_lat, 50)),
            "calls_per_s_ratio_weft_over_best_raw": ratio(weft_tp, best),
            "goal": "p50 ratio <= 1.25, calls/s ratio >= 0.8",
        }));
        Ok(out)
    })
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        (a / b * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

fn pct(sorted_us: &[f64], p: usize) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let i = (sorted_us.len() * p / 100).min(sorted_us.len() - 1);
    sorted_us[i]
}

fn line(variant: &str, in_flight: usize, lat: &[f64], calls_per_s: Option<f64>) -> Value {
    let mut v = json!({"bench": "registry", "variant": variant, "in_flight": in_flight});
    if !lat.is_empty() {
        v["calls"] = json!(lat.len());
        v["p50_us"] = json!(pct(lat, 50).round());
        v["p99_us"] = json!(pct(lat, 99).round());
    }
    if let Some(t) = calls_per_s {
        v["calls_per_s"] = json!(t.round());
    }
    v
}

async fn latency<F, Fut>(n: usize, mut call: F) -> anyhow::Result<Vec<f64>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    for _ in 0..(n / 10).max(10) {
        call().await?;
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        call().await?;
        out.push(t.elapsed().as_secs_f64() * 1e6);
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

async fn throughput<'a, F, Fut>(s: &Settings, call: F) -> anyhow::Result<f64>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>> + 'a,
{
    let done = AtomicU64::new(0);
    let stop = Instant::now() + Duration::from_secs_f64(s.seconds);
    let workers = (0..s.in_flight).map(|i| {
        let (done, call) = (&done, &call);
        async move {
            while Instant::now() < stop {
                call(i).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }
    });
    let start = Instant::now();
    for r in futures_util::future::join_all(workers).await {
        r?;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}

/// The raw floor: a consumer-group reader answering each request on a stream.
struct RawServer {
    redis: Redis,
    req_key: String,
    results_key: String,
    stop: Arc<AtomicBool>,
    waiters: Arc<Mutex<HashMap<String, oneshot::Sender<()>>>>,
    seq: AtomicU64,
}

impl RawServer {
    async fn start(redis: &Redis, prefix: &str, batched: bool) -> anyhow::Result<Arc<Self>> {
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
            stop: Arc::new(AtomicBool::new(false)),
            waiters: Arc::default(),
            seq: AtomicU64::new(0),
        });
        tokio::spawn(this.clone().serve(batched));
        if batched {
            tokio::spawn(this.clone().read_results());
        }
        Ok(this)
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let (mut mux, keys) = (
            self.redis.mux(),
            [self.req_key.clone(), self.results_key.clone()],
        );
        tokio::spawn(async move {
            let _: Result<i64, _> = redis::cmd("DEL").arg(&keys).query_async(&mut mux).await;
        });
    }

    /// Reads requests in the group and answers each with an `XADD` to the
    /// stream its payload names, then acknowledges (batched: one pipeline).
    async fn serve(self: Arc<Self>, batched: bool) -> anyhow::Result<()> {
        let mut conn = self.redis.blocking().await?;
        while !self.stop.load(Ordering::Relaxed) {
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
        Ok(())
    }

    /// One call, plain: `XADD` the request, block on its own result stream.
    async fn call_plain(&self) -> anyhow::Result<()> {
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
    async fn call_batched(&self) -> anyhow::Result<()> {
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
        while !self.stop.load(Ordering::Relaxed) {
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
        Ok(())
    }
}

/// weft's path: gateway (setup), provider and executor in this process.
struct WeftSetup {
    executor: RegistryToolSet,
    provider: tokio::task::JoinHandle<()>,
    _gateway: tokio::task::JoinHandle<std::io::Result<()>>,
    run: String,
    tool: ToolIdent,
}

impl WeftSetup {
    async fn start(redis: &Redis, tag: &str) -> anyhow::Result<Self> {
        let ns = Namespace::new(format!("bench:{tag}:registry"));
        let gw = Gateway::new(
            redis.clone(),
            GatewayConfig {
                namespace: ns.clone(),
                ..GatewayConfig::default()
            },
        )?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let gateway = tokio::spawn(gw.serve(listener));
        let toolset = format!("bench_{}", &tag[..12]);
        let tools: Arc<dyn ToolSet> = crate::builtin::calc();
        let config = ProviderConfig {
            max_concurrent: 128,
            ..ProviderConfig::default()
        };
        let provider = Provider::new(
            redis.clone(),
            &toolset,
            tools,
            Some(GatewayClient::new(&url)?),
            config,
        )
        .await?;
        provider.register().await?;
        let provider = tokio::spawn(async move {
            let _ = provider.serve(std::future::pending()).await;
        });
        let mut ec = ExecutorConfig::new(&url, &toolset);
        ec.namespace = ns;
        ec.alias = Some("calc".into());
        let executor = RegistryToolSet::connect(redis.clone(), ec).await?;
        Ok(Self {
            executor,
            provider,
            _gateway: gateway,
            run: format!("bench-{tag}"),
            tool: ToolIdent::new("calc.add"),
        })
    }

    async fn call(&self, n: u64) -> anyhow::Result<()> {
        let request = ToolRequest {
            name: self.tool.clone(),
            payload: json!({"a": 1, "b": 2}).into(),
            run_id: RunId::new(self.run.as_str()),
            session_id: SessionId::new("bench"),
            turn_id: TurnId::new("bench/1"),
            tool_call_id: ToolCallId::new(format!("call_{n}")),
            parent_tool_call_id: None,
            labels: Default::default(),
            output: Default::default(),
            elicit: Default::default(),
            children: Default::default(),
        };
        self.executor
            .call_tool(request)
            .await
            .map_err(|f| anyhow::anyhow!("{}", f.error))?;
        Ok(())
    }
}
