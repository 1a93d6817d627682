//! The test authorization server's routes: metadata, registration,
//! `/authorize` and `/token`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

use super::{AuthState, Grant, clients};

type Shared = State<Arc<AuthState>>;

pub fn router(state: Arc<AuthState>) -> Router {
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(state)
}

async fn resource_metadata(State(s): Shared) -> Response {
    if s.legacy_issuer.load(Ordering::SeqCst) || s.no_metadata.load(Ordering::SeqCst) {
        return StatusCode::NOT_FOUND.into_response();
    }
    if s.broken_metadata.load(Ordering::SeqCst) {
        return Json(json!({"unexpected": true})).into_response();
    }
    Json(json!({
        "resource": s.mcp_url(),
        "authorization_servers": [s.base],
        "scopes_supported": ["tools"],
        "bearer_methods_supported": ["header"],
    }))
    .into_response()
}

async fn server_metadata(State(s): Shared) -> Response {
    if s.no_metadata.load(Ordering::SeqCst) {
        return StatusCode::NOT_FOUND.into_response();
    }
    if s.broken_metadata.load(Ordering::SeqCst) {
        let json = [(header::CONTENT_TYPE, "application/json")];
        return (StatusCode::OK, json, "{not json").into_response();
    }
    let mut metadata = json!({
        "issuer": s.base,
        "authorization_endpoint": format!("{}/authorize", s.base),
        "token_endpoint": format!("{}/token", s.base),
        "registration_endpoint": format!("{}/register", s.base),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    });
    if s.legacy_issuer.load(Ordering::SeqCst) {
        metadata["issuer"] = json!(format!("{}/oauth", s.base));
    }
    if s.preregistered.lock().unwrap().is_some() {
        metadata
            .as_object_mut()
            .unwrap()
            .remove("registration_endpoint");
        metadata["grant_types_supported"] =
            json!(["authorization_code", "refresh_token", "client_credentials"]);
        metadata["token_endpoint_auth_methods_supported"] =
            json!(["client_secret_basic", "private_key_jwt"]);
        metadata["token_endpoint_auth_signing_alg_values_supported"] = json!(["ES256"]);
    }
    Json(metadata).into_response()
}

pub fn oauth_error(status: StatusCode, error: &str) -> Response {
    (
        status,
        Json(json!({"error": error, "error_description": format!("test server: {error}")})),
    )
        .into_response()
}

async fn register(State(s): Shared, Json(body): Json<Value>) -> Response {
    if s.refuse_registration.load(Ordering::SeqCst) || s.preregistered.lock().unwrap().is_some() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_client_metadata");
    }
    let redirect_uris: Vec<String> = body["redirect_uris"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u.as_str().map(str::to_owned))
        .collect();
    let all_loopback = redirect_uris
        .iter()
        .all(|u| u.starts_with("http://127.0.0.1:"));
    if redirect_uris.is_empty() || !all_loopback || body["token_endpoint_auth_method"] != "none" {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri");
    }
    s.registrations.fetch_add(1, Ordering::SeqCst);
    let client_id = s.fresh("client");
    s.clients
        .lock()
        .unwrap()
        .insert(client_id.clone(), redirect_uris.clone());
    (
        StatusCode::CREATED,
        Json(json!({"client_id": client_id, "redirect_uris": redirect_uris, "client_name": body["client_name"]})),
    )
        .into_response()
}

/// Approves at once: redirects to the registered redirect URI with a code.
async fn authorize(State(s): Shared, Query(q): Query<HashMap<String, String>>) -> Response {
    let param = |k: &str| q.get(k).cloned().unwrap_or_default();
    let preregistered =
        s.preregistered.lock().unwrap().as_ref().is_some_and(|p| {
            p.client_id == param("client_id") && is_loopback(&param("redirect_uri"))
        });
    let registered = preregistered
        || s.clients
            .lock()
            .unwrap()
            .get(&param("client_id"))
            .is_some_and(|uris| uris.contains(&param("redirect_uri")));
    if !registered
        || param("response_type") != "code"
        || param("code_challenge_method") != "S256"
        || param("code_challenge").is_empty()
        || param("state").is_empty()
        || param("resource") != s.mcp_url()
    {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    s.authorizations.fetch_add(1, Ordering::SeqCst);
    s.requested_scopes.lock().unwrap().push(param("scope"));
    let code = s.fresh("code");
    s.codes.lock().unwrap().insert(
        code.clone(),
        Grant {
            client_id: param("client_id"),
            redirect_uri: param("redirect_uri"),
            challenge: param("code_challenge"),
            scopes: param("scope")
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        },
    );
    let state = if s.wrong_state.load(Ordering::SeqCst) {
        "not-the-state-sent".to_owned()
    } else {
        param("state")
    };
    let mut target = rmcp_reqwest::Url::parse(&param("redirect_uri")).unwrap();
    target
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &state);
    (StatusCode::FOUND, [(header::LOCATION, target.to_string())]).into_response()
}

async fn token(
    State(s): Shared,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let param = |k: &str| form.get(k).cloned().unwrap_or_default();
    if param("resource") != s.mcp_url() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_target");
    }
    let Some(client) = clients::authenticate(&s, &headers, &form) else {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    };
    match param("grant_type").as_str() {
        "authorization_code" => {
            if s.refuse_code.load(Ordering::SeqCst) {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            let Some(grant) = s.codes.lock().unwrap().remove(&param("code")) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let digest = sha2::Sha256::digest(param("code_verifier").as_bytes());
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            if challenge != grant.challenge
                || grant.client_id != client.id
                || grant.redirect_uri != param("redirect_uri")
            {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            s.code_grants.fetch_add(1, Ordering::SeqCst);
            issue(&s, grant.scopes)
        }
        "refresh_token" => {
            let known = s.refresh.lock().unwrap().remove(&param("refresh_token"));
            if s.refuse_refresh.load(Ordering::SeqCst) || !known {
                s.refused_refreshes.fetch_add(1, Ordering::SeqCst);
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            s.refreshes.fetch_add(1, Ordering::SeqCst);
            // The old access tokens stop working: only a refreshed token passes from now on.
            s.access.lock().unwrap().clear();
            issue(&s, Vec::new())
        }
        "client_credentials" => clients::client_credentials(&s, &client, &form),
        _ => oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    }
}

/// A new access and refresh token, for `scopes` (`tools` when none).
pub fn issue(s: &AuthState, mut scopes: Vec<String>) -> Response {
    if scopes.is_empty() {
        scopes.push("tools".to_owned());
    }
    let access = s.fresh("access");
    let refresh = s.fresh("refresh");
    s.access
        .lock()
        .unwrap()
        .insert(access.clone(), scopes.clone());
    s.refresh.lock().unwrap().insert(refresh.clone());
    Json(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": s.expires_in,
        "refresh_token": refresh,
        "scope": scopes.join(" "),
    }))
    .into_response()
}

/// A loopback redirect URI: any port matches (RFC 8252 §7.3).
fn is_loopback(uri: &str) -> bool {
    rmcp_reqwest::Url::parse(uri)
        .is_ok_and(|u| u.scheme() == "http" && u.host_str() == Some("127.0.0.1"))
}
