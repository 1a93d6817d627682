//! Registry calls run at most once where the tool is not idempotent: a
//! provider remembers the calls it ran (in Redis, with a TTL) and answers a
//! repeat with the recorded result; a call cut off by a provider's crash is
//! answered `outcome_unknown` by the provider that claims it instead of
//! being run again; idempotent tools (their spec says so) skip the memory;
//! and the executor tells a call that was never published from one whose
//! outcome is unknown. Against the real Redis.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::tool::{ToolError, ToolResultBody};
use weft_registry::wire::{self, ToolResultMessage};
use weft_registry::{
    ExecutorConfig, GatewayClient, Provider, ProviderConfig, Redis, RegistryToolSet, pulse,
};
use weft_tools::{FnToolSet, ToolSet};

#[derive(Deserialize, JsonSchema)]
struct ChargeArgs {
    cents: i64,
    #[serde(default)]
    ms: u64,
}

/// `charge` (not idempotent; sleeps `ms`) and `lookup` (idempotent), both
/// counting their executions.
fn billing(name: &str, executions: Arc<AtomicUsize>) -> Arc<dyn ToolSet> {
    let e2 = executions.clone();
    Arc::new(
        FnToolSet::new(name)
            .tool("charge", "Charges a card", move |a: ChargeArgs| {
                executions.fetch_add(1, Ordering::SeqCst);
                async move {
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                    Ok::<_, ToolError>(json!({"charged": a.cents}))
                }
            })
            .tool("lookup", "Reads a balance", move |a: ChargeArgs| {
                e2.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ToolError>(json!({"balance": a.cents})) }
            })
            .idempotent(),
    )
}

fn executor_config(gw: &TestGateway, name: &str) -> ExecutorConfig {
    let mut ec = ExecutorConfig::new(&gw.url, name);
    ec.namespace = gw.ns.clone();
    ec.call_timeout = Duration::from_secs(20);
    ec
}

/// The provider's memory entry of a call (see docs/registry-protocol.md).
fn memory_key(toolset: &str, run: &str, call: &str) -> String {
    pulse::key(&format!("toolset:{toolset}:ran:{run}/{call}"))
}

/// Deletes a call's result stream now (the executor deletes it off the hot
/// path; a repeat made before that re-attaches to it instead of publishing).
async fn forget_result(redis: &Redis, run: &str, call: &str) {
    let key = pulse::key(&wire::result_stream(&format!("{run}/{call}")));
    let _: i64 = redis::cmd("DEL")
        .arg(key)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
}

async fn get(redis: &Redis, key: &str) -> Option<Vec<u8>> {
    redis::cmd("GET")
        .arg(key)
        .query_async(&mut redis.mux())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_call_gets_the_recorded_result_without_running_again() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("once");
    let executions = Arc::new(AtomicUsize::new(0));
    let (executor, serving) = serve_and_connect(
        &redis,
        &gw,
        &name,
        billing(&name, executions.clone()),
        ProviderConfig::default(),
    )
    .await;
    let run = unique("run");
    let charge = format!("{name}.charge");
    let (req, _) = request(&charge, json!({"cents": 500}), &run, "call_1");
    let first = executor.call_tool(req).await.unwrap();
    assert_eq!(first.body, ToolResultBody::Json(json!({"charged": 500})));
    assert_eq!(executions.load(Ordering::SeqCst), 1);
    // The provider recorded the result, with a TTL.
    let key = memory_key(&name, &run, "call_1");
    let held = get(&redis, &key).await.expect("the call is remembered");
    assert!(held.starts_with(b"result:"), "{held:?}");
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 3_600_000, "PTTL {ttl}");

    // The same call again, published again (its result stream is gone):
    // answered from the memory, not run.
    forget_result(&redis, &run, "call_1").await;
    let (req, _) = request(&charge, json!({"cents": 500}), &run, "call_1");
    let again = executor.call_tool(req).await.unwrap();
    assert_eq!(again.body, first.body);
    assert_eq!(executions.load(Ordering::SeqCst), 1, "the charge ran twice");

    // A result recorded by another provider's delivery is answered as is.
    let recorded = ToolResultMessage {
        tool_use_id: format!("{run}/call_2"),
        result: Some(wire::raw(&json!({"charged": 42}))),
        ..Default::default()
    };
    let mut value = b"result:".to_vec();
    value.extend(wire::encode(&recorded));
    let _: () = redis::cmd("SET")
        .arg(memory_key(&name, &run, "call_2"))
        .arg(value)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    let (req, _) = request(&charge, json!({"cents": 42}), &run, "call_2");
    let reply = executor.call_tool(req).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!({"charged": 42})));
    assert_eq!(executions.load(Ordering::SeqCst), 1);
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_tools_say_so_and_skip_the_memory() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("idem");
    let executions = Arc::new(AtomicUsize::new(0));
    let (executor, serving) = serve_and_connect(
        &redis,
        &gw,
        &name,
        billing(&name, executions.clone()),
        ProviderConfig::default(),
    )
    .await;
    // The registration carries each tool's spec; the executor's specs follow it.
    let view = GatewayClient::new(&gw.url)
        .unwrap()
        .toolset(&name)
        .await
        .unwrap();
    let flags: Vec<(String, bool)> = view
        .toolset
        .tools
        .iter()
        .map(|t| (t.name.clone(), t.idempotent))
        .collect();
    assert!(
        flags.contains(&(format!("{name}.charge"), false)),
        "{flags:?}"
    );
    assert!(
        flags.contains(&(format!("{name}.lookup"), true)),
        "{flags:?}"
    );
    let specs = executor.list_tools().await.unwrap();
    for spec in &specs {
        let idempotent = spec.name.tool() == "lookup";
        assert_eq!(spec.annotations.idempotent, idempotent, "{}", spec.name);
    }

    let run = unique("run");
    for _ in 0..2 {
        forget_result(&redis, &run, "c").await;
        let (req, _) = request(&format!("{name}.lookup"), json!({"cents": 7}), &run, "c");
        let reply = executor.call_tool(req).await.unwrap();
        assert_eq!(reply.body, ToolResultBody::Json(json!({"balance": 7})));
    }
    assert_eq!(
        executions.load(Ordering::SeqCst),
        2,
        "an idempotent call runs again"
    );
    assert_eq!(get(&redis, &memory_key(&name, &run, "c")).await, None);
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_off_by_a_provider_crash_is_not_run_again() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("crash");
    let executions = Arc::new(AtomicUsize::new(0));
    let fast_claims = |config: &mut ProviderConfig| {
        config.claim_grace = Duration::from_millis(300);
        config.claim_interval = Duration::from_millis(100);
    };
    // The first provider runs on a runtime of its own: shutting that
    // runtime down stops it mid-call, heartbeat and all, as a crash would.
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (registered_tx, registered) = tokio::sync::oneshot::channel();
    {
        let (name, url, tools) = (
            name.clone(),
            gw.url.clone(),
            billing(&name, executions.clone()),
        );
        let mut config = ProviderConfig::default();
        fast_claims(&mut config);
        doomed.spawn(async move {
            let redis = Redis::connect(&redis_url()).await.unwrap();
            let gateway = Some(GatewayClient::new(&url).unwrap());
            let provider = Provider::new(redis, &name, tools, gateway, config)
                .await
                .unwrap();
            provider.register().await.unwrap();
            let _ = registered_tx.send(());
            provider.serve(std::future::pending()).await.unwrap();
        });
    }
    registered.await.unwrap();
    let executor = RegistryToolSet::connect(redis.clone(), executor_config(&gw, &name))
        .await
        .unwrap();
    let run = unique("run");
    let (req, _) = request(
        &format!("{name}.charge"),
        json!({"cents": 900, "ms": 3_000}),
        &run,
        "call_1",
    );
    let call = tokio::spawn(async move { executor.call_tool(req).await });
    assert!(
        eventually(500, || {
            let n = executions.load(Ordering::SeqCst);
            async move { n == 1 }
        })
        .await,
        "the charge started"
    );
    doomed.shutdown_background();

    // A second provider claims the call once it has been idle past the grace.
    let mut config = ProviderConfig::default();
    fast_claims(&mut config);
    let provider = Provider::new(
        redis.clone(),
        &name,
        billing(&name, executions.clone()),
        Some(GatewayClient::new(&gw.url).unwrap()),
        config,
    )
    .await
    .unwrap();
    let serving = tokio::spawn(provider.serve(std::future::pending()));
    let answered = tokio::time::timeout(Duration::from_secs(15), call).await;
    if answered.is_err() && serving.is_finished() {
        panic!("the second provider stopped: {:?}", serving.await);
    }
    if answered.is_err() {
        let key = pulse::key(&wire::toolset_stream(&name));
        let pending: redis::Value = redis::cmd("XPENDING")
            .arg(&key)
            .arg("provider")
            .arg("-")
            .arg("+")
            .arg(10)
            .query_async(&mut redis.mux())
            .await
            .unwrap();
        let consumers: redis::Value = redis::cmd("XINFO")
            .arg("CONSUMERS")
            .arg(&key)
            .arg("provider")
            .query_async(&mut redis.mux())
            .await
            .unwrap();
        let entries: redis::Value = redis::cmd("XRANGE")
            .arg(&key)
            .arg("-")
            .arg("+")
            .query_async(&mut redis.mux())
            .await
            .unwrap();
        let results: redis::Value = redis::cmd("XRANGE")
            .arg(pulse::key(&wire::result_stream(&format!("{run}/call_1"))))
            .arg("-")
            .arg("+")
            .query_async(&mut redis.mux())
            .await
            .unwrap();
        let memory = get(&redis, &memory_key(&name, &run, "call_1")).await;
        panic!(
            "no answer: pending {pending:?} consumers {consumers:?} entries {entries:?} results {results:?} memory {:?}",
            memory.map(|m| String::from_utf8_lossy(&m).into_owned())
        );
    }
    let failure = answered
        .expect("the call was answered")
        .unwrap()
        .expect_err("a cut-off charge has no result");
    assert_eq!(failure.error.code, "outcome_unknown", "{failure:?}");
    assert!(
        failure.error.message.contains("not run again"),
        "{failure:?}"
    );
    let hint = failure.retry_hint.expect("a retry hint");
    assert!(
        hint.message.as_deref().unwrap_or("").contains("check"),
        "{hint:?}"
    );
    // Give the claimer more passes: the charge still ran once.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(executions.load(Ordering::SeqCst), 1, "the charge ran twice");
    let held = get(&redis, &memory_key(&name, &run, "call_1"))
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&held).contains("outcome_unknown"),
        "the answer is recorded for later deliveries"
    );
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_was_never_published_says_so() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("unpub");
    let executions = Arc::new(AtomicUsize::new(0));
    let (executor, serving) = serve_and_connect(
        &redis,
        &gw,
        &name,
        billing(&name, executions.clone()),
        ProviderConfig::default(),
    )
    .await;
    serving.abort();
    // The toolset's state holds a value of the wrong type: the admission
    // script fails before it publishes anything.
    let _: () = redis::cmd("SET")
        .arg(gw.ns.state(&name))
        .arg("not a hash")
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    let run = unique("run");
    let (req, _) = request(&format!("{name}.charge"), json!({"cents": 1}), &run, "c1");
    let failure = executor.call_tool(req).await.expect_err("admission fails");
    assert_eq!(failure.error.code, ToolError::UNAVAILABLE, "{failure:?}");
    assert!(
        failure.error.message.contains("not published"),
        "{failure:?}"
    );
    let stream = pulse::key(&wire::result_stream(&format!("{run}/c1")));
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&stream)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    assert_eq!(exists, 0);
    assert_eq!(executions.load(Ordering::SeqCst), 0);
}
