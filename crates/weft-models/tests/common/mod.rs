//! Shared test helpers: the recorded provider fixtures, a local HTTP server
//! replaying scripted responses chunk by chunk, and checks of a decoded
//! summary against a fixture's `*.expected.json`.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use axum::routing::post;
use serde_json::Value;
use weft_core::message::Thinking;
use weft_core::model::{ModelSummary, StopReason};

/// The recorded provider fixtures, kept in this crate (`fixtures/providers`,
/// with their provenance in its `SOURCES.md`).
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/providers");

/// One `application/vnd.amazon.eventstream` frame: string headers
/// (`:content-type: application/json` added) and a JSON payload.
pub fn eventstream_frame(headers: &[(&str, &str)], payload: &Value) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let string = |s: &str| HeaderValue::String(s.to_owned().into());
    let mut m = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(":content-type", string("application/json")));
    for (name, value) in headers {
        m = m.add_header(Header::new((*name).to_owned(), string(value)));
    }
    let mut out = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&m, &mut out).unwrap();
    out
}

/// The Anthropic stream fixtures that decode to a complete response.
pub const ANTHROPIC_OK: &[&str] = &[
    "a1_text_basic",
    "a2_tool_use_sdk",
    "a3_tool_use_docs",
    "a4_thinking_tool_use_captured",
    "a5_thinking_docs",
    "a6_tool_use_truncated_max_tokens",
];

/// A fixture file's bytes.
pub fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{path}")).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

/// A fixture's `expected` object.
pub fn expected(path: &str) -> Value {
    let v: Value = serde_json::from_slice(&fixture(path)).unwrap();
    v["expected"].clone()
}

/// The text the text deltas among `chunks` spell.
pub fn streamed_text(chunks: &[weft_core::model::StreamChunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            weft_core::model::StreamChunk::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Splits `bytes` into chunks of cycling sizes, so boundaries fall mid-line.
pub fn split(bytes: &[u8], sizes: &[usize]) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].min(rest.len());
        out.push(Bytes::copy_from_slice(&rest[..n]));
        rest = &rest[n..];
        i += 1;
    }
    out
}

/// One scripted HTTP response.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Bytes>,
    /// Abort the connection after the chunks instead of ending the body.
    pub reset: bool,
    /// Wait this long before the last chunk.
    pub stall: Option<Duration>,
    /// Wait this long before sending the response headers.
    pub delay: Option<Duration>,
}

impl Reply {
    /// A 200 SSE response sent in `chunks`.
    pub fn sse(chunks: Vec<Bytes>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
            reset: false,
            stall: None,
            delay: None,
        }
    }

    /// A JSON response with `status`.
    pub fn json(status: u16, body: Vec<u8>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Bytes::from(body)],
            reset: false,
            stall: None,
            delay: None,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// What the server saw: request bodies and headers, in order.
#[derive(Default)]
pub struct Seen {
    pub bodies: Vec<Value>,
    pub raw_bodies: Vec<String>,
    pub headers: Vec<HeaderMap>,
    /// Each request's path and query.
    pub uris: Vec<String>,
    pub times: Vec<std::time::Instant>,
}

/// A local server replaying `replies` in order on every POST path.
pub struct Server {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Seen>>,
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (q, s) = (queue.clone(), seen.clone());
        let handler = move |headers: HeaderMap, uri: Uri, body: Bytes| {
            let (q, s) = (q.clone(), s.clone());
            async move {
                {
                    let mut s = s.lock().unwrap();
                    s.raw_bodies
                        .push(String::from_utf8_lossy(&body).into_owned());
                    s.bodies
                        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                    s.headers.push(headers);
                    s.uris.push(uri.to_string());
                    s.times.push(std::time::Instant::now());
                }
                let reply = q
                    .lock()
                    .unwrap()
                    .pop_front()
                    .expect("no scripted reply left");
                if let Some(d) = reply.delay {
                    tokio::time::sleep(d).await;
                }
                respond(reply)
            }
        };
        let app = Router::new().fallback(post(handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { addr, seen }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn respond(reply: Reply) -> Response {
    let stream = async_stream(reply.chunks, reply.reset, reply.stall);
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = StatusCode::from_u16(reply.status).unwrap();
    for (k, v) in reply.headers {
        resp.headers_mut().insert(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            axum::http::HeaderValue::from_str(&v).unwrap(),
        );
    }
    resp
}

fn async_stream(
    chunks: Vec<Bytes>,
    reset: bool,
    stall: Option<Duration>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let n = chunks.len();
    futures_util::stream::unfold(
        (chunks.into_iter(), 0usize),
        move |(mut it, i)| async move {
            if let (Some(d), true) = (stall, i + 1 == n) {
                tokio::time::sleep(d).await;
            }
            if i > 0 {
                // Let each chunk go out on its own so the client sees the split.
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            match it.next() {
                Some(c) => Some((Ok(c), (it, i + 1))),
                None if reset && i == n => Some((Err(std::io::Error::other("reset")), (it, i + 1))),
                None => None,
            }
        },
    )
}

/// The provider family of a fixture, for mapping its stop field.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Api {
    Anthropic,
    Chat,
    Responses,
    Gemini,
}

/// Asserts `summary` matches `expected` exactly on text, tool calls
/// (id, name, raw arguments), stop reason, usage and, for Anthropic, thinking.
pub fn check_summary(api: Api, summary: &ModelSummary, expected: &Value) {
    assert_eq!(
        summary.text,
        expected["text"].as_str().unwrap_or(""),
        "text"
    );
    let calls: Vec<(String, String, String)> = summary
        .tool_calls
        .iter()
        .map(|c| (c.id.to_string(), c.name.clone(), c.arguments.clone()))
        .collect();
    let want: Vec<(String, String, String)> = expected["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let id = c
                .get("call_id")
                .unwrap_or(&c["id"])
                .as_str()
                .unwrap()
                .to_owned();
            let raw = match c.get("arguments_raw") {
                Some(Value::String(s)) => s.clone(),
                _ => c["arguments"].to_string(),
            };
            (id, c["name"].as_str().unwrap().to_owned(), raw)
        })
        .collect();
    if expected["tool_calls"][0].get("arguments_raw").is_some() {
        assert_eq!(calls, want, "tool calls");
    } else {
        // Non-streaming Anthropic: the raw input is the body's JSON object; compare parsed.
        assert_eq!(calls.len(), want.len());
        for (got, w) in calls.iter().zip(&want) {
            assert_eq!((&got.0, &got.1), (&w.0, &w.1));
            let g: Value = serde_json::from_str(&got.2).unwrap();
            let w: Value = serde_json::from_str(&w.2).unwrap();
            assert_eq!(g, w);
        }
    }
    let stop = match api {
        Api::Anthropic => expected["stop_reason"].as_str().map(|s| s.to_owned()),
        Api::Chat => expected["finish_reason"].as_str().map(|s| match s {
            "stop" => "end_turn".to_owned(),
            "tool_calls" => "tool_use".to_owned(),
            other => other.to_owned(),
        }),
        Api::Gemini => expected["finish_reason"].as_str().map(|s| match s {
            "STOP" if summary.tool_calls.is_empty() => "end_turn".to_owned(),
            "STOP" => "tool_use".to_owned(),
            "MAX_TOKENS" => "max_tokens".to_owned(),
            other => other.to_ascii_lowercase(),
        }),
        Api::Responses => expected["status"].as_str().map(|s| {
            assert_eq!(s, "completed");
            if summary.tool_calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            }
            .to_owned()
        }),
    };
    let got_stop = summary.stop_reason.as_ref().map(|r| {
        serde_json::to_value(r)
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    });
    assert_eq!(got_stop, stop, "stop reason");
    assert_eq!(
        summary.usage.input_tokens,
        expected["usage"]["input_tokens"].as_u64().unwrap_or(0),
        "input tokens"
    );
    assert_eq!(
        summary.usage.output_tokens,
        expected["usage"]["output_tokens"].as_u64().unwrap_or(0),
        "output tokens"
    );
    if api == Api::Anthropic {
        let want: Vec<Thinking> = expected["content"]
            .as_array()
            .map(|c| c.as_slice())
            .unwrap_or(&[])
            .iter()
            .filter(|b| b["type"] == "thinking")
            .map(|b| Thinking::Text {
                text: b["thinking"].as_str().unwrap().to_owned(),
                signature: b["signature"].as_str().map(str::to_owned),
            })
            .collect();
        assert_eq!(summary.thinking, want, "thinking");
    }
    let _ = StopReason::EndTurn;
}
