//! The Vertex AI fake: Gemini's request rules and stream ([`crate::gemini`])
//! at a project's location, `POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent?alt=sse`.
//!
//! What Vertex adds (status and error messages as Vertex words them):
//! - An OAuth 2 access token in `Authorization: Bearer` (else 401
//!   `UNAUTHENTICATED`); the fake knows one, [`ACCESS_TOKEN`].
//! - The project in the path is the caller's (else 403
//!   `PERMISSION_DENIED`: the resource may not exist), and the model is
//!   served in the location (else 404 `NOT_FOUND`); the fake's are
//!   [`PROJECT`] and [`LOCATION`].
//! - Every content names its role: Vertex refuses a content without one,
//!   where the Gemini API takes it as the user's.
//! - A refused `streamGenerateContent` request is answered with the error
//!   object inside a JSON array, as Vertex's REST streaming answers it;
//!   authentication and path errors come as the plain object.

use serde_json::{Value, json};

use crate::gemini::{self, error};
use crate::{Issued, Rejection, View};

/// The project the fake serves.
pub const PROJECT: &str = "weft-fake-project";
/// The location the fake serves.
pub const LOCATION: &str = "us-central1";
/// The access token the fake accepts.
pub const ACCESS_TOKEN: &str = "ya29.weft-fake-token";

/// The location's endpoint under the fake's root URL (a `vertex/` model's base URL).
pub fn endpoint(root: &str) -> String {
    format!("{root}/v1/projects/{PROJECT}/locations/{LOCATION}")
}

/// The path a streamed request for `model` is posted to, with its query.
pub fn stream_path(model: &str) -> String {
    format!(
        "/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/{model}:streamGenerateContent?alt=sse"
    )
}

/// Checks the `Authorization` header: a bearer token, the one the fake knows.
pub fn check_token(authorization: Option<&str>) -> Result<(), Rejection> {
    let tail = "Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.";
    match authorization.and_then(|a| a.strip_prefix("Bearer ")) {
        Some(token) if token == ACCESS_TOKEN => Ok(()),
        Some(_) => Err(error(
            401,
            "UNAUTHENTICATED",
            &format!("Request had invalid authentication credentials. {tail}"),
        )),
        None => Err(error(
            401,
            "UNAUTHENTICATED",
            &format!("Request is missing required authentication credential. {tail}"),
        )),
    }
}

/// Checks the project and location a request's path names.
pub fn check_path(path: &str) -> Result<(), Rejection> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let [
        "v1",
        "projects",
        project,
        "locations",
        location,
        "publishers",
        "google",
        "models",
        target,
    ] = segments.as_slice()
    else {
        return Err(error(
            404,
            "NOT_FOUND",
            &format!("The requested URL {path} was not found."),
        ));
    };
    let model = target.split(':').next().unwrap_or_default();
    let resource =
        format!("projects/{project}/locations/{location}/publishers/google/models/{model}");
    if *project != PROJECT {
        return Err(error(
            403,
            "PERMISSION_DENIED",
            &format!(
                "Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/{resource}' (or it may not exist)."
            ),
        ));
    }
    if *location != LOCATION {
        return Err(error(
            404,
            "NOT_FOUND",
            &format!(
                "Publisher Model `{resource}` was not found or your project does not have access to it. Please ensure you are using a valid model version."
            ),
        ));
    }
    Ok(())
}

/// Checks a request body: every content has a role, then Gemini's rules.
pub fn check(req: &Value, issued: &Issued) -> Result<View, Rejection> {
    let contents = req["contents"].as_array().into_iter().flatten();
    for (i, c) in contents.enumerate() {
        if c.get("role").is_none_or(Value::is_null) {
            return Err(error(
                400,
                "INVALID_ARGUMENT",
                &format!("Please use a valid role: user, model. (contents[{i}] has no role)"),
            ));
        }
    }
    gemini::check(req, issued)
}

/// A rejection of a streamed request as Vertex sends it: the error object
/// inside a JSON array.
pub fn streamed(rejection: Rejection) -> Rejection {
    Rejection {
        body: json!([rejection.body]),
        ..rejection
    }
}
