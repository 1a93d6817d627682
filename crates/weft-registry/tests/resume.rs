//! A run that crashes while its registry call is in flight and is resumed
//! from its store: a call to a tool whose spec says it is idempotent
//! re-attaches to the call's result stream (the tool runs once and the
//! resumed run gets its result); a call to any other tool is reported
//! interrupted, not run again, as for any tool that is not idempotent.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::json;
use weft_core::event::EventKind;
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::RunOutcome;
use weft_core::store::RunStore;
use weft_core::tool::{ToolError, ToolResultBody};
use weft_registry::{
    ExecutorConfig, GatewayClient, Provider, ProviderConfig, Redis, RegistryToolSet,
};
use weft_runtime::{Agent, MemoryStore, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::{FnToolSet, ToolSet};

async fn agent(redis: &Redis, gw: &TestGateway, toolset: &str) -> Agent {
    let mut ec = ExecutorConfig::new(&gw.url, toolset);
    ec.namespace = gw.ns.clone();
    ec.alias = Some("remote".into());
    let tools = RegistryToolSet::connect(redis.clone(), ec).await.unwrap();
    let planner = Arc::new(ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::new(
            "remote.slow",
            json!({"ms": 600}),
        )]),
        PlanResult::final_text("done"),
    ]));
    Agent::builder("remote-agent", planner)
        .toolset(Arc::new(tools))
        .build()
}

/// `slow`, idempotent or not, counting its runs.
fn slow(name: &str, idempotent: bool, runs: Arc<AtomicUsize>) -> Arc<dyn ToolSet> {
    let tools = FnToolSet::new(name).tool("slow", "Sleeps", move |a: SlowArgs| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            Ok::<_, ToolError>("slept")
        }
    });
    Arc::new(if idempotent {
        tools.idempotent()
    } else {
        tools
    })
}

/// Starts a run whose process dies mid-call, resumes it in another: the
/// run's outcome, its calls' outputs and how often the tool ran.
async fn crash_and_resume(
    idempotent: bool,
) -> (
    Option<RunOutcome>,
    Vec<Arc<weft_core::tool::ToolOutput>>,
    usize,
) {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let toolset = unique("resume");
    let runs = Arc::new(AtomicUsize::new(0));
    let provider = Provider::new(
        redis.clone(),
        &toolset,
        slow(&toolset, idempotent, runs.clone()),
        Some(GatewayClient::new(&gw.url).unwrap()),
        ProviderConfig::default(),
    )
    .await
    .unwrap();
    provider.register().await.unwrap();
    let provider = tokio::spawn(async move { provider.serve(std::future::pending()).await });
    let store = Arc::new(MemoryStore::new());

    // The first process starts the run and dies while the call is in flight.
    let crashed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (store1, redis1, url, ns, ts) = (
        store.clone(),
        redis.clone(),
        gw.url.clone(),
        gw.ns.clone(),
        toolset.clone(),
    );
    let run_id = crashed
        .spawn(async move {
            let gw = TestGateway {
                url,
                ns,
                task: tokio::spawn(std::future::pending()),
            };
            let rt = Runtime::builder()
                .store(store1 as Arc<dyn RunStore>)
                .agent(agent(&redis1, &gw, &ts).await)
                .lease_ttl(Duration::from_millis(300))
                .build();
            let handle = rt
                .start("remote-agent", StartRequest::user("go"))
                .await
                .unwrap();
            let id = handle.run_id().clone();
            std::mem::forget(rt);
            std::mem::forget(gw);
            id
        })
        .await
        .unwrap();
    assert!(
        eventually(250, || async { runs.load(Ordering::SeqCst) == 1 }).await,
        "the call reached the provider"
    );
    crashed.shutdown_background();

    // A new process resumes it from the store.
    let rt = Runtime::builder()
        .store(store.clone() as Arc<dyn RunStore>)
        .agent(agent(&redis, &gw, &toolset).await)
        .build();
    // Its lease lapses a TTL after the crash; then it is an orphan.
    let mut recovered = 0;
    for _ in 0..40 {
        recovered = rt.recover_unfinished().await.unwrap();
        if recovered > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(recovered, 1);
    let mut events = rt.subscribe(&run_id, 0).await.unwrap();
    let mut finished = Vec::new();
    let mut outcome = None;
    while let Some(e) = tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .unwrap()
    {
        match e.unwrap().kind {
            EventKind::ToolFinished { output } => finished.push(output),
            EventKind::RunFinished { outcome: o } => outcome = Some(o),
            _ => {}
        }
    }
    provider.abort();
    (outcome, finished, runs.load(Ordering::SeqCst))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_idempotent_call_reattaches_and_the_tool_runs_once() {
    let (outcome, finished, runs) = crash_and_resume(true).await;
    assert!(
        matches!(outcome, Some(RunOutcome::Response { .. })),
        "{outcome:?}"
    );
    let last = finished.last().unwrap();
    assert_eq!(
        last.result,
        ToolResultBody::Json(json!("slept")),
        "{last:?}"
    );
    assert_eq!(runs, 1, "the tool ran once: the resumed call re-attached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_call_to_a_tool_that_is_not_idempotent_is_not_run_again() {
    let (outcome, finished, runs) = crash_and_resume(false).await;
    assert!(
        matches!(outcome, Some(RunOutcome::Response { .. })),
        "{outcome:?}"
    );
    let last = finished.last().unwrap();
    let ToolResultBody::Error(error) = &last.result else {
        panic!("{last:?}");
    };
    assert!(error.message.contains("not idempotent"), "{error:?}");
    assert_eq!(runs, 1, "the tool ran once");
}
