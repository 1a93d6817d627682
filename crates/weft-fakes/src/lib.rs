//! Strict provider fakes: local HTTP servers that speak a model provider's
//! real wire format (streamed SSE answers, real error bodies and statuses)
//! and reject every request that breaks one of the provider's documented
//! request rules, the way the real service does. weft's end-to-end tests
//! run the real `weft` binary against them and require zero rejections.
//!
//! One module per API owns its rules and its stream format:
//! [`anthropic`] (Messages), [`chat`] (Chat Completions, and compatible
//! servers such as llama.cpp's, which refuse `null` content) and
//! [`responses`] (Responses). Each turns a request into a [`View`] (or a
//! [`Rejection`]); [`decide`] picks the answer from the view alone, so a
//! fake plays any scenario without a script: call the tool until the
//! [`Behaviour`] says enough, consult the advisor once when asked to, and
//! answer in text when tools are forbidden (a finalizing turn) or absent
//! (a nested advisor call).

pub mod anthropic;
pub mod chat;
pub mod responses;
mod sse;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Response, StatusCode, header};
use axum::routing::post;
use serde_json::Value;

/// The API a fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    OpenAiChat,
    /// A compatible server (llama.cpp's): Chat Completions, and content
    /// must be a string.
    Compat,
    /// OpenAI Responses (`POST /v1/responses`).
    OpenAiResponses,
}

impl Api {
    /// The path the API is served at.
    pub fn path(self) -> &'static str {
        match self {
            Api::Anthropic => "/v1/messages",
            Api::OpenAiChat | Api::Compat => "/v1/chat/completions",
            Api::OpenAiResponses => "/v1/responses",
        }
    }
}

/// What the fake model does.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// The tool it calls (its provider-encoded name, `calc__add`).
    pub tool: String,
    /// The arguments it calls the tool with.
    pub args: Value,
    /// How many times it calls the tool before answering; `usize::MAX`
    /// calls it whenever tools are allowed (a run that reaches a cap).
    pub rounds: usize,
    /// Calls the `advisor` tool once, after the first tool result.
    pub advisor: bool,
    /// Reasons before each tool call: a signed thinking block (Anthropic)
    /// or an encrypted reasoning item (Responses), which the next request
    /// must send back unchanged.
    pub thinking: bool,
    /// The request (counted from 1) whose answer is held back for a minute:
    /// a process killed meanwhile dies in the middle of a model call.
    pub stall: Option<usize>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            tool: "calc__add".into(),
            args: serde_json::json!({"a": 2, "b": 3}),
            rounds: 1,
            advisor: false,
            thinking: false,
            stall: None,
        }
    }
}

/// What a request says, as far as deciding the answer goes.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The tools the request defines.
    pub tools: Vec<String>,
    /// Whether the request forbids tool calls (`tool_choice` none).
    pub forbidden: bool,
    /// The names of the tool calls in the transcript, in order.
    pub calls: Vec<String>,
    /// How many tool results the transcript holds.
    pub results: usize,
}

/// The fake model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Text.
    Text(String),
    /// One tool call.
    Call {
        /// The tool's (provider-encoded) name.
        name: String,
        /// Its arguments.
        args: Value,
    },
}

/// The answer of a nested call with no tools (the advisor's).
pub const ADVICE: &str = "Add the numbers first, then answer.";
/// The answer of a finalizing turn (tools defined, their use forbidden).
pub const FINAL: &str = "I have to stop here: 2 + 3 = 5.";
/// The answer once the tool has been called enough.
pub const ANSWER: &str = "2 + 3 = 5";

/// The answer to a request: see the crate docs.
pub fn decide(b: &Behaviour, v: &View) -> Reply {
    if v.tools.is_empty() {
        return Reply::Text(ADVICE.into());
    }
    if v.forbidden {
        return Reply::Text(FINAL.into());
    }
    let called = |name: &str| v.calls.iter().filter(|c| *c == name).count();
    if b.advisor
        && v.tools.iter().any(|t| t == "advisor")
        && called("advisor") == 0
        && v.results > 0
    {
        return Reply::Call {
            name: "advisor".into(),
            args: serde_json::json!({"question": "Is 5 the right answer?"}),
        };
    }
    if called(&b.tool) < b.rounds && v.tools.contains(&b.tool) {
        return Reply::Call {
            name: b.tool.clone(),
            args: b.args.clone(),
        };
    }
    Reply::Text(ANSWER.into())
}

/// A request the fake refused, as the provider answers it.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// The HTTP status.
    pub status: u16,
    /// The error body (the provider's JSON error object).
    pub body: Value,
}

impl Rejection {
    /// The error message inside the body.
    pub fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or_default()
    }
}

/// Reasoning the fake issued and expects back unchanged: (kind, id) to
/// (text, signature or encrypted content).
pub(crate) type Issued = Mutex<HashMap<String, (String, String)>>;

/// What a fake has seen.
#[derive(Debug, Default)]
pub struct Stats {
    requests: AtomicUsize,
    rejections: Mutex<Vec<String>>,
    bodies: Mutex<Vec<Value>>,
}

impl Stats {
    /// How many requests arrived.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// The messages of the requests refused, in order.
    pub fn rejections(&self) -> Vec<String> {
        self.rejections
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Every request body, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

/// A running fake.
pub struct Fake {
    /// Its root URL (`http://127.0.0.1:port`).
    pub url: String,
    /// What it has seen.
    pub stats: Arc<Stats>,
}

struct State {
    api: Api,
    behaviour: Behaviour,
    stats: Arc<Stats>,
    issued: Issued,
}

/// Starts a fake of `api` playing `behaviour` on a free loopback port.
pub async fn spawn(api: Api, behaviour: Behaviour) -> std::io::Result<Fake> {
    let stats = Arc::new(Stats::default());
    let state = Arc::new(State {
        api,
        behaviour,
        stats: stats.clone(),
        issued: Mutex::new(HashMap::new()),
    });
    let app = Router::new().route(
        api.path(),
        post(move |body: Bytes| {
            let state = state.clone();
            async move {
                let n = state.stats.requests.fetch_add(1, Ordering::SeqCst) + 1;
                if state.behaviour.stall == Some(n) {
                    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                }
                handle(&state, &body, n)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(Fake {
        url: format!("http://{addr}"),
        stats,
    })
}

fn handle(state: &State, body: &[u8], n: usize) -> Response<Body> {
    let outcome = serde_json::from_slice::<Value>(body)
        .map_err(|e| invalid_json(state.api, &e.to_string()))
        .and_then(|req| {
            if let Ok(mut bodies) = state.stats.bodies.lock() {
                bodies.push(req.clone());
            }
            answer(state, &req, n)
        });
    match outcome {
        Ok(stream) => Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from(stream)),
        Err(r) => {
            if let Ok(mut rejections) = state.stats.rejections.lock() {
                rejections.push(r.message().to_owned());
            }
            Response::builder()
                .status(StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(r.body.to_string()))
        }
    }
    .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Checks `req` and streams the answer to it, as request `n`.
fn answer(state: &State, req: &Value, n: usize) -> Result<String, Rejection> {
    let b = &state.behaviour;
    match state.api {
        Api::Anthropic => {
            let view = anthropic::check(req, &state.issued)?;
            require_stream(state.api, req)?;
            Ok(anthropic::stream(
                &decide(b, &view),
                b.thinking,
                n,
                &state.issued,
            ))
        }
        Api::OpenAiChat | Api::Compat => {
            let view = chat::check(req, state.api == Api::Compat)?;
            require_stream(state.api, req)?;
            Ok(chat::stream(&decide(b, &view), n))
        }
        Api::OpenAiResponses => {
            let view = responses::check(req, &state.issued)?;
            require_stream(state.api, req)?;
            Ok(responses::stream(
                &decide(b, &view),
                b.thinking,
                n,
                &state.issued,
            ))
        }
    }
}

/// The fakes answer streamed requests only (weft streams by default).
fn require_stream(api: Api, req: &Value) -> Result<(), Rejection> {
    if req["stream"] == Value::Bool(true) {
        return Ok(());
    }
    Err(invalid(
        api,
        "stream",
        "this fake answers streamed requests only (`stream: true`)",
    ))
}

fn invalid_json(api: Api, detail: &str) -> Rejection {
    invalid(
        api,
        "",
        &format!("The request body is not valid JSON: {detail}"),
    )
}

/// The tools an OpenAI request defines (each named by `name`), and whether
/// it forbids their use; `tool_choice` without tools is refused, as both
/// OpenAI APIs refuse it.
pub(crate) fn openai_tools(
    api: Api,
    req: &Value,
    name: impl Fn(&Value) -> &Value,
) -> Result<View, Rejection> {
    let tools: Vec<String> = match &req["tools"] {
        Value::Null => Vec::new(),
        Value::Array(t) => t
            .iter()
            .map(|t| name(t).as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => {
            return Err(invalid(
                api,
                "tools",
                "Invalid type for 'tools': expected an array.",
            ));
        }
    };
    if !req["tool_choice"].is_null() && tools.is_empty() {
        return Err(invalid(
            api,
            "tool_choice",
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        ));
    }
    Ok(View {
        forbidden: req["tool_choice"] == "none",
        tools,
        ..View::default()
    })
}

/// The provider's "invalid request" error: status 400 (500 for a compatible
/// server, which fails inside its request handling) with its error body.
pub(crate) fn invalid(api: Api, param: &str, message: &str) -> Rejection {
    match api {
        Api::Anthropic => Rejection {
            status: 400,
            body: serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
        },
        Api::OpenAiChat | Api::OpenAiResponses => Rejection {
            status: 400,
            body: serde_json::json!({"error": {"message": message, "type": "invalid_request_error",
                "param": if param.is_empty() { Value::Null } else { Value::from(param) }, "code": null}}),
        },
        Api::Compat => Rejection {
            status: 500,
            body: serde_json::json!({"error": {"message": message, "type": "internal_server_error",
                "param": null, "code": null}}),
        },
    }
}
