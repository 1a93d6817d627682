//! The HTTP server of a fake: its route, the request count (and the
//! request held back to stall a run), and each request checked and answered
//! by its API's module, a refusal recorded in the [`Stats`]. Bedrock's
//! requests have their signature checked before anything else, Vertex's
//! their token and path.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Response, StatusCode, Uri, header};
use axum::routing::post;
use serde_json::Value;

use crate::{
    Api, Behaviour, Issued, Rejection, Stats, anthropic, bedrock, chat, decide, gemini, invalid,
    responses, vertex,
};

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
        post(move |headers: HeaderMap, uri: Uri, body: Bytes| {
            let state = state.clone();
            async move {
                let n = state.stats.requests.fetch_add(1, Ordering::SeqCst) + 1;
                if state.behaviour.stall == Some(n) {
                    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                }
                let request = Request {
                    headers: &headers,
                    uri: &uri,
                    body: &body,
                };
                handle(&state, &request, n)
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

/// One request as the fake sees it.
struct Request<'a> {
    headers: &'a HeaderMap,
    uri: &'a Uri,
    body: &'a [u8],
}

/// An answer: its content type and body.
type Answer = (&'static str, Vec<u8>);

fn handle(state: &State, request: &Request<'_>, n: usize) -> Response<Body> {
    let signed = match state.api {
        Api::Bedrock => bedrock::sigv4::verify(request.headers, request.uri, request.body),
        Api::Vertex => {
            let auth = request.headers.get(header::AUTHORIZATION);
            vertex::check_token(auth.and_then(|a| a.to_str().ok()))
                .and_then(|()| vertex::check_path(request.uri.path()))
        }
        _ => Ok(()),
    };
    let outcome = signed
        .and_then(|()| {
            serde_json::from_slice::<Value>(request.body)
                .map_err(|e| invalid_json(state.api, &e.to_string()))
        })
        .and_then(|req| {
            if let Ok(mut bodies) = state.stats.bodies.lock() {
                bodies.push(req.clone());
            }
            answer(state, request, &req, n)
        });
    match outcome {
        Ok((content_type, body)) => Response::builder()
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(body)),
        Err(r) => {
            if let Ok(mut rejections) = state.stats.rejections.lock() {
                rejections.push(r.message().to_owned());
            }
            let mut res = Response::builder()
                .status(StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST))
                .header(header::CONTENT_TYPE, "application/json");
            if let Some(kind) = r.error_type {
                res = res.header(
                    "x-amzn-ErrorType",
                    format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
                );
            }
            res.body(Body::from(r.body.to_string()))
        }
    }
    .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Checks `req` and streams the answer to it, as request `n`.
fn answer(
    state: &State,
    request: &Request<'_>,
    req: &Value,
    n: usize,
) -> Result<Answer, Rejection> {
    if state.api == Api::Bedrock {
        return answer_bedrock(state, request, req, n);
    }
    answer_sse(state, request, req, n).map(|s| ("text/event-stream", s.into_bytes()))
}

/// Bedrock: `converse-stream` answered in event stream frames, `converse` in JSON.
fn answer_bedrock(
    state: &State,
    request: &Request<'_>,
    req: &Value,
    n: usize,
) -> Result<Answer, Rejection> {
    let b = &state.behaviour;
    let view = bedrock::check(req, &state.issued)?;
    let reply = decide(b, &view);
    match request.uri.path().rsplit('/').next() {
        Some("converse-stream") => Ok((
            "application/vnd.amazon.eventstream",
            bedrock::wire::stream(&reply, b.thinking, n, &state.issued),
        )),
        Some("converse") => Ok((
            "application/json",
            bedrock::wire::whole(&reply, b.thinking, n, &state.issued)
                .to_string()
                .into_bytes(),
        )),
        _ => Err(bedrock::error(
            404,
            "UnknownOperationException",
            "UnknownOperationException",
        )),
    }
}

/// The APIs answering in SSE.
fn answer_sse(
    state: &State,
    request: &Request<'_>,
    req: &Value,
    n: usize,
) -> Result<String, Rejection> {
    let b = &state.behaviour;
    match state.api {
        Api::Bedrock => Err(invalid(state.api, "", "not an SSE API")),
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
        Api::Gemini | Api::Vertex => {
            let view = if state.api == Api::Vertex {
                vertex::check(req, &state.issued).map_err(vertex::streamed)?
            } else {
                let key = request.headers.get("x-goog-api-key");
                gemini::check_key(key.and_then(|k| k.to_str().ok()))?;
                gemini::check(req, &state.issued)?
            };
            let target = request.uri.path().rsplit('/').next().unwrap_or_default();
            let streamed = target.ends_with(":streamGenerateContent")
                && request
                    .uri
                    .query()
                    .is_some_and(|q| q.split('&').any(|p| p == "alt=sse"));
            if !streamed {
                return Err(invalid(
                    state.api,
                    "",
                    "this fake answers `models/{model}:streamGenerateContent?alt=sse` only",
                ));
            }
            Ok(gemini::stream(
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
