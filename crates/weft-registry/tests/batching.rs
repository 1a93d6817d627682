//! Admission and publishing batched across concurrent calls, against the
//! real Redis: parallel calls to healthy, unknown and unhealthy toolsets
//! each get their own answer, and a queue bound admits exactly that many
//! calls of a larger burst (in one script or across batches).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::json;
use weft_core::tool::ToolResultBody;
use weft_registry::admission::{self, Admission, Call, GroupStart};
use weft_registry::{
    ExecutorConfig, GatewayClient, Provider, ProviderConfig, Redis, RegistryToolSet, pulse, wire,
};
use weft_tools::ToolSet;

/// A provider of the test toolset `name`, registered (and serving when
/// `serve`), and an executor for it.
async fn toolset_with_executor(
    redis: &Redis,
    gw: &TestGateway,
    name: &str,
    serve: bool,
    runs: Arc<AtomicUsize>,
) -> (RegistryToolSet, Option<tokio::task::JoinHandle<()>>) {
    let provider = Provider::new(
        redis.clone(),
        name,
        toolset(name, runs),
        Some(GatewayClient::new(&gw.url).unwrap()),
        ProviderConfig {
            max_concurrent: 32,
            ..ProviderConfig::default()
        },
    )
    .await
    .unwrap();
    provider.register().await.unwrap();
    let task = serve.then(|| {
        tokio::spawn(async move {
            provider.serve(std::future::pending()).await.unwrap();
        })
    });
    let mut ec = ExecutorConfig::new(&gw.url, name);
    ec.namespace = gw.ns.clone();
    ec.call_timeout = Duration::from_secs(20);
    let executor = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();
    (executor, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_to_healthy_unknown_and_unhealthy_toolsets_each_get_their_answer() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let (good, bad, sick) = (unique("good"), unique("gone"), unique("sick"));
    let (good_ex, provider) = toolset_with_executor(&redis, &gw, &good, true, runs.clone()).await;
    let (bad_ex, _) = toolset_with_executor(&redis, &gw, &bad, false, Arc::default()).await;
    let (sick_ex, _) = toolset_with_executor(&redis, &gw, &sick, false, Arc::default()).await;
    // `gone` loses its state (unknown); `sick` left a ping unanswered long ago.
    let _: i64 = redis::cmd("DEL")
        .arg(gw.ns.state(&bad))
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    let _: i64 = redis::cmd("HSET")
        .arg(gw.ns.state(&sick))
        .arg("unanswered_since")
        .arg(0)
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    // Some calls to `good` are invalid and never admitted.
    let invalid = |i: usize| i % 4 <= 1 && i.is_multiple_of(10);
    let run = unique("run");
    let calls = (0..100).map(|i| {
        let (ex, name) = match i % 4 {
            0 | 1 => (&good_ex, &good),
            2 => (&bad_ex, &bad),
            _ => (&sick_ex, &sick),
        };
        let b = if invalid(i) { json!("x") } else { json!(1000) };
        let (req, _) = request(
            &format!("{name}.add"),
            json!({"a": i, "b": b}),
            &run,
            &format!("call_{i}"),
        );
        ex.call_tool(req)
    });
    let replies = futures_util::future::join_all(calls).await;
    let mut ok = 0;
    for (i, r) in replies.into_iter().enumerate() {
        match (i % 4, invalid(i)) {
            (0 | 1, true) => {
                let err = r.expect_err("invalid");
                assert_eq!(err.error.code, "invalid_arguments", "{i}: {err:?}");
            }
            (0 | 1, _) => {
                assert_eq!(r.unwrap().body, ToolResultBody::Json(json!(i + 1000)));
                ok += 1;
            }
            (2, _) => assert_eq!(r.unwrap_err().error.code, "unknown_toolset", "{i}"),
            _ => assert_eq!(r.unwrap_err().error.code, "service_unavailable", "{i}"),
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), ok);
    if let Some(p) = provider {
        p.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_bound_admits_exactly_that_many_of_a_burst() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    // No pings land in the request stream while the burst is admitted.
    let gw = gateway(&redis, |c| {
        c.max_queue = 5;
        c.ping_interval = Duration::from_secs(60);
    })
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let name = unique("bound");
    let (ex, provider) = toolset_with_executor(&redis, &gw, &name, true, runs.clone()).await;
    let run = unique("run");
    let calls = (0..20).map(|i| {
        let (req, _) = request(
            &format!("{name}.slow"),
            json!({"ms": 1500}),
            &run,
            &format!("call_{i}"),
        );
        ex.call_tool(req)
    });
    let replies = futures_util::future::join_all(calls).await;
    let (ok, full): (Vec<_>, Vec<_>) = replies.into_iter().partition(|r| r.is_ok());
    assert_eq!(ok.len(), 5);
    for r in full {
        assert_eq!(r.unwrap_err().error.code, "queue_full");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 5);
    if let Some(p) = provider {
        p.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_admission_script_bounds_the_queue_and_reattaches_in_order() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |c| {
        c.max_queue = 5;
        c.ping_interval = Duration::from_secs(60);
    })
    .await;
    let name = unique("script");
    let _ = toolset_with_executor(&redis, &gw, &name, false, Arc::default()).await;
    let run = unique("run");
    let call = |i: usize| Call {
        tool_use_id: format!("{run}/call_{i}"),
        message: format!(r#"{{"type":"call","tool_use_id":"{run}/call_{i}"}}"#).into_bytes(),
    };
    let calls: Vec<Call> = [0, 1, 0, 2, 3, 4, 5, 6].into_iter().map(call).collect();
    let got = admission::admit_batch(&redis, &gw.ns, &name, &calls, 60_000, GroupStart::Oldest)
        .await
        .unwrap();
    let kinds: Vec<&str> = got
        .iter()
        .map(|a| match a {
            Admission::Published(_) => "published",
            Admission::Reattach => "reattach",
            Admission::QueueFull { depth: 5, max: 5 } => "full",
            other => panic!("{other:?}"),
        })
        .collect();
    let want = [
        "published",
        "published",
        "reattach",
        "published",
        "published",
        "published",
        "full",
        "full",
    ];
    assert_eq!(kinds, want);
    let mut mux = redis.mux();
    let queued: i64 = redis::cmd("XLEN")
        .arg(pulse::key(&wire::toolset_stream(&name)))
        .query_async(&mut mux)
        .await
        .unwrap();
    assert_eq!(queued, 5);
    // Each published call has its result stream, with `init` and the group.
    let key = pulse::key(&wire::result_stream(&format!("{run}/call_4")));
    let groups: redis::Value = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(&key)
        .query_async(&mut mux)
        .await
        .unwrap();
    assert!(matches!(groups, redis::Value::Array(ref g) if g.len() == 1));
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&key)
        .query_async(&mut mux)
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 60_000);
    let full = pulse::key(&wire::result_stream(&format!("{run}/call_5")));
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&full)
        .query_async(&mut mux)
        .await
        .unwrap();
    assert_eq!(exists, 0, "a refused call gets no result stream");
    // `init` is the stream's first entry, at the fixed id `0-1`.
    let first: redis::Value = redis::cmd("XRANGE")
        .arg(&key)
        .arg("-")
        .arg("+")
        .arg("COUNT")
        .arg(1)
        .query_async(&mut mux)
        .await
        .unwrap();
    let first = pulse::parse_entries(first).unwrap();
    assert_eq!(first[0].id, "0-1");
    assert!(
        matches!(&first[0].body, pulse::Body::Event { name, payload }
        if name == "init" && payload.as_slice() == b"{}")
    );

    // With the queue full, a call admitted before re-attaches (it is queued
    // already) and, for an executor, its group is rewound to the start; a
    // new call is refused.
    let _: () = redis::cmd("XGROUP")
        .arg("SETID")
        .arg(&key)
        .arg("agent")
        .arg("$")
        .query_async(&mut mux)
        .await
        .unwrap();
    let again = [call(4), call(7)];
    let got = admission::admit_batch(&redis, &gw.ns, &name, &again, 60_000, GroupStart::AfterInit)
        .await
        .unwrap();
    assert!(
        matches!(got[..], [Admission::Reattach, Admission::QueueFull { .. }]),
        "{got:?}"
    );
    let group: Vec<redis::Value> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(&key)
        .query_async::<Vec<Vec<redis::Value>>>(&mut mux)
        .await
        .unwrap()
        .remove(0);
    let at = group
        .chunks(2)
        .find(|kv| kv[0] == redis::Value::BulkString(b"last-delivered-id".to_vec()))
        .map(|kv| kv[1].clone());
    assert_eq!(at, Some(redis::Value::BulkString(b"0-0".to_vec())));
    let _: i64 = redis::cmd("DEL")
        .arg(pulse::key(&wire::toolset_stream(&name)))
        .query_async(&mut mux)
        .await
        .unwrap();
}
