//! The lone lane's faults. A lone call reads its result stream on a
//! dedicated connection: when that connection dies mid-call, the executor's
//! shared reader takes the call over from the last entry it took, so the
//! call still gets its one result, and every output delta once, in order.
//! When Redis no longer has the admission script, a lone call takes the
//! batched path, which loads it.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::tool::{ToolError, ToolRequest, ToolResultBody};
use weft_registry::{ProviderConfig, Redis, RegistryToolSet};
use weft_tools::{FnToolSet, ToolSet};

#[derive(Deserialize, JsonSchema)]
struct PacedArgs {
    ms: u64,
}

/// `paced`: a delta, a pause, a delta, a pause, then its result.
fn paced(name: &str, runs: Arc<AtomicUsize>) -> Arc<dyn ToolSet> {
    Arc::new(FnToolSet::new(name).tool_with_context(
        "paced",
        "Reports twice, slowly",
        move |req: ToolRequest, a: PacedArgs| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                req.output.publish("stdout", "a\n");
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
                req.output.publish("stdout", "b\n");
                tokio::time::sleep(Duration::from_millis(a.ms)).await;
                Ok::<_, ToolError>("done")
            }
        },
    ))
}

/// The local ports of this process's TCP sockets.
fn own_ports() -> HashSet<u16> {
    let inodes: HashSet<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut ports = HashSet::new();
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(inode)) = (cols.get(1), cols.get(9)) else {
                continue;
            };
            if inodes.contains(*inode)
                && let Some((_, port)) = local.rsplit_once(':')
                && let Ok(port) = u16::from_str_radix(port, 16)
            {
                ports.insert(port);
            }
        }
    }
    ports
}

/// Kills this process's connections blocked in `XREADGROUP`; how many.
async fn kill_own_blocked_reads(redis: &Redis) -> usize {
    let ports = own_ports();
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    let mut killed = 0;
    for line in list.lines() {
        let field = |name: &str| {
            line.split(' ')
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        };
        let ours = field("addr")
            .and_then(|a| a.rsplit_once(':'))
            .and_then(|(_, p)| p.parse::<u16>().ok())
            .is_some_and(|p| ports.contains(&p));
        let blocked = field("flags").is_some_and(|f| f.contains('b'));
        if ours && blocked && field("cmd") == Some("xreadgroup") {
            let id = field("id").unwrap();
            let n: i64 = redis::cmd("CLIENT")
                .arg("KILL")
                .arg("ID")
                .arg(id)
                .query_async(&mut redis.mux())
                .await
                .unwrap();
            killed += usize::try_from(n).unwrap();
        }
    }
    killed
}

/// A provider of `paced` and an executor for it.
async fn setup(
    redis: &Redis,
) -> (
    TestGateway,
    RegistryToolSet,
    Arc<AtomicUsize>,
    tokio::task::JoinHandle<()>,
) {
    let gw = gateway(redis, |_| {}).await;
    let name = unique("lone");
    let runs = Arc::new(AtomicUsize::new(0));
    let (ex, provider) = serve_and_connect(
        redis,
        &gw,
        &name,
        paced(&name, runs.clone()),
        ProviderConfig::default(),
    )
    .await;
    (gw, ex, runs, provider)
}

fn paced_request(ex: &RegistryToolSet, ms: u64) -> (ToolRequest, Deltas) {
    let name = ex.name().to_owned();
    request(
        &format!("{name}.paced"),
        json!({"ms": ms}),
        &unique("run"),
        "call_1",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_calls_broken_read_is_taken_over_without_loss_or_repeats() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let (_gw, ex, runs, provider) = setup(&redis).await;
    let (req, deltas) = paced_request(&ex, 600);
    let call = tokio::spawn(async move { ex.call_tool(req).await });
    assert!(eventually(200, || async { deltas.lock().unwrap().len() == 1 }).await);
    // The call's own read, and the provider's request read.
    assert!(kill_own_blocked_reads(&redis).await >= 1);

    let reply = call.await.unwrap().unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!("done")));
    let got = texts(&deltas);
    assert_eq!(got, ["a\n", "b\n"], "each delta once, in order");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    provider.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_call_without_the_script_in_redis_takes_the_batched_path() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let (_gw, ex, runs, provider) = setup(&redis).await;
    // Every other client loads its scripts again on NOSCRIPT.
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut redis.mux())
        .await
        .unwrap();
    let (req, deltas) = paced_request(&ex, 10);
    let reply = ex.call_tool(req).await.unwrap();
    assert_eq!(reply.body, ToolResultBody::Json(json!("done")));
    assert_eq!(deltas.lock().unwrap().len(), 2);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "published once");
    provider.abort();
}
