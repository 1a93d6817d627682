//! Gemini on Vertex AI (`vertex/<model>`): the same `generateContent`
//! bodies and answers as the Generative Language API ([`super`]), posted to
//! a Google Cloud location's endpoint,
//! `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}`
//! (the `global` location's host is `aiplatform.googleapis.com`), under
//! `publishers/google/models/{model}:streamGenerateContent?alt=sse` (whole
//! answers: `:generateContent`), with `Authorization: Bearer <access token>`
//! instead of an API key.
//!
//! Where the endpoint comes from ([`endpoint`]): a base URL naming its
//! project and location (`.../projects/<p>/locations/<l>`) is the endpoint
//! as it is; otherwise the project is `GOOGLE_CLOUD_PROJECT` and the
//! location `GOOGLE_CLOUD_LOCATION` (default `us-central1`), under the base
//! URL when one is given (a proxy's API root, `https://proxy/v1`), else
//! under the location's Google host. The access token is the configured key
//! (an agent file's `api_key_env` names its variable), else
//! `GOOGLE_CLOUD_ACCESS_TOKEN`; weft does not refresh it (a token from
//! `gcloud auth print-access-token` lasts an hour). Vertex's errors are
//! Google's `google.rpc.Status` bodies, a streamed request's sometimes
//! inside a JSON array ([`crate::http::http_error`] reads both).

use serde_json::Value;
use weft_core::model::{ModelError, ModelRequest, StreamChunk};

use super::{GeminiDecoder, build_request, decode_body};
use crate::client::{HttpModelClient, WireApi};
use crate::http::HttpConfig;
use crate::key::ApiKey;

/// The variable naming the Google Cloud project.
pub const PROJECT_VAR: &str = "GOOGLE_CLOUD_PROJECT";
/// The variable naming the location (region, or `global`).
pub const LOCATION_VAR: &str = "GOOGLE_CLOUD_LOCATION";
/// The variable holding the OAuth 2 access token.
pub const TOKEN_VAR: &str = "GOOGLE_CLOUD_ACCESS_TOKEN";
/// The location used when [`LOCATION_VAR`] is not set.
pub const DEFAULT_LOCATION: &str = "us-central1";

/// Vertex AI's `generateContent` for Google's models, as an [`HttpModelClient`] speaks it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VertexApi;

impl WireApi for VertexApi {
    type Body = Value;
    type Decoder = GeminiDecoder;

    /// Google's models under a location's endpoint; [`WireApi::url`] adds
    /// the model and the method.
    const PATH: &'static str = "/publishers/google/models";

    fn url(&self, base_url: &str, model: &str, stream: bool) -> String {
        let base = base_url.trim_end_matches('/');
        if stream {
            format!("{base}{}/{model}:streamGenerateContent?alt=sse", Self::PATH)
        } else {
            format!("{base}{}/{model}:generateContent", Self::PATH)
        }
    }

    fn prefix(&self) -> &'static str {
        "vertex"
    }

    fn body(
        &self,
        _model: &str,
        request: &ModelRequest,
        _stream: bool,
    ) -> Result<Value, ModelError> {
        build_request(request)
    }

    fn decoder(&self) -> GeminiDecoder {
        GeminiDecoder::default()
    }

    fn decode_body(&self, body: &str) -> Result<Vec<StreamChunk>, ModelError> {
        decode_body(body)
    }
}

/// A client for one Gemini model on Vertex AI.
pub type VertexClient = HttpModelClient<VertexApi>;

impl HttpModelClient<VertexApi> {
    /// A client for `model` at a location's `endpoint` (see [`location_url`]),
    /// sending `token` as a bearer token.
    pub fn new(
        model: &str,
        token: &ApiKey,
        endpoint: &str,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        Self::with_bearer(VertexApi, model, Some(token), endpoint, http)
    }
}

/// The API root of `location`: `https://{location}-aiplatform.googleapis.com/v1`,
/// or `https://aiplatform.googleapis.com/v1` for `global`.
pub fn api_root(location: &str) -> String {
    if location == "global" {
        "https://aiplatform.googleapis.com/v1".to_owned()
    } else {
        format!("https://{location}-aiplatform.googleapis.com/v1")
    }
}

/// A location's endpoint under an API root: `{root}/projects/{project}/locations/{location}`.
pub fn location_url(root: &str, project: &str, location: &str) -> String {
    format!(
        "{}/projects/{project}/locations/{location}",
        root.trim_end_matches('/')
    )
}

/// Whether `url`'s path ends in `projects/<p>/locations/<l>`.
fn names_location(url: &str) -> bool {
    let path = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    matches!(
        segments.as_slice(),
        [.., "projects", p, "locations", l] if !p.is_empty() && !l.is_empty()
    )
}

/// A project id or location as a path segment takes it: lower-case
/// letters, digits and hyphens.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The endpoint `model`'s requests go under, from the base URL and `env`
/// (see the module docs); a configuration error naming the variable to set
/// when the project is missing, or the variable whose value is no name.
pub fn endpoint(
    model: &str,
    base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ModelError> {
    if let Some(base) = base_url.filter(|b| names_location(b)) {
        return Ok(base.trim_end_matches('/').to_owned());
    }
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let project = var(PROJECT_VAR).ok_or_else(|| ModelError::Config {
        message: format!(
            "`vertex/{model}` needs a Google Cloud project: set {PROJECT_VAR}, or give a base_url \
             naming it (https://us-central1-aiplatform.googleapis.com/v1/projects/<project>/locations/us-central1)"
        ),
    })?;
    let location = var(LOCATION_VAR).unwrap_or_else(|| DEFAULT_LOCATION.to_owned());
    for (name, value) in [(PROJECT_VAR, &project), (LOCATION_VAR, &location)] {
        if !is_name(value.trim()) {
            return Err(ModelError::Config {
                message: format!(
                    "{name} is `{value}`, which is not a Google Cloud name (lower-case letters, digits and hyphens)"
                ),
            });
        }
    }
    let (project, location) = (project.trim(), location.trim());
    let root = base_url.map_or_else(|| api_root(location), str::to_owned);
    Ok(location_url(&root, project, location))
}

/// The client for `vertex/<model>`: the endpoint from [`endpoint`], the
/// token `key` (configured, or read from the variable `api_key_env` names),
/// else [`TOKEN_VAR`].
pub fn from_env(
    model: &str,
    key: Option<ApiKey>,
    base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    http: HttpConfig,
) -> Result<VertexClient, ModelError> {
    let endpoint = endpoint(model, base_url, env)?;
    let token = key
        .or_else(|| {
            env(TOKEN_VAR)
                .filter(|t| !t.trim().is_empty())
                .map(|t| ApiKey::new(t.trim()))
        })
        .ok_or_else(|| ModelError::Config {
            message: format!(
                "no access token for `vertex/{model}`: set {TOKEN_VAR} (e.g. to the output of \
                 `gcloud auth print-access-token`), or name the variable that holds it with \
                 `api_key_env` in the agent file's [planner] (or [advisor])"
            ),
        })?;
    VertexClient::new(model, &token, &endpoint, http)
}

#[cfg(test)]
mod tests;
