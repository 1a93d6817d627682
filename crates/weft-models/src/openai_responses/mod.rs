//! The OpenAI Responses API client (`openai-responses/<model>`), always with
//! `store: false`.

mod decode;
mod request;

pub use decode::{ResponsesDecoder, decode_body};
pub use request::{InputItem, ResponsesBody, build as build_request, is_reasoning_model};

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use weft_core::model::{ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary};

use crate::config::ApiKey;
use crate::http::{HttpConfig, Transport};
use crate::openai_chat::bearer_headers;
use crate::util::assemble;

/// A Responses API client for one model.
#[derive(Debug, Clone)]
pub struct ResponsesClient {
    id: String,
    model: String,
    url: String,
    headers: HeaderMap,
    transport: Transport,
}

impl ResponsesClient {
    /// A client for `model` at `base_url` (ending in `/v1`).
    pub fn new(
        model: &str,
        api_key: Option<&ApiKey>,
        base_url: &str,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        Ok(Self {
            id: format!("openai-responses/{model}"),
            model: model.to_owned(),
            url: format!("{}/responses", base_url.trim_end_matches('/')),
            headers: bearer_headers(api_key)?,
            transport: Transport::new(http)?,
        })
    }
}

#[async_trait]
impl ModelClient for ResponsesClient {
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
        Ok(self.transport.sse(resp, ResponsesDecoder::default()))
    }
}
