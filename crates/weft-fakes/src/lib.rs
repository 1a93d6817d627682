//! Strict provider fakes: local HTTP servers that speak a model provider's
//! real wire format (streamed SSE answers, real error bodies and statuses)
//! and reject every request that breaks one of the provider's documented
//! request rules, the way the real service does. weft's end-to-end tests
//! run the real `weft` binary against them and require zero rejections.
//!
//! One module per API owns its rules and its stream format:
//! [`anthropic`] (Messages), [`chat`] (Chat Completions, and compatible
//! servers such as llama.cpp's, which refuse `null` content),
//! [`responses`] (Responses), [`gemini`] (Gemini's Generative Language
//! API), [`vertex`] (Gemini on Vertex AI: a bearer token, a project's
//! location) and [`bedrock`] (Bedrock's Converse, SigV4 checked). Each turns a request into a [`View`] (or a
//! [`Rejection`]); [`decide`] picks the answer from the view alone, so a
//! fake plays any scenario without a script: call the tool until the
//! [`Behaviour`] says enough, consult the advisor once when asked to, and
//! answer in text when tools are forbidden (a finalizing turn) or absent
//! (a nested advisor call).

pub mod anthropic;
pub mod bedrock;
pub mod chat;
pub mod gemini;
pub mod responses;
mod server;
mod sse;
pub mod vertex;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

pub use server::{Fake, spawn};

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
    /// Google Gemini (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`).
    Gemini,
    /// Gemini on Vertex AI (`POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent?alt=sse`),
    /// with a bearer token.
    Vertex,
    /// Amazon Bedrock Converse (`POST /model/{modelId}/converse-stream`,
    /// `POST /model/{modelId}/converse`), SigV4 signed.
    Bedrock,
}

impl Api {
    /// The path the API is served at (the route: Gemini's names the model
    /// and the method in its last segment, `{model}:{method}`).
    pub fn path(self) -> &'static str {
        match self {
            Api::Anthropic => "/v1/messages",
            Api::OpenAiChat | Api::Compat => "/v1/chat/completions",
            Api::OpenAiResponses => "/v1/responses",
            Api::Gemini => "/v1beta/models/{target}",
            Api::Vertex => {
                "/v1/projects/{project}/locations/{location}/publishers/google/models/{target}"
            }
            Api::Bedrock => "/model/{model}/{method}",
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
    /// Reasons before each tool call: a signed thinking block (Anthropic),
    /// an encrypted reasoning item (Responses) or a thought summary
    /// (Gemini, whose calls are always signed), which the next request
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
    /// The `x-amzn-ErrorType` header (Bedrock names its errors there).
    pub error_type: Option<&'static str>,
}

impl Rejection {
    /// The error message inside the body (or inside its first element,
    /// for Vertex's array of errors).
    pub fn message(&self) -> &str {
        let body = self.body.get(0).unwrap_or(&self.body);
        body["error"]["message"]
            .as_str()
            .or_else(|| body["message"].as_str())
            .unwrap_or_default()
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
            error_type: None,
        },
        Api::OpenAiChat | Api::OpenAiResponses => Rejection {
            status: 400,
            body: serde_json::json!({"error": {"message": message, "type": "invalid_request_error",
                "param": if param.is_empty() { Value::Null } else { Value::from(param) }, "code": null}}),
            error_type: None,
        },
        Api::Gemini | Api::Vertex => gemini::error(400, "INVALID_ARGUMENT", message),
        Api::Bedrock => bedrock::error(400, "ValidationException", message),
        Api::Compat => Rejection {
            status: 500,
            body: serde_json::json!({"error": {"message": message, "type": "internal_server_error",
                "param": null, "code": null}}),
            error_type: None,
        },
    }
}
