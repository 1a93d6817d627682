//! [`ApiError`]: every way a request can fail, turned into an RFC 9457
//! `application/problem+json` response in one place.
//!
//! Handlers return `Result<_, ApiError>`; runtime, store and extractor errors
//! convert with `From`, so the status code of each failure is decided here and
//! nowhere else. Internal failures are logged and answered with a generic
//! detail, so store messages never reach clients.

use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use weft_core::run::RunError;
use weft_core::session::SessionError;
use weft_core::store::StoreError;
use weft_runtime::RuntimeError;

/// The media type of problem responses.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Why a request failed; each variant maps to one HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request carries no valid bearer token (401).
    #[error("a valid bearer token is required")]
    Unauthorized,
    /// The resource does not exist, or belongs to another tenant (404).
    #[error("{0}")]
    NotFound(String),
    /// The request is malformed (400), with one entry per faulty field.
    #[error("{detail}")]
    BadRequest {
        /// What is wrong, for humans.
        detail: String,
        /// The fields at fault.
        errors: Vec<FieldError>,
    },
    /// The request conflicts with the resource's state (409).
    #[error("{0}")]
    Conflict(String),
    /// The request body is larger than the limit (413).
    #[error("the request body is larger than the limit")]
    PayloadTooLarge,
    /// The request body did not arrive within the body-read timeout (408).
    #[error("the request body did not arrive in time")]
    RequestTimeout,
    /// The request body is not JSON (415).
    #[error("expected a body with content type application/json")]
    UnsupportedMediaType,
    /// A tenant quota is used up (429); try again after `retry_after` seconds.
    #[error("{detail}")]
    TooManyRequests {
        /// Which quota, for humans.
        detail: String,
        /// Seconds until a retry may succeed, sent as `Retry-After`.
        retry_after: u64,
    },
    /// The route exists but not with this method (405).
    #[error("method not allowed on this resource")]
    MethodNotAllowed,
    /// The run's stored row does not decode (500, `corrupt-run`); only its
    /// own tenant is told (another gets a 404).
    #[error("run `{run_id}` cannot be read: its stored data is corrupt")]
    CorruptRun {
        /// The run.
        run_id: String,
        /// Whether it has ended.
        ended: bool,
        /// Whether it was quarantined: failed with reason `corrupt_state`.
        quarantined: bool,
    },
    /// The session's stored row does not decode (500, `corrupt-session`);
    /// only its own tenant is told (another gets a 404).
    #[error("session `{session_id}` cannot be read: its stored data is corrupt")]
    CorruptSession {
        /// The session.
        session_id: String,
    },
    /// The server could not serve the request (500); the error is logged, not sent.
    #[error("internal error: {0}")]
    Internal(#[source] BoxError),
    /// A dependency is unavailable (503); the error is logged, not sent.
    #[error("service unavailable: {0}")]
    Unavailable(#[source] BoxError),
}

/// The cause of an internal or unavailable error: the failing component's
/// own error, or a message where there is none.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One faulty field of a request, in a problem's `errors` array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FieldError {
    /// The field's path in the request, dotted (`answer.answers.color`), or
    /// the header or parameter name.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
    /// A machine-readable reason, when one exists (e.g. `option_not_offered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// An RFC 9457 problem document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem.
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of problem.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong with this request.
    pub detail: String,
    /// The request fields at fault, for validation problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
    /// The request's id, as in its `x-request-id` response header: quote it
    /// when reporting the problem, to find the request in the server's logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl ApiError {
    /// A 400 naming one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        let field = field.into();
        ApiError::BadRequest {
            detail: format!("`{field}`: {message}"),
            errors: vec![FieldError {
                field,
                message,
                code: None,
            }],
        }
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal(_)
            | ApiError::CorruptRun { .. }
            | ApiError::CorruptSession { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The problem document for this error, naming the request being
    /// handled on this task, if any.
    pub fn problem(&self) -> Problem {
        let status = self.status();
        let (slug, detail, errors) = match self {
            ApiError::Unauthorized => ("unauthorized", self.to_string(), Vec::new()),
            ApiError::NotFound(d) => ("not-found", d.clone(), Vec::new()),
            ApiError::BadRequest { detail, errors } => {
                ("invalid-request", detail.clone(), errors.clone())
            }
            ApiError::Conflict(d) => ("conflict", d.clone(), Vec::new()),
            ApiError::PayloadTooLarge => ("payload-too-large", self.to_string(), Vec::new()),
            ApiError::RequestTimeout => ("request-timeout", self.to_string(), Vec::new()),
            ApiError::UnsupportedMediaType => {
                ("unsupported-media-type", self.to_string(), Vec::new())
            }
            ApiError::TooManyRequests { detail, .. } => {
                ("too-many-requests", detail.clone(), Vec::new())
            }
            ApiError::MethodNotAllowed => ("method-not-allowed", self.to_string(), Vec::new()),
            ApiError::CorruptRun {
                ended, quarantined, ..
            } => {
                let end = match (quarantined, ended) {
                    (true, _) => "; it was quarantined: failed with reason `corrupt_state`",
                    (false, true) => "; it has ended",
                    (false, false) => "",
                };
                ("corrupt-run", format!("{self}{end}"), Vec::new())
            }
            ApiError::CorruptSession { .. } => ("corrupt-session", self.to_string(), Vec::new()),
            ApiError::Internal(_) => (
                "internal",
                "the server failed to handle the request".to_owned(),
                Vec::new(),
            ),
            ApiError::Unavailable(_) => (
                "unavailable",
                "the service is temporarily unavailable".to_owned(),
                Vec::new(),
            ),
        };
        // A backstop: whatever input a message quotes, it quotes short.
        let detail = crate::clip::clip_quoted_to(&detail, 128, 2048);
        let errors = errors
            .into_iter()
            .map(|e| FieldError {
                field: crate::clip::clip(&e.field, 256),
                message: crate::clip::clip_quoted_to(&e.message, 128, 2048),
                ..e
            })
            .collect();
        Problem {
            kind: format!("urn:weft:problem:{slug}"),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail,
            errors,
            request_id: crate::requests::current_id(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            ApiError::Internal(m) | ApiError::Unavailable(m) => {
                tracing::error!(error = %m, "request failed");
            }
            _ => {}
        }
        let status = self.status();
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        match &self {
            ApiError::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::TooManyRequests { retry_after, .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            _ => {}
        }
        response
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::UnknownAgent(_) => ApiError::field("agent", e.to_string()),
            RuntimeError::RunNotFound(_) => ApiError::NotFound(e.to_string()),
            RuntimeError::NotAwaiting { .. }
            | RuntimeError::DrivenElsewhere(_)
            | RuntimeError::NotPaused(_)
            | RuntimeError::Finished(_)
            | RuntimeError::SessionEnded(_) => ApiError::Conflict(e.to_string()),
            RuntimeError::Protocol(p) => p.into(),
            RuntimeError::Store(s) => s.into(),
            RuntimeError::Tools(_) | RuntimeError::Catalog { .. } => {
                ApiError::Unavailable(Box::new(e))
            }
            RuntimeError::Interrupted(_) | RuntimeError::History { .. } => {
                ApiError::Unavailable(Box::new(e))
            }
        }
    }
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        let message = e.to_string();
        match e {
            RunError::UnknownAwaitItem(_) => ApiError::BadRequest {
                detail: message.clone(),
                errors: vec![FieldError {
                    field: "item_id".to_owned(),
                    message,
                    code: Some("unknown_item".to_owned()),
                }],
            },
            RunError::InvalidAnswer { error, .. } => {
                let code = serde_json::to_value(&error)
                    .ok()
                    .and_then(|v| v.get("error").and_then(|c| c.as_str()).map(str::to_owned));
                let field = match error.field() {
                    Some(f) => format!("answer.content.{f}"),
                    None => "answer".to_owned(),
                };
                ApiError::BadRequest {
                    detail: message,
                    errors: vec![FieldError {
                        field,
                        message: error.to_string(),
                        code,
                    }],
                }
            }
            _ => ApiError::Conflict(message),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::RunNotFound { .. } => ApiError::NotFound(e.to_string()),
            StoreError::RunExists { .. } | StoreError::SessionEnded { .. } => {
                ApiError::Conflict(e.to_string())
            }
            _ => ApiError::Internal(Box::new(e)),
        }
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::NotFound { .. } => ApiError::NotFound(e.to_string()),
            SessionError::Exists { .. } | SessionError::Ended { .. } => {
                ApiError::Conflict(e.to_string())
            }
            SessionError::MemoryFull { .. } | SessionError::MemoryValueTooLarge { .. } => {
                ApiError::Conflict(e.to_string())
            }
            // Typed only where the caller's tenant is known to own it
            // (`access::owned_session`); anywhere else a plain 500.
            SessionError::TranscriptGap { .. } | SessionError::Corrupt { .. } => {
                ApiError::Internal(Box::new(e))
            }
            SessionError::Store(s) => s.into(),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> Self {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return ApiError::PayloadTooLarge;
        }
        ApiError::BadRequest {
            detail: r.body_text(),
            errors: Vec::new(),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::BadRequest {
            detail: crate::clip::clip_quoted(&r.body_text()),
            errors: Vec::new(),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        ApiError::BadRequest {
            detail: crate::clip::clip_quoted(&r.body_text()),
            errors: Vec::new(),
        }
    }
}
