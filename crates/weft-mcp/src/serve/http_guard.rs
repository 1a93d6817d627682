//! The guard in front of rmcp's streamable HTTP service: a POST whose body
//! is declared JSON but does not parse gets JSON-RPC's parse error (HTTP
//! 400, `id` null) instead of rmcp's 415, and a JSON body that is no
//! JSON-RPC message gets invalid request (HTTP 400). Other requests, and
//! bodies of another content type (which rmcp answers with 415), pass as
//! they are.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use rmcp::ErrorData;
use rmcp::model::JsonRpcVersion2_0;
use serde::Serialize;
use serde::de::IgnoredAny;

/// The largest body read (rmcp's own limit).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// A JSON-RPC error for a message whose id could not be read.
#[derive(Serialize)]
struct IdlessError {
    jsonrpc: JsonRpcVersion2_0,
    /// Always `null`, as JSON-RPC asks when the id is unknown.
    id: (),
    error: ErrorData,
}

/// Checks a JSON POST's body parses before rmcp reads it.
pub async fn guard(request: Request, next: Next) -> Response {
    if request.method() != Method::POST || !declares_json(request.headers()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match collect(body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    if serde_json::from_slice::<IgnoredAny>(&body).is_err() {
        return idless_error(ErrorData::parse_error("Parse error: invalid JSON", None));
    }
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        // The content type is JSON and so is the body: rmcp found no message in it.
        return idless_error(ErrorData::invalid_request(
            "Invalid request: not a JSON-RPC message",
            None,
        ));
    }
    response
}

/// Whether the content type is `application/json` (parameters aside).
fn declares_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The whole body, copied only when it came in more than one chunk.
async fn collect(body: Body) -> Result<Bytes, Response> {
    let mut stream = body.into_data_stream();
    let mut first: Option<Bytes> = None;
    let mut rest: Vec<u8> = Vec::new();
    let mut held = 0usize;
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return Err((StatusCode::BAD_REQUEST, "Bad Request: unreadable body").into_response());
        };
        if chunk.len() > MAX_BODY_BYTES.saturating_sub(held) {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {MAX_BODY_BYTES} bytes"),
            )
                .into_response());
        }
        held += chunk.len();
        match &first {
            None => first = Some(chunk),
            Some(head) => {
                if rest.is_empty() {
                    rest.extend_from_slice(head);
                }
                rest.extend_from_slice(&chunk);
            }
        }
    }
    Ok(match first {
        Some(_) if !rest.is_empty() => Bytes::from(rest),
        Some(head) => head,
        None => Bytes::new(),
    })
}

fn idless_error(error: ErrorData) -> Response {
    let body = serde_json::to_vec(&IdlessError {
        jsonrpc: JsonRpcVersion2_0,
        id: (),
        error,
    })
    .unwrap_or_default();
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}
