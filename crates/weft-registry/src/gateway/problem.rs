//! The gateway's error answers: `application/problem+json` bodies with a
//! status, a machine-readable code and what was wrong.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::dto::Problem;
use crate::error::RegistryError;
use crate::wire::WireFieldIssue;

/// An error answer.
pub(crate) struct ApiError(
    pub(crate) StatusCode,
    pub(crate) &'static str,
    pub(crate) String,
    pub(crate) Vec<WireFieldIssue>,
);

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self(status, code, detail.into(), Vec::new())
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        tracing::warn!(error = %e, "gateway request failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", e.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Problem {
            status: self.0.as_u16(),
            code: self.1.to_owned(),
            detail: self.2,
            issues: self.3,
        };
        let unauthorized = self.0 == StatusCode::UNAUTHORIZED;
        let mut resp = (self.0, Json(body)).into_response();
        let headers = resp.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if unauthorized {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

pub(crate) type ApiResult<T> = Result<Json<T>, ApiError>;

pub(crate) fn not_found(what: String) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", what)
}

/// 401: no bearer token, or one the gateway does not know.
pub(crate) fn unauthorized() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "a valid bearer token is required",
    )
}

/// 403: the token's role or scope does not allow this.
pub(crate) fn forbidden(what: String) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "forbidden", what)
}
