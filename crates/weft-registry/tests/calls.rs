//! Calls through gateway + provider + executor against the real Redis: a
//! round trip, output deltas in order before the result, 100 parallel
//! calls, garbage entries, a lost consumer group, re-attaching, a result
//! stream that vanishes while its call and another wait on it, and a
//! provider shutting down with calls in flight.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use futures_util::FutureExt;
use serde_json::json;
use weft_core::tool::ToolResultBody;
use weft_registry::{
    ExecutorConfig, GatewayClient, Provider, ProviderConfig, Redis, RegistryToolSet, pulse, wire,
};
use weft_tools::ToolSet;

struct Setup {
    redis: Redis,
    _gw: TestGateway,
    toolset: String,
    executor: RegistryToolSet,
    executions: Arc<AtomicUsize>,
    provider: tokio::task::JoinHandle<()>,
}

async fn setup(tweak: impl FnOnce(&mut ProviderConfig)) -> Setup {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let toolset = unique("calls");
    let executions = Arc::new(AtomicUsize::new(0));
    let mut config = ProviderConfig::default();
    tweak(&mut config);
    let (executor, provider) = serve_and_connect(
        &redis,
        &gw,
        &toolset,
        toolset_arc(&toolset, executions.clone()),
        config,
    )
    .await;
    Setup {
        redis,
        _gw: gw,
        toolset,
        executor,
        executions,
        provider,
    }
}

fn toolset_arc(name: &str, e: Arc<AtomicUsize>) -> Arc<dyn ToolSet> {
    toolset(name, e)
}

/// Calls of the toolset stream `key` pending in the `provider` group
/// (`XPENDING`'s summary count).
async fn pending(redis: &Redis, key: &str) -> i64 {
    let summary: redis::Value = redis::cmd("XPENDING")
        .arg(key)
        .arg("provider")
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    match summary {
        redis::Value::Array(ref fields) => match fields.first() {
            Some(redis::Value::Int(n)) => *n,
            _ => panic!("XPENDING summary {summary:?}"),
        },
        _ => panic!("XPENDING summary {summary:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_round_trips_with_deltas_in_order_before_the_result() {
    let s = setup(|_| {}).await;
    let tools = s.executor.list_tools().await.unwrap();
    assert_eq!(tools.len(), 3);
    let (req, _) = request(
        &format!("{}.add", s.toolset),
        json!({"a": 2, "b": 3}),
        &unique("run"),
        "call_1",
    );
    let reply = s.executor.call_tool(req).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!(5)));

    let (req, deltas) = request(
        &format!("{}.steps", s.toolset),
        json!({"n": 5}),
        &unique("run"),
        "call_1",
    );
    let id = RegistryToolSet::tool_use_id(&req);
    let reply = s.executor.call_tool(req).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!(5)));
    let got = texts(&deltas);
    let want: Vec<String> = (1..=5).map(|i| format!("step {i}\n")).collect();
    assert_eq!(got, want, "every delta, in order, before the result");
    // The result stream is deleted after reading.
    let key = pulse::key(&wire::result_stream(&id));
    assert!(
        eventually(100, || {
            let mut mux = s.redis.mux();
            let key = key.clone();
            async move {
                redis::cmd("EXISTS")
                    .arg(&key)
                    .query_async::<i64>(&mut mux)
                    .await
                    .unwrap()
                    == 0
            }
        })
        .await
    );
    s.provider.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_parallel_calls_all_get_their_own_result() {
    let s = setup(|c| c.max_concurrent = 16).await;
    let run = unique("run");
    let name = format!("{}.add", s.toolset);
    let calls = (0..100).map(|i| {
        let (req, _) = request(
            &name,
            json!({"a": i, "b": 1000}),
            &run,
            &format!("call_{i}"),
        );
        s.executor.call_tool(req)
    });
    let replies = futures_util::future::join_all(calls).await;
    for (i, r) in replies.into_iter().enumerate() {
        assert_eq!(r.unwrap().body, ToolResultBody::Json(json!(i + 1000)));
    }
    assert_eq!(s.executions.load(Ordering::SeqCst), 100);
    s.provider.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_entries_are_acknowledged_and_the_loop_keeps_serving() {
    let s = setup(|_| {}).await;
    let key = pulse::key(&wire::toolset_stream(&s.toolset));
    let mut mux = s.redis.mux();
    for fields in [
        vec!["x", "y"],
        vec!["n", "call", "p", "not json"],
        vec!["n", "call", "p", r#"{"type":"teleport"}"#],
        vec!["n", "call", "p", r#"{"type":"call"}"#],
        vec!["n", "call"],
    ] {
        let mut cmd = redis::cmd("XADD");
        cmd.arg(&key).arg("*").arg(&fields);
        let _: String = cmd.query_async(&mut mux).await.unwrap();
    }
    let (req, _) = request(
        &format!("{}.add", s.toolset),
        json!({"a": 1, "b": 1}),
        &unique("run"),
        "c",
    );
    assert_eq!(
        s.executor.call_tool(req).await.unwrap().body,
        ToolResultBody::Json(json!(2))
    );
    // Nothing stays pending.
    assert!(eventually(100, || pending(&s.redis, &key).map(|n| n == 0)).await);
    s.provider.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_consumer_group_is_recreated() {
    let s = setup(|c| c.block = Duration::from_millis(100)).await;
    let key = pulse::key(&wire::toolset_stream(&s.toolset));
    let _: i64 = redis::cmd("XGROUP")
        .arg("DESTROY")
        .arg(&key)
        .arg("provider")
        .query_async(&mut s.redis.mux())
        .await
        .unwrap();
    let name = format!("{}.add", s.toolset);
    let ok = eventually(200, || {
        let (req, _) = request(&name, json!({"a": 4, "b": 4}), &unique("run"), "c");
        let ex = &s.executor;
        async move {
            ex.call_tool(req)
                .await
                .is_ok_and(|r| r.body == ToolResultBody::Json(json!(8)))
        }
    })
    .await;
    assert!(
        ok,
        "calls succeed again once the provider recreated its group"
    );
    s.provider.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_call_reattaches_instead_of_running_twice() {
    let s = setup(|_| {}).await;
    let run = unique("run");
    let name = format!("{}.slow", s.toolset);
    // The first attempt is abandoned mid-wait, as a crashed run would.
    let (req, _) = request(&name, json!({"ms": 400}), &run, "call_7");
    let first = tokio::time::timeout(Duration::from_millis(100), s.executor.call_tool(req)).await;
    assert!(
        first.is_err(),
        "the first attempt was cut off while waiting"
    );
    // The resumed run calls again with the same run and call id.
    let (req, _) = request(&name, json!({"ms": 400}), &run, "call_7");
    let reply = s.executor.call_tool(req).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!("slept")));
    assert_eq!(s.executions.load(Ordering::SeqCst), 1, "the tool ran once");
    s.provider.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_result_stream_vanishes_fails_and_the_others_finish() {
    let s = setup(|_| {}).await;
    let run = unique("run");
    let name = format!("{}.slow", s.toolset);
    let (doomed, _) = request(&name, json!({"ms": 600}), &run, "call_1");
    let (kept, _) = request(&name, json!({"ms": 600}), &run, "call_2");
    let doomed_key = pulse::key(&wire::result_stream(&RegistryToolSet::tool_use_id(&doomed)));
    let (doomed, kept) = (s.executor.call_tool(doomed), s.executor.call_tool(kept));
    let vanish = async {
        // Both calls wait on the one result reader; then one stream goes.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _: i64 = redis::cmd("DEL")
            .arg(&doomed_key)
            .query_async(&mut s.redis.mux())
            .await
            .unwrap();
    };
    let (doomed, kept, ()) = tokio::join!(doomed, kept, vanish);
    let failure = doomed.expect_err("its stream is gone");
    // The call was out: whether it ran is not known.
    assert_eq!(failure.error.code, "outcome_unknown", "{failure:?}");
    assert!(failure.error.message.contains("gone"), "{failure:?}");
    assert_eq!(
        kept.unwrap().body,
        ToolResultBody::Json(json!("slept")),
        "the other call is read on"
    );
    s.provider.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_shutting_down_finishes_and_acknowledges_its_calls_first() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("shutdown");
    let executions = Arc::new(AtomicUsize::new(0));
    let config = ProviderConfig {
        max_concurrent: 64,
        ..ProviderConfig::default()
    };
    let tools = toolset_arc(&name, executions.clone());
    let gw_client = Some(GatewayClient::new(&gw.url).unwrap());
    let provider = Provider::new(redis.clone(), &name, tools, gw_client, config)
        .await
        .unwrap();
    provider.register().await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        provider
            .serve(async {
                let _ = stopped.await;
            })
            .await
    });
    let mut ec = ExecutorConfig::new(&gw.url, &name);
    ec.namespace = gw.ns.clone();
    ec.call_timeout = Duration::from_secs(20);
    let executor = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();

    let run = unique("run");
    let calls = futures_util::future::join_all((0..40).map(|i| {
        let (req, _) = request(
            &format!("{name}.slow"),
            json!({"ms": 300}),
            &run,
            &format!("call_{i}"),
        );
        executor.call_tool(req)
    }));
    let key = pulse::key(&wire::toolset_stream(&name));
    let stopper = async {
        // Every call is running on the provider when it is told to stop.
        let all_started = eventually(500, || {
            let n = executions.load(Ordering::SeqCst);
            async move { n == 40 }
        })
        .await;
        assert!(
            all_started,
            "{} of 40 calls started",
            executions.load(Ordering::SeqCst)
        );
        stop.send(()).unwrap();
        serving.await.unwrap().unwrap();
        // Serving ended after its calls: none is left pending for another
        // provider to claim and run again.
        assert_eq!(pending(&redis, &key).await, 0);
    };
    let (replies, ()) = tokio::join!(calls, stopper);
    for r in replies {
        assert_eq!(r.unwrap().body, ToolResultBody::Json(json!("slept")));
    }
    assert_eq!(executions.load(Ordering::SeqCst), 40);
}
