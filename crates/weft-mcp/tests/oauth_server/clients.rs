//! Client authentication at the test token endpoint: HTTP Basic with the
//! pre-registered client's secret (RFC 6749 §2.3.1: the id and secret
//! form-urlencoded, then base64), or a `private_key_jwt` assertion
//! (RFC 7523 §2.2 and §3: `iss` and `sub` the client id, `aud` the
//! issuer, `exp` checked, signed by the client's key), and the
//! client-credentials grant (RFC 6749 §4.4), open to authenticated
//! confidential clients only.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use base64::Engine;

use super::AuthState;
use super::routes::{issue, oauth_error};

/// RFC 7523's client assertion type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The client behind a token request.
pub struct Client {
    /// Its id (empty when the request names none).
    pub id: String,
    /// Whether it proved it holds a secret or key.
    pub authenticated: bool,
}

/// Authenticates the token request's client; `None` for a confidential
/// client that does not authenticate, or fails to (`invalid_client`, 401).
pub fn authenticate(
    s: &AuthState,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Option<Client> {
    let pre = s.preregistered.lock().unwrap().clone();
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "));
    if let Some(basic) = basic {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic)
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (id, secret) = decoded.split_once(':')?;
        let (id, secret) = (form_decode(id), form_decode(secret));
        let pre = pre.filter(|p| p.client_id == id && p.secret.as_deref() == Some(&secret))?;
        s.basic_auths.fetch_add(1, Ordering::SeqCst);
        return Some(Client {
            id: pre.client_id,
            authenticated: true,
        });
    }
    if let Some(kind) = form.get("client_assertion_type") {
        let assertion = form.get("client_assertion")?;
        let pre = pre?;
        if kind != JWT_BEARER || form.get("client_id").is_some_and(|id| *id != pre.client_id) {
            return None;
        }
        verify_assertion(s, &pre, assertion).ok()?;
        s.assertions.fetch_add(1, Ordering::SeqCst);
        return Some(Client {
            id: pre.client_id,
            authenticated: true,
        });
    }
    let id = form.get("client_id").cloned().unwrap_or_default();
    let confidential = pre.is_some_and(|p| p.client_id == id);
    if confidential {
        return None;
    }
    Some(Client {
        id,
        authenticated: false,
    })
}

/// The client-credentials grant: a token with the scopes asked for.
pub fn client_credentials(
    s: &AuthState,
    client: &Client,
    form: &HashMap<String, String>,
) -> Response {
    if !client.authenticated {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    s.client_credentials.fetch_add(1, Ordering::SeqCst);
    let scopes = form
        .get("scope")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    issue(s, scopes)
}

fn verify_assertion(
    s: &AuthState,
    pre: &super::Preregistered,
    assertion: &str,
) -> Result<(), jsonwebtoken::errors::Error> {
    let key = pre.public_key_pem.as_deref().unwrap_or_default();
    let key = jsonwebtoken::DecodingKey::from_ec_pem(key.as_bytes())?;
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&[&s.base]);
    validation.set_issuer(&[&pre.client_id]);
    validation.sub = Some(pre.client_id.clone());
    validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
    jsonwebtoken::decode::<serde_json::Value>(assertion, &key, &validation).map(drop)
}

/// One `application/x-www-form-urlencoded` value, decoded.
fn form_decode(value: &str) -> String {
    oauth2::url::form_urlencoded::parse(format!("v={value}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}
