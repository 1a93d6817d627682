//! `weft bench registry`: a tool call through the Redis Streams registry
//! (executor → Redis → provider → Redis → executor, gateway for setup only)
//! against the raw floor on the same Redis: `XADD` → `XREADGROUP` → `XADD`
//! → `XREAD`, one in flight (p50/p99) and 64 in flight (calls/s), plain,
//! pipelined with batched reads, and as the registry protocol asks
//! (`registry_raw`). The variants take turns (one call each for
//! latency, short rounds for throughput), so the machine's slow spells
//! fall on all alike. Each throughput line also says what one call cost
//! in CPU: Redis's (`INFO cpu`) and this process's, which runs the callers
//! and the servers (the raw floors' readers, weft's provider). Prints JSON
//! lines.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use weft_core::tool::{ToolIdent, ToolRequest};
use weft_core::{RunId, SessionId, ToolCallId, TurnId};
use weft_registry::{
    BearerToken, ExecutorConfig, Gateway, GatewayAuth, GatewayClient, GatewayConfig, Namespace,
    Provider, ProviderConfig, Redis, RegistryTokens, RegistryToolSet, pulse,
};
use weft_tools::ToolSet;

use super::registry_raw::{Client, RawServer};

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

/// Rounds the throughput time is split into: the variants take turns, so a
/// slow spell of a shared machine falls on all of them alike.
const ROUNDS: u32 = 6;

/// Runs every measurement; one JSON line each, then the ratios.
pub fn run(s: &Settings) -> anyhow::Result<Vec<Value>> {
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let measured = tokio.block_on(async {
        let redis = Redis::connect(&s.redis).await.with_context(|| {
            format!("connecting to {}", weft_registry::conn::redacted(&s.redis))
        })?;
        measure(s, &redis, &tag).await
    });
    // Dropping the runtime stops every server, reader and provider task, so
    // none writes again once the keys are gone; they go whether or not the
    // run measured anything, so a failed round leaves nothing behind.
    drop(tokio);
    let cleaned = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let redis = Redis::connect(&s.redis).await?;
            cleanup(&redis, &tag).await
        });
    let lines = measured?;
    cleaned?;
    Ok(lines)
}

/// Every measurement on `redis`, its keys tagged with `tag`: one JSON line
/// each, then the ratios.
async fn measure(s: &Settings, redis: &Redis, tag: &str) -> anyhow::Result<Vec<Value>> {
    let raw = RawServer::start(redis, &format!("bench:{tag}:raw"), Client::Plain).await?;
    let piped = RawServer::start(redis, &format!("bench:{tag}:piped"), Client::Shared).await?;
    let proto = RawServer::start(redis, &format!("bench:{tag}:proto"), Client::Protocol).await?;
    let weft = WeftSetup::start(redis, tag).await?;
    let seq = AtomicU64::new(0);
    let weft_call = || weft.call(seq.fetch_add(1, Ordering::Relaxed));

    let (raw_lat, weft_lat) = latency(s.sequential_calls, || raw.call_plain(), weft_call).await?;
    let chunk = s.seconds / f64::from(ROUNDS);
    let mut tp = [Rate::default(); 4];
    let n = s.in_flight;
    for _ in 0..ROUNDS {
        tp[0]
            .add(redis, throughput(chunk, n, || raw.call_plain()))
            .await?;
        tp[1]
            .add(redis, throughput(chunk, n, || piped.call_batched()))
            .await?;
        tp[2]
            .add(redis, throughput(chunk, n, || proto.call_protocol()))
            .await?;
        tp[3].add(redis, throughput(chunk, n, weft_call)).await?;
    }

    let [raw_tp, piped_tp, proto_tp, weft_tp] = tp.map(Rate::per_s);
    let best = raw_tp.max(piped_tp);
    Ok(vec![
        line("raw", 1, &raw_lat, None),
        line("raw", n, &[], Some(tp[0])),
        line("raw_pipelined", n, &[], Some(tp[1])),
        line("raw_protocol", n, &[], Some(tp[2])),
        line("weft", 1, &weft_lat, None),
        line("weft", n, &[], Some(tp[3])),
        json!({
            "bench": "registry",
            "summary": true,
            "p50_ratio_weft_over_raw": ratio(pct(&weft_lat, 50), pct(&raw_lat, 50)),
            "calls_per_s_ratio_weft_over_best_raw": ratio(weft_tp, best),
            "calls_per_s_ratio_weft_over_raw_protocol": ratio(weft_tp, proto_tp),
            "goal": "p50 ratio <= 1.25, calls/s ratio >= 0.8",
        }),
    ])
}

/// Deletes every key this run of the bench made: the raw floors' streams,
/// the registry's namespace, the toolset's and calls' streams, and the
/// executor's wake stream.
async fn cleanup(redis: &Redis, tag: &str) -> anyhow::Result<()> {
    let mut mux = redis.mux();
    let patterns = [
        format!("bench:{tag}:*"),
        pulse::key(&format!("toolset:bench_{}:*", &tag[..12])),
        pulse::key(&format!("result:bench-{tag}/*")),
        pulse::key(&format!("executor:bench-{tag}:*")),
    ];
    for pattern in patterns {
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut mux)
                .await?;
            if !keys.is_empty() {
                let _: i64 = redis::cmd("DEL").arg(&keys).query_async(&mut mux).await?;
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok(())
}

/// Calls finished, the seconds they took, and the CPU time Redis and this
/// process spent meanwhile, summed over rounds.
#[derive(Debug, Clone, Copy, Default)]
struct Rate {
    calls: u64,
    seconds: f64,
    redis_cpu: Duration,
    process_cpu: Duration,
}

impl Rate {
    /// Runs one round and adds it, with the CPU time it cost.
    async fn add(
        &mut self,
        redis: &Redis,
        round: impl std::future::Future<Output = anyhow::Result<(u64, f64)>>,
    ) -> anyhow::Result<()> {
        let (redis0, process0) = (redis_cpu(redis).await?, super::cpu::process());
        let (calls, seconds) = round.await?;
        let (redis1, process1) = (redis_cpu(redis).await?, super::cpu::process());
        self.calls += calls;
        self.seconds += seconds;
        self.redis_cpu += redis1.saturating_sub(redis0);
        self.process_cpu += process1.saturating_sub(process0);
        Ok(())
    }

    /// CPU µs per call.
    fn us_per_call(self, cpu: Duration) -> f64 {
        if self.calls > 0 {
            (cpu.as_secs_f64() * 1e6 / self.calls as f64 * 100.0).round() / 100.0
        } else {
            0.0
        }
    }

    fn per_s(self) -> f64 {
        if self.seconds > 0.0 {
            self.calls as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The Redis server's CPU time so far.
async fn redis_cpu(redis: &Redis) -> anyhow::Result<Duration> {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(&mut redis.mux())
        .await?;
    super::cpu::redis_from_info(&info).context("INFO cpu without used_cpu_user/used_cpu_sys")
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

fn line(variant: &str, in_flight: usize, lat: &[f64], rate: Option<Rate>) -> Value {
    let mut v = json!({"bench": "registry", "variant": variant, "in_flight": in_flight});
    if !lat.is_empty() {
        v["calls"] = json!(lat.len());
        v["p50_us"] = json!(pct(lat, 50).round());
        v["p99_us"] = json!(pct(lat, 99).round());
    }
    if let Some(r) = rate {
        v["calls_per_s"] = json!(r.per_s().round());
        v["redis_cpu_us_per_call"] = json!(r.us_per_call(r.redis_cpu));
        v["process_cpu_us_per_call"] = json!(r.us_per_call(r.process_cpu));
    }
    v
}

/// One call at a time, the two variants in turn (which goes first
/// alternates); each variant's latencies in µs, sorted.
async fn latency<A, FA, B, FB>(n: usize, a: A, b: B) -> anyhow::Result<(Vec<f64>, Vec<f64>)>
where
    A: Fn() -> FA,
    FA: std::future::Future<Output = anyhow::Result<()>>,
    B: Fn() -> FB,
    FB: std::future::Future<Output = anyhow::Result<()>>,
{
    for _ in 0..(n / 10).max(10) {
        a().await?;
        b().await?;
    }
    let (mut la, mut lb) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        for first in [i % 2 == 0, i % 2 == 1] {
            let t = Instant::now();
            if first {
                a().await?;
                la.push(t.elapsed().as_secs_f64() * 1e6);
            } else {
                b().await?;
                lb.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    la.sort_by(f64::total_cmp);
    lb.sort_by(f64::total_cmp);
    Ok((la, lb))
}

/// `in_flight` callers for `seconds`: the calls finished and the seconds
/// until the last ended.
async fn throughput<'a, F, Fut>(
    seconds: f64,
    in_flight: usize,
    call: F,
) -> anyhow::Result<(u64, f64)>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>> + 'a,
{
    let done = AtomicU64::new(0);
    let stop = Instant::now() + Duration::from_secs_f64(seconds);
    let workers = (0..in_flight).map(|_| {
        let (done, call) = (&done, &call);
        async move {
            while Instant::now() < stop {
                call().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }
    });
    let start = Instant::now();
    for r in futures_util::future::join_all(workers).await {
        r?;
    }
    Ok((done.load(Ordering::Relaxed), start.elapsed().as_secs_f64()))
}

/// weft's path: gateway (setup), provider and executor in this process.
struct WeftSetup {
    executor: RegistryToolSet,
    _provider: tokio::task::JoinHandle<()>,
    _gateway: tokio::task::JoinHandle<std::io::Result<()>>,
    run: String,
    tool: ToolIdent,
}

impl WeftSetup {
    async fn start(redis: &Redis, tag: &str) -> anyhow::Result<Self> {
        let ns = Namespace::new(format!("bench:{tag}:registry"));
        let toolset = format!("bench_{}", &tag[..12]);
        // The gateway authenticates as a deployed one does: fresh tokens.
        let (caller, provider) = (
            uuid::Uuid::new_v4().simple().to_string(),
            uuid::Uuid::new_v4().simple().to_string(),
        );
        let tokens = RegistryTokens::parse(&format!(
            "caller:bench={caller},provider:bench={provider}:{toolset}"
        ))?;
        let gw = Gateway::new(
            redis.clone(),
            GatewayConfig {
                namespace: ns.clone(),
                auth: GatewayAuth::Tokens(tokens),
                ..GatewayConfig::default()
            },
        )?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let gateway = tokio::spawn(gw.serve(listener));
        let tools: Arc<dyn ToolSet> = weft_tools::builtin::calc();
        let config = ProviderConfig {
            max_concurrent: 128,
            ..ProviderConfig::default()
        };
        let provider = Provider::new(
            redis.clone(),
            &toolset,
            tools,
            Some(GatewayClient::new(&url)?.with_token(BearerToken::new(provider))),
            config,
        )
        .await?;
        provider.register().await?;
        let provider = tokio::spawn(async move {
            let _ = provider.serve(std::future::pending()).await;
        });
        let mut ec = ExecutorConfig::new(&url, &toolset);
        ec.token = BearerToken::new(caller);
        ec.namespace = ns;
        ec.alias = Some("calc".into());
        ec.consumer = format!("bench-{tag}");
        let executor = RegistryToolSet::connect(redis.clone(), ec).await?;
        Ok(Self {
            executor,
            _provider: provider,
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
