//! A bounded registry, against the real Redis: health that survives a
//! gateway restart (a pong never asked for is not missing), no pings piling
//! up for a toolset nobody reads, registrations that expire without pongs
//! and live on with them, calls that expire in the queue once their
//! caller's deadline passed, dead consumers and dead letters trimmed, and a
//! provider that unregisters when it stops.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::json;
use weft_core::tool::ToolResultBody;
use weft_registry::{
    Gateway, GatewayAuth, GatewayClient, GatewayConfig, Namespace, Provider, ProviderConfig, Redis,
    RegistryToolSet, pulse, wire,
};
use weft_tools::ToolSet;

/// A gateway in namespace `ns` (several may share one).
async fn gateway_in(
    redis: &Redis,
    ns: &Namespace,
    tweak: impl FnOnce(&mut GatewayConfig),
) -> TestGateway {
    gateway_at(redis, ns, "127.0.0.1:0", tweak).await
}

/// A gateway in namespace `ns` listening on `addr` (retried while a
/// gateway that stopped there a moment ago still holds it).
async fn gateway_at(
    redis: &Redis,
    ns: &Namespace,
    addr: &str,
    tweak: impl FnOnce(&mut GatewayConfig),
) -> TestGateway {
    let mut config = GatewayConfig {
        namespace: ns.clone(),
        ping_interval: Duration::from_millis(100),
        missed_pongs: 2,
        auth: GatewayAuth::InsecureNoAuth,
        ..GatewayConfig::default()
    };
    tweak(&mut config);
    let gw = Gateway::new(redis.clone(), config).unwrap();
    let mut tries = 0;
    let listener = loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => break l,
            Err(e) if tries < 100 => {
                tries += 1;
                let _ = e;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("binding {addr}: {e}"),
        }
    };
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(gw.serve(listener));
    TestGateway {
        url,
        ns: ns.clone(),
        task,
    }
}

async fn xlen(redis: &Redis, key: &str) -> i64 {
    redis::cmd("XLEN")
        .arg(key)
        .query_async(&mut redis.mux())
        .await
        .unwrap()
}

async fn add(
    ex: &RegistryToolSet,
    name: &str,
    run: &str,
    call: &str,
) -> Result<ToolResultBody, String> {
    let (req, _) = request(&format!("{name}.add"), json!({"a": 2, "b": 3}), run, call);
    ex.call_tool(req)
        .await
        .map(|r| r.body)
        .map_err(|f| f.error.code.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_survives_a_gateway_restart() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let ns = Namespace::new(unique("test:registry:"));
    let gw = gateway_in(&redis, &ns, |_| {}).await;
    let name = unique("restart");
    let (ex, serving) = serve_and_connect(
        &redis,
        &gw,
        &name,
        toolset(&name, Arc::default()),
        ProviderConfig::default(),
    )
    .await;
    let run = unique("run");
    assert_eq!(
        add(&ex, &name, &run, "c1").await,
        Ok(ToolResultBody::Json(json!(5)))
    );
    // Every gateway is down for ten staleness windows (300 ms each): no
    // ping is sent, so none goes unanswered.
    let addr = gw.url.trim_start_matches("http://").to_owned();
    drop(gw);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        add(&ex, &name, &run, "c2").await,
        Ok(ToolResultBody::Json(json!(5))),
        "a live provider was refused for pongs nobody asked for"
    );
    // The gateway comes back at its address: pings and pongs resume, the
    // toolset stays healthy.
    let gw = gateway_at(&redis, &ns, &addr, |_| {}).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let view = GatewayClient::new(&gw.url)
        .unwrap()
        .toolset(&name)
        .await
        .unwrap();
    assert!(view.healthy, "{view:?}");
    assert_eq!(
        add(&ex, &name, &run, "c3").await,
        Ok(ToolResultBody::Json(json!(5)))
    );
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_do_not_pile_up_for_a_toolset_nobody_reads() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let ns = Namespace::new(unique("test:registry:"));
    let gw = gateway_in(&redis, &ns, |_| {}).await;
    let name = unique("noreader");
    let client = GatewayClient::new(&gw.url).unwrap();
    let provider = Provider::new(
        redis.clone(),
        &name,
        toolset(&name, Arc::default()),
        Some(client.clone()),
        ProviderConfig::default(),
    )
    .await
    .unwrap();
    // Registered, and never served: nobody reads the request stream.
    provider.register().await.unwrap();
    // Twenty ping intervals.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let key = pulse::key(&wire::toolset_stream(&name));
    let queued = xlen(&redis, &key).await;
    assert!(queued <= 1, "{queued} pings queued for nobody");
    let view = client.toolset(&name).await.unwrap();
    assert!(!view.healthy, "the unanswered ping counts: {view:?}");
    let _: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_expire_without_pongs_and_live_on_with_them() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let ns = Namespace::new(unique("test:registry:"));
    // Staleness 300 ms; a registration lives at least twice that: 1 s here.
    let gw = gateway_in(&redis, &ns, |c| c.registration_ttl = Duration::from_secs(1)).await;
    let client = GatewayClient::new(&gw.url).unwrap();
    let (served, gone) = (unique("served"), unique("gone"));
    let (_, serving) = serve_and_connect(
        &redis,
        &gw,
        &served,
        toolset(&served, Arc::default()),
        ProviderConfig::default(),
    )
    .await;
    let silent = Provider::new(
        redis.clone(),
        &gone,
        toolset(&gone, Arc::default()),
        Some(client.clone()),
        ProviderConfig::default(),
    )
    .await
    .unwrap();
    silent.register().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        client.toolset(&served).await.is_ok(),
        "pongs renew a registration"
    );
    assert!(
        client.toolset(&gone).await.is_err(),
        "a registration nobody renews expires"
    );
    // The pinger dropped the expired name from the set of toolsets.
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg(ns.toolsets())
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    assert_eq!(members, vec![served.clone()]);
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_caller_gave_up_expires_in_the_queue() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("expire");
    let executions = Arc::new(AtomicUsize::new(0));
    // One worker, busy with a slow call while the next one waits in Redis.
    let config = ProviderConfig {
        max_concurrent: 1,
        ..ProviderConfig::default()
    };
    let (_, serving) = serve_and_connect(
        &redis,
        &gw,
        &name,
        toolset(&name, executions.clone()),
        config,
    )
    .await;
    let mut ec = weft_registry::ExecutorConfig::new(&gw.url, &name);
    ec.namespace = gw.ns.clone();
    ec.call_timeout = Duration::from_millis(400);
    let ex = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();
    let run = unique("run");
    let (slow, _) = request(&format!("{name}.slow"), json!({"ms": 1500}), &run, "slow");
    let (queued, _) = request(
        &format!("{name}.add"),
        json!({"a": 1, "b": 1}),
        &run,
        "queued",
    );
    let (slow, queued) = tokio::join!(ex.call_tool(slow), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ex.call_tool(queued).await
    });
    assert_eq!(slow.unwrap_err().error.code, "timeout");
    assert_eq!(queued.unwrap_err().error.code, "timeout");
    // The slow call finishes; the queued one is read after its deadline.
    let key = pulse::key(&wire::toolset_stream(&name));
    assert!(
        eventually(200, || async {
            let pending: redis::Value = redis::cmd("XPENDING")
                .arg(&key)
                .arg("provider")
                .query_async(&mut redis.mux())
                .await
                .unwrap();
            matches!(pending, redis::Value::Array(ref f) if f.first() == Some(&redis::Value::Int(0)))
                && executions.load(Ordering::SeqCst) >= 1
        })
        .await
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        executions.load(Ordering::SeqCst),
        1,
        "a call nobody waits for any more ran"
    );
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_consumers_and_dead_letters_are_trimmed() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let name = unique("tidy");
    let key = pulse::key(&wire::toolset_stream(&name));
    let dead = pulse::key(&format!("toolset:{name}:dead"));
    weft_registry::catalog::ensure_provider_group(&redis, &name)
        .await
        .unwrap();
    // A provider that stopped long ago left its consumer behind.
    let _: i64 = redis::cmd("XGROUP")
        .arg("CREATECONSUMER")
        .arg(&key)
        .arg("provider")
        .arg("ghost")
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    for i in 0..20 {
        let _: String = redis::cmd("XADD")
            .arg(&dead)
            .arg("*")
            .arg("n")
            .arg("call")
            .arg("p")
            .arg(format!("{i}"))
            .query_async(&mut redis.mux())
            .await
            .unwrap();
    }
    let config = ProviderConfig {
        claim_interval: Duration::from_millis(50),
        dead_consumer_after: Duration::from_millis(300),
        dead_letter_max: 5,
        ..ProviderConfig::default()
    };
    let consumer = config.consumer.clone();
    let (_, serving) =
        serve_and_connect(&redis, &gw, &name, toolset(&name, Arc::default()), config).await;
    let consumers = || async {
        let reply: redis::Value = redis::cmd("XINFO")
            .arg("CONSUMERS")
            .arg(&key)
            .arg("provider")
            .query_async(&mut redis.mux())
            .await
            .unwrap();
        format!("{reply:?}")
    };
    assert!(
        eventually(150, || async { !consumers().await.contains("ghost") }).await,
        "the dead consumer is still there: {}",
        consumers().await
    );
    assert!(consumers().await.contains(&consumer), "the live one stays");
    assert!(eventually(150, || async { xlen(&redis, &dead).await <= 5 }).await);
    serving.abort();
    let _: i64 = redis::cmd("DEL")
        .arg(&key)
        .arg(&dead)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_unregisters_when_it_stops() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let client = GatewayClient::new(&gw.url).unwrap();
    let (leaving, staying) = (unique("leaving"), unique("staying"));
    let mut stops = Vec::new();
    for (name, unregister_on_stop) in [(&leaving, true), (&staying, false)] {
        let config = ProviderConfig {
            unregister_on_stop,
            ..ProviderConfig::default()
        };
        let tools: Arc<dyn ToolSet> = toolset(name, Arc::default());
        let provider = Provider::new(redis.clone(), name, tools, Some(client.clone()), config)
            .await
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(provider.serve(async {
            let _ = stopped.await;
        }));
        assert!(eventually(250, || async { client.toolset(name).await.is_ok() }).await);
        stops.push((stop, serving));
    }
    for (stop, serving) in stops {
        stop.send(()).unwrap();
        serving.await.unwrap().unwrap();
    }
    assert!(
        client.toolset(&leaving).await.is_err(),
        "still registered after it stopped"
    );
    assert!(
        client.toolset(&staying).await.is_ok(),
        "--keep-registration kept it"
    );
}
