//! The Google Gemini client (`gemini/<model>`): the Generative Language
//! API (`v1beta`), streamed with `models/{model}:streamGenerateContent?alt=sse`,
//! whole answers with `models/{model}:generateContent`, the key in the
//! `x-goog-api-key` header; and the same API on Vertex AI ([`vertex`],
//! `vertex/<model>`).

mod decode;
mod request;
pub mod schema;
pub mod signature;
pub mod vertex;

pub use decode::{GeminiDecoder, decode_body};
pub use request::build as build_request;
pub use schema::SchemaError;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use weft_core::model::{ModelError, ModelRequest, StreamChunk};

use crate::client::{HttpModelClient, WireApi};
use crate::http::{HttpConfig, secret_header};
use crate::key::ApiKey;

/// The API's default base URL.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The Generative Language API, as an [`HttpModelClient`] speaks it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GeminiApi;

impl WireApi for GeminiApi {
    type Body = Value;
    type Decoder = GeminiDecoder;

    /// The models collection; [`WireApi::url`] adds the model and the method.
    const PATH: &'static str = "/models";

    fn url(&self, base_url: &str, model: &str, stream: bool) -> String {
        let base = base_url.trim_end_matches('/');
        if stream {
            format!("{base}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/models/{model}:generateContent")
        }
    }

    fn prefix(&self) -> &'static str {
        "gemini"
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

/// A client for one Gemini model.
pub type GeminiClient = HttpModelClient<GeminiApi>;

impl HttpModelClient<GeminiApi> {
    /// A client for `model` at `base_url` (e.g. [`DEFAULT_BASE_URL`]).
    pub fn new(
        model: &str,
        api_key: &ApiKey,
        base_url: &str,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert("x-goog-api-key", secret_header(api_key.expose())?);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Self::with_api(GeminiApi, model, base_url, headers, http)
    }
}

#[cfg(test)]
mod tests;
