//! The Anthropic Messages API client (`anthropic/<model>`).

mod decode;
mod request;

pub use decode::{AnthropicDecoder, decode_body};
pub use request::{DEFAULT_MAX_TOKENS, build as build_request};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use weft_core::model::{ModelError, ModelRequest, StreamChunk};

use crate::client::{HttpModelClient, WireApi};
use crate::http::{HttpConfig, secret_header};
use crate::key::ApiKey;

/// The API's default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version header value this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The Messages API, as an [`HttpModelClient`] speaks it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessagesApi;

impl WireApi for MessagesApi {
    type Body = Value;
    type Decoder = AnthropicDecoder;

    const PATH: &'static str = "/v1/messages";

    fn prefix(&self) -> &'static str {
        "anthropic"
    }

    fn body(&self, model: &str, request: &ModelRequest, stream: bool) -> Result<Value, ModelError> {
        Ok(build_request(model, request, stream))
    }

    fn decoder(&self) -> AnthropicDecoder {
        AnthropicDecoder::default()
    }

    fn decode_body(&self, body: &str) -> Result<Vec<StreamChunk>, ModelError> {
        decode_body(body)
    }
}

/// A client for one Anthropic model.
pub type AnthropicClient = HttpModelClient<MessagesApi>;

impl HttpModelClient<MessagesApi> {
    /// A client for `model` at `base_url` (e.g. [`DEFAULT_BASE_URL`]).
    pub fn new(
        model: &str,
        api_key: &ApiKey,
        base_url: &str,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", secret_header(api_key.expose())?);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Self::with_api(MessagesApi, model, base_url, headers, http)
    }
}
