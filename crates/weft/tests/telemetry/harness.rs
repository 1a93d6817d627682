//! What the trace tests share: an OTLP/HTTP receiver started by the test
//! (protobuf, decoded with opentelemetry-proto), a model server speaking
//! OpenAI's chat completions stream, `weft serve` exporting to it, and
//! readers of the spans it got.

// Each test binary uses a part of the harness.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Response, header};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{Value, json};

/// The token of the tenant `weft serve` is started with.
pub const TENANT_TOKEN: &str = "tenant-token";

/// The spans an OTLP/HTTP receiver got, in arrival order.
pub type Received = Arc<Mutex<Vec<Span>>>;

/// An OTLP/HTTP receiver at `POST /v1/traces`; returns its base URL.
pub async fn otlp_receiver() -> (String, Received) {
    let spans: Received = Arc::default();
    let sink = spans.clone();
    let app = Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let sink = sink.clone();
            async move {
                let request =
                    ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body");
                let mut sink = sink.lock().unwrap();
                for resource in request.resource_spans {
                    for scope in resource.scope_spans {
                        sink.extend(scope.spans);
                    }
                }
                Response::builder()
                    .header(header::CONTENT_TYPE, "application/x-protobuf")
                    .body(Body::from(
                        ExportTraceServiceResponse::default().encode_to_vec(),
                    ))
                    .unwrap()
            }
        }),
    );
    (serve_app(app).await, spans)
}

/// One streamed chat completion: a `calc.add` call first, then the answer.
pub fn completion(turn: usize) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = if turn == 0 {
        vec![
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "calc__add", "arguments": "{\"a\":2,\"b\":3}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ]
    } else {
        vec![
            chunk(
                json!({"role": "assistant", "content": "2 + 3 = 5"}),
                Value::Null,
            ),
            chunk(json!({}), json!("stop")),
        ]
    };
    chunks.push(
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
        "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}}),
    );
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// The model server; returns its base URL and the `traceparent` of each request.
pub async fn model_server() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |headers: HeaderMap| {
            let log = log.clone();
            async move {
                let parent = headers
                    .get("traceparent")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let turn = {
                    let mut log = log.lock().unwrap();
                    log.push(parent);
                    log.len() - 1
                };
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from(completion(turn)))
                    .unwrap()
            }
        }),
    );
    (serve_app(app).await, seen)
}

/// Serves `app` on a free port; returns its base URL.
pub async fn serve_app(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// Starts `weft serve` on `agent`, over a store in `dir`, exporting its
/// traces to `otlp_url` (batched every 100 ms), with `env` set; returns it
/// and its address.
pub fn serve(dir: &Path, agent: &Path, otlp_url: &str, env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("serve")
        .arg("--agent")
        .arg(agent)
        .arg("--db")
        .arg(dir.join("w.db"))
        .args(["--addr", "127.0.0.1:0"])
        .env("WEFT_TOKENS", format!("acme={TENANT_TOKEN}"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_url)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = crate::common::served_address(&mut stderr);
    // Keep draining the logs so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, addr)
}

/// Stops the server as ctrl-c does, so it flushes its traces, and waits.
pub fn interrupt(mut child: Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "serve did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the spans the receiver got satisfy `enough`; returns them.
pub async fn wait_for_spans(received: &Received, enough: impl Fn(&[Span]) -> bool) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let spans = received.lock().unwrap().clone();
        if enough(&spans) {
            return spans;
        }
        assert!(Instant::now() < deadline, "spans never arrived: {spans:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A span attribute rendered as text.
pub fn attr(span: &Span, key: &str) -> Option<String> {
    value(&span.attributes, key)
}

/// The attribute `key` of `attributes` (a span's or an event's) rendered as text.
pub fn value(attributes: &[KeyValue], key: &str) -> Option<String> {
    let kv = attributes.iter().find(|kv| kv.key == key)?;
    Some(match kv.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => s.clone(),
        AnyValue::IntValue(i) => i.to_string(),
        AnyValue::BoolValue(b) => b.to_string(),
        AnyValue::DoubleValue(d) => d.to_string(),
        other => format!("{other:?}"),
    })
}

/// The typed value of the span attribute `key`.
pub fn typed<'a>(span: &'a Span, key: &str) -> Option<&'a AnyValue> {
    let kv = span.attributes.iter().find(|kv| kv.key == key)?;
    kv.value.as_ref()?.value.as_ref()
}

/// The span attribute `key` when it is an array of strings.
pub fn strings(span: &Span, key: &str) -> Option<Vec<String>> {
    let AnyValue::ArrayValue(array) = typed(span, key)? else {
        return None;
    };
    array
        .values
        .iter()
        .map(|v| match v.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

/// Fails unless no span and no event carries an attribute the
/// tracing bridge adds of its own: `target`, `level`, `code.*`,
/// `thread.*`, busy and idle times.
pub fn assert_no_bridge_attributes(spans: &[Span]) {
    for span in spans {
        let events = span.events.iter().flat_map(|e| &e.attributes);
        for kv in span.attributes.iter().chain(events) {
            let key = kv.key.as_str();
            assert!(
                !["target", "level", "busy_ns", "idle_ns"].contains(&key)
                    && !key.starts_with("code.")
                    && !key.starts_with("thread."),
                "span {} carries `{key}`",
                span.name
            );
        }
    }
}
