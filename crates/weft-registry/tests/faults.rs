//! Faults against real Redis: a provider killed mid-call of an idempotent
//! tool (another finishes it after the claim grace; the caller sees one
//! result), a call delivered
//! too often (dead-lettered with an error result), and a Redis server
//! restarted with its data gone (groups and registration come back, later
//! calls succeed).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::json;
use weft_core::tool::{ToolError, ToolResultBody};
use weft_registry::{
    ExecutorConfig, GatewayClient, Provider, ProviderConfig, Redis, RegistryToolSet, pulse, wire,
};
use weft_tools::{FnToolSet, ToolSet};

/// A provider on its own runtime thread, killable like a crashed process.
struct Crashable {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Crashable {
    fn start(redis_url: String, gateway: String, toolset: String, tools: Arc<dyn ToolSet>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.spawn(async move {
            let redis = Redis::connect(&redis_url).await.unwrap();
            let config = ProviderConfig {
                claim_grace: Duration::from_secs(60),
                ..ProviderConfig::default()
            };
            let gw = GatewayClient::new(&gateway).unwrap();
            let p = Provider::new(redis, &toolset, tools, Some(gw), config)
                .await
                .unwrap();
            let _ = p.serve(std::future::pending()).await;
        });
        Self {
            runtime: Some(runtime),
        }
    }

    /// Stops every task at once, mid-call: nothing is published or acknowledged.
    fn kill(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A toolset whose `slow` never finishes in time (the doomed provider).
fn hanging(name: &str, started: Arc<AtomicUsize>) -> Arc<dyn ToolSet> {
    Arc::new(
        FnToolSet::new(name)
            .tool("slow", "Sleeps", move |_a: SlowArgs| {
                started.fetch_add(1, Ordering::SeqCst);
                async move {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok::<_, ToolError>("never")
                }
            })
            // Safe to run again: another provider may finish it (a tool that is
            // not idempotent is answered `outcome_unknown`: tests/at_most_once.rs).
            .idempotent(),
    )
}

/// The survivor's `slow`: idempotent too, and it finishes.
fn finishing(name: &str, runs: Arc<AtomicUsize>) -> Arc<dyn ToolSet> {
    Arc::new(
        FnToolSet::new(name)
            .tool("slow", "Sleeps", move |a: SlowArgs| {
                runs.fetch_add(1, Ordering::SeqCst);
                async move {
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                    Ok::<_, ToolError>("slept")
                }
            })
            .idempotent(),
    )
}

async fn claim_scenario(
    max_deliveries: u64,
) -> (
    Result<weft_tools::ToolReply, weft_tools::ToolFailure>,
    usize,
    usize,
    Redis,
    String,
) {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("crash");
    let started = Arc::new(AtomicUsize::new(0));
    let mut doomed = Crashable::start(
        redis_url(),
        gw.url.clone(),
        name.clone(),
        hanging(&name, started.clone()),
    );
    let client = GatewayClient::new(&gw.url).unwrap();
    assert!(eventually(250, || async { client.toolset(&name).await.is_ok() }).await);
    let mut ec = ExecutorConfig::new(&gw.url, &name);
    ec.namespace = gw.ns.clone();
    ec.call_timeout = Duration::from_secs(20);
    let ex = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();
    let (req, _) = request(
        &format!("{name}.slow"),
        json!({"ms": 1}),
        &unique("run"),
        "call_1",
    );
    let call = tokio::spawn(async move { ex.call_tool(req).await });
    assert!(eventually(250, || async { started.load(Ordering::SeqCst) == 1 }).await);
    doomed.kill();

    // The survivor finishes (or dead-letters) what the dead one left.
    let survivor_runs = Arc::new(AtomicUsize::new(0));
    let config = ProviderConfig {
        claim_grace: Duration::from_millis(300),
        claim_interval: Duration::from_millis(100),
        max_deliveries,
        ..ProviderConfig::default()
    };
    let survivor = Provider::new(
        redis.clone(),
        &name,
        finishing(&name, survivor_runs.clone()),
        Some(GatewayClient::new(&gw.url).unwrap()),
        config,
    )
    .await
    .unwrap();
    let survivor = tokio::spawn(async move { survivor.serve(std::future::pending()).await });
    let result = call.await.unwrap();
    survivor.abort();
    (
        result,
        started.load(Ordering::SeqCst),
        survivor_runs.load(Ordering::SeqCst),
        redis,
        name,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_providers_call_is_finished_by_another() {
    let (result, doomed_runs, survivor_runs, _, _) = claim_scenario(5).await;
    assert_eq!(result.unwrap().body, ToolResultBody::Json(json!("slept")));
    assert_eq!((doomed_runs, survivor_runs), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_delivered_too_often_is_dead_lettered() {
    let (result, _, survivor_runs, redis, name) = claim_scenario(1).await;
    let err = result.unwrap_err();
    assert_eq!(err.error.code, "execution_failed", "{err:?}");
    assert_eq!(survivor_runs, 0);
    let dead = pulse::key(&format!("toolset:{name}:dead"));
    let len: i64 = redis::cmd("XLEN")
        .arg(&dead)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    assert_eq!(len, 1);
    let _: i64 = redis::cmd("DEL")
        .arg(&dead)
        .arg(pulse::key(&wire::toolset_stream(&name)))
        .query_async(&mut redis.mux())
        .await
        .unwrap();
}

/// A private redis-server, so restarting it disturbs nobody.
struct OwnRedis {
    port: u16,
    child: std::process::Child,
}

impl OwnRedis {
    fn start(port: u16) -> Self {
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed (scripts/setup)");
        Self { port, child }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn ready(&self) {
        let url = self.url();
        assert!(
            eventually(250, || {
                let url = url.clone();
                async move {
                    let Ok(c) = redis::Client::open(url) else {
                        return false;
                    };
                    let Ok(mut conn) = c.get_multiplexed_async_connection().await else {
                        return false;
                    };
                    redis::cmd("PING")
                        .query_async::<String>(&mut conn)
                        .await
                        .is_ok()
                }
            })
            .await
        );
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_succeed_again_after_redis_restarts_empty() {
    let port = free_port();
    let mut server = OwnRedis::start(port);
    server.ready().await;
    let redis = Redis::connect(&server.url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("restart");
    let runs = Arc::new(AtomicUsize::new(0));
    let config = ProviderConfig {
        block: Duration::from_millis(200),
        ..ProviderConfig::default()
    };
    let provider = Provider::new(
        redis.clone(),
        &name,
        toolset(&name, runs),
        Some(GatewayClient::new(&gw.url).unwrap()),
        config,
    )
    .await
    .unwrap();
    let provider = tokio::spawn(async move { provider.serve(std::future::pending()).await });
    let client = GatewayClient::new(&gw.url).unwrap();
    assert!(eventually(250, || async { client.toolset(&name).await.is_ok() }).await);
    let mut ec = ExecutorConfig::new(&gw.url, &name);
    ec.namespace = gw.ns.clone();
    ec.call_timeout = Duration::from_secs(5);
    let ex = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();
    let add = format!("{name}.add");
    let (req, _) = request(&add, json!({"a": 1, "b": 1}), &unique("run"), "c");
    assert_eq!(
        ex.call_tool(req).await.unwrap().body,
        ToolResultBody::Json(json!(2))
    );

    // Restart with nothing kept: every stream, group and record is gone.
    drop(server);
    server = OwnRedis::start(port);
    server.ready().await;
    let back = eventually(250, || {
        let (req, _) = request(&add, json!({"a": 2, "b": 2}), &unique("run"), "c");
        let ex = &ex;
        async move {
            ex.call_tool(req)
                .await
                .is_ok_and(|r| r.body == ToolResultBody::Json(json!(4)))
        }
    })
    .await;
    assert!(
        back,
        "the provider recreated its group and registered again"
    );
    provider.abort();
    drop(server);
}
