//! Shared test setup: a gateway on a free port in a unique namespace, a
//! test toolset, requests with a capturing output sink.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use weft_core::tool::{OutputSink, ToolError, ToolIdent, ToolRequest};
use weft_core::{RunId, SessionId, ToolCallId, TurnId};
use weft_registry::{Gateway, GatewayAuth, GatewayConfig, Namespace, Redis};
use weft_tools::FnToolSet;

pub fn redis_url() -> String {
    std::env::var("WEFT_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

pub struct TestGateway {
    pub url: String,
    pub ns: Namespace,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn gateway(redis: &Redis, tweak: impl FnOnce(&mut GatewayConfig)) -> TestGateway {
    let ns = Namespace::new(unique("test:registry:"));
    let mut config = GatewayConfig {
        namespace: ns.clone(),
        ping_interval: Duration::from_millis(200),
        auth: GatewayAuth::InsecureNoAuth,
        ..GatewayConfig::default()
    };
    tweak(&mut config);
    let gw = Gateway::new(redis.clone(), config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(gw.serve(listener));
    TestGateway { url, ns, task }
}

#[derive(Deserialize, JsonSchema)]
pub struct AddArgs {
    pub a: i64,
    pub b: i64,
}

#[derive(Deserialize, JsonSchema)]
pub struct StepsArgs {
    pub n: u32,
}

#[derive(Deserialize, JsonSchema)]
pub struct SlowArgs {
    pub ms: u64,
}

/// `add`, `steps` (publishes n deltas), `slow` (sleeps); counts executions.
pub fn toolset(name: &str, executions: Arc<AtomicUsize>) -> Arc<FnToolSet> {
    let (e1, e2, e3) = (executions.clone(), executions.clone(), executions);
    Arc::new(
        FnToolSet::new(name)
            .tool("add", "Adds two integers", move |a: AddArgs| {
                e1.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ToolError>(a.a + a.b) }
            })
            .tool_with_context(
                "steps",
                "Reports progress",
                move |req: ToolRequest, a: StepsArgs| {
                    e2.fetch_add(1, Ordering::SeqCst);
                    async move {
                        for i in 1..=a.n {
                            req.output.publish("stdout", &format!("step {i}\n"));
                        }
                        Ok::<_, ToolError>(a.n)
                    }
                },
            )
            .tool("slow", "Sleeps", move |a: SlowArgs| {
                e3.fetch_add(1, Ordering::SeqCst);
                async move {
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                    Ok::<_, ToolError>("slept")
                }
            }),
    )
}

pub type Deltas = Arc<Mutex<Vec<(String, String)>>>;

pub fn request(tool: &str, payload: Value, run: &str, call: &str) -> (ToolRequest, Deltas) {
    let deltas: Deltas = Arc::default();
    let d = deltas.clone();
    let req = ToolRequest {
        name: ToolIdent::new(tool),
        payload: payload.into(),
        run_id: RunId::new(run),
        session_id: SessionId::new("sess"),
        turn_id: TurnId::new(format!("{run}/1")),
        tool_call_id: ToolCallId::new(call),
        parent_tool_call_id: None,
        labels: Default::default(),
        output: OutputSink::new(move |s, delta| {
            d.lock().unwrap().push((s.to_owned(), delta.to_owned()));
        }),
        elicit: Default::default(),
        children: Default::default(),
    };
    (req, deltas)
}

/// Polls `check` every 20 ms, up to `tries` times.
pub async fn eventually<F, Fut>(tries: usize, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..tries {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// A provider of `tools` registered as `name` through `gw` and serving (its
/// task), and an executor for it with a 20 s call timeout.
pub async fn serve_and_connect(
    redis: &weft_registry::Redis,
    gw: &TestGateway,
    name: &str,
    tools: Arc<dyn weft_tools::ToolSet>,
    config: weft_registry::ProviderConfig,
) -> (weft_registry::RegistryToolSet, tokio::task::JoinHandle<()>) {
    let provider = weft_registry::Provider::new(
        redis.clone(),
        name,
        tools,
        Some(weft_registry::GatewayClient::new(&gw.url).unwrap()),
        config,
    )
    .await
    .unwrap();
    provider.register().await.unwrap();
    let serving = tokio::spawn(async move {
        provider.serve(std::future::pending()).await.unwrap();
    });
    let mut ec = weft_registry::ExecutorConfig::new(&gw.url, name);
    ec.namespace = gw.ns.clone();
    ec.call_timeout = Duration::from_secs(20);
    let executor = weft_registry::RegistryToolSet::connect(redis.clone(), ec)
        .await
        .unwrap();
    (executor, serving)
}

/// The text of every delta captured, in order.
pub fn texts(deltas: &Deltas) -> Vec<String> {
    deltas
        .lock()
        .unwrap()
        .iter()
        .map(|(_, d)| d.clone())
        .collect()
}
