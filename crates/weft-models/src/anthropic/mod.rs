//! The Anthropic Messages API client (`anthropic/<model>`).

mod decode;
mod request;

pub use decode::{AnthropicDecoder, decode_body};
pub use request::{DEFAULT_MAX_TOKENS, build as build_request};

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use weft_core::model::{ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary};

use crate::config::ApiKey;
use crate::http::{HttpConfig, Transport, secret_header};
use crate::util::assemble;

/// The API's default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version header value this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// A client for one Anthropic model.
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    id: String,
    model: String,
    url: String,
    headers: HeaderMap,
    transport: Transport,
}

impl AnthropicClient {
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
        Ok(Self {
            id: format!("anthropic/{model}"),
            model: model.to_owned(),
            url: format!("{}/v1/messages", base_url.trim_end_matches('/')),
            headers,
            transport: Transport::new(http)?,
        })
    }
}

#[async_trait]
impl ModelClient for AnthropicClient {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelSummary, ModelError> {
        let body = build_request(&self.model, request, false);
        let resp = self.transport.post(&self.url, &self.headers, &body).await?;
        let text = self.transport.text(resp).await?;
        assemble(decode_body(&text)?)
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ChunkStream, ModelError> {
        let body = build_request(&self.model, request, true);
        let resp = self.transport.post(&self.url, &self.headers, &body).await?;
        Ok(self.transport.sse(resp, AnthropicDecoder::default()))
    }
}
