//! A run that crashes while its registry call is in flight and is resumed
//! from its store re-attaches to the call's result stream: the tool runs
//! once and the resumed run gets its result.

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
use weft_core::tool::ToolResultBody;
use weft_registry::{
    ExecutorConfig, GatewayClient, Provider, ProviderConfig, Redis, RegistryToolSet,
};
use weft_runtime::{Agent, MemoryStore, Runtime, ScriptedPlanner, StartRequest};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_mid_call_reattaches_and_the_tool_runs_once() {
    let redis = Redis::connect(&redis_url()).await.unwrap();
    let gw = gateway(&redis, |_| {}).await;
    let toolset = unique("resume");
    let runs = Arc::new(AtomicUsize::new(0));
    let provider = Provider::new(
        redis.clone(),
        &toolset,
        common::toolset(&toolset, runs.clone()),
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
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the tool ran once: the resumed call re-attached"
    );
    provider.abort();
}
