//! The gateway's authentication: how it is configured ([`GatewayAuth`]) and
//! the extractor that turns a request's `Authorization: Bearer` header into
//! the [`Principal`] its handlers check (401 before any handler runs).

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;

use super::Gateway;
use super::problem::{ApiError, unauthorized};
use crate::access::{Principal, RegistryTokens};

/// Who may use a gateway.
#[derive(Debug, Clone)]
pub enum GatewayAuth {
    /// Requests need one of these tokens. A gateway with none refuses to
    /// start.
    Tokens(RegistryTokens),
    /// No authentication: anyone who reaches the gateway may do anything
    /// (`--insecure-no-auth`; tests and loopback-only setups).
    InsecureNoAuth,
}

impl Default for GatewayAuth {
    /// No token: [`Gateway::new`] refuses it, so authentication is a choice
    /// an embedder makes, never an accident.
    fn default() -> Self {
        Self::Tokens(RegistryTokens::default())
    }
}

/// The request's principal, as an extractor.
pub(crate) struct Who(pub(crate) Principal);

impl FromRequestParts<Gateway> for Who {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, gw: &Gateway) -> Result<Self, ApiError> {
        let tokens = match &gw.config.auth {
            GatewayAuth::InsecureNoAuth => return Ok(Who(Principal::open())),
            GatewayAuth::Tokens(tokens) => tokens,
        };
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .ok_or_else(unauthorized)?;
        let who = tokens.principal(token).cloned().ok_or_else(unauthorized)?;
        Ok(Who(who))
    }
}
