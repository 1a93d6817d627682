//! A wait on a human in the traces of `weft serve`, through the real binary:
//! `examples/clarify.toml` adds, then asks a clarification. The driver task
//! that asks ends its `invoke_agent` span with a `weft.await` event (what
//! is awaited, how many items); once the question is answered, the task
//! that finishes the run has a span of its own, in the same trace: a child
//! of the first task's span. Both reach an OTLP/HTTP receiver started here.

mod common;
#[path = "telemetry/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use harness::{
    TENANT_TOKEN, assert_no_bridge_attributes, attr, interrupt, otlp_receiver, serve, value,
    wait_for_spans,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{Value, json};

/// Calls the server's API as the tenant: a GET, or a POST of `body`.
async fn call(http: &reqwest::Client, addr: &str, path: &str, body: Option<Value>) -> Value {
    let url = format!("http://{addr}{path}");
    let request = match body {
        Some(body) => http.post(url).json(&body),
        None => http.get(url),
    };
    let reply = request.bearer_auth(TENANT_TOKEN).send().await.unwrap();
    assert!(reply.status().is_success(), "{path}: {}", reply.status());
    reply.json().await.unwrap()
}

/// Polls run `run` until its status is `status`; its view.
async fn wait_status(http: &reqwest::Client, addr: &str, run: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view = call(http, addr, &format!("/v1/runs/{run}"), None).await;
        if view["status"] == status {
            return view;
        }
        assert!(Instant::now() < deadline, "the run is not {status}: {view}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_on_a_human_is_an_event_of_the_run_span() {
    let (otlp, received) = otlp_receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let agent = common::example("clarify.toml");
    let (child, addr) = serve(dir.path(), &agent, &otlp, &[]);
    let http = reqwest::Client::new();
    let started = call(
        &http,
        &addr,
        "/v1/runs",
        Some(json!({"agent": "clarify", "input": "Add 2 and 3"})),
    )
    .await;
    let run = started["run_id"].as_str().unwrap().to_owned();
    let waiting = wait_status(&http, &addr, &run, "awaiting").await;
    let item = waiting["await"]["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    call(
        &http,
        &addr,
        &format!("/v1/runs/{run}/answers"),
        Some(json!({"item_id": item, "answer": {"kind": "clarification", "text": "3 and 4"}})),
    )
    .await;
    wait_status(&http, &addr, &run, "completed").await;
    tokio::task::spawn_blocking(move || interrupt(child))
        .await
        .unwrap();

    let is_run = |s: &Span| {
        s.name == "invoke_agent clarify" && attr(s, "weft.run.id").as_deref() == Some(&run)
    };
    let spans = wait_for_spans(&received, |spans| {
        spans.iter().filter(|s| is_run(s)).count() >= 2
    })
    .await;
    let mut runs: Vec<&Span> = spans.iter().filter(|s| is_run(s)).collect();
    runs.sort_by_key(|s| s.start_time_unix_nano);
    assert_eq!(runs.len(), 2, "one driver task until the wait, one after");
    let (asked, finished) = (runs[0], runs[1]);

    // The task that asked: its span says the run waits, in an event.
    let waits: Vec<_> = asked
        .events
        .iter()
        .filter(|e| e.name == "weft.await")
        .collect();
    assert_eq!(waits.len(), 1, "one wait: {:?}", asked.events);
    let wait = waits[0];
    let items = wait
        .attributes
        .iter()
        .find(|kv| kv.key == "weft.await.items");
    assert_eq!(
        items.and_then(|kv| kv.value.as_ref()?.value.clone()),
        Some(AnyValue::IntValue(1)),
        "an integer count"
    );
    assert_eq!(
        value(&wait.attributes, "weft.await.kinds").as_deref(),
        Some("Clarification")
    );
    assert!(
        asked.start_time_unix_nano <= wait.time_unix_nano
            && wait.time_unix_nano <= asked.end_time_unix_nano,
        "the event is within the span"
    );
    // It ran the tool before it asked.
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool calc.add")
        .expect("the tool span");
    assert_eq!(tool.parent_span_id, asked.span_id);
    assert!(tool.end_time_unix_nano <= wait.time_unix_nano);

    // One run, one trace: the task that goes on after the answer is a
    // child of the first task's span.
    assert_eq!(finished.trace_id, asked.trace_id, "one trace per run");
    assert_eq!(finished.parent_span_id, asked.span_id);
    assert!(
        spans
            .iter()
            .filter(|s| attr(s, "weft.run.id").as_deref() == Some(&run))
            .all(|s| s.trace_id == asked.trace_id)
    );
    assert_no_bridge_attributes(&spans);

    // The task that finished after the answer waited on nobody.
    assert_eq!(
        attr(finished, "weft.run.outcome").as_deref(),
        Some("completed")
    );
    assert!(
        finished.events.iter().all(|e| e.name != "weft.await"),
        "{:?}",
        finished.events
    );
}
