//! What the trace tests share: an OTLP/HTTP receiver started by the test
//! (protobuf, decoded with opentelemetry-proto), `weft serve` exporting to
//! it, and readers of the spans it got.

// Each test binary uses a part of the harness.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Response, header};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

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
