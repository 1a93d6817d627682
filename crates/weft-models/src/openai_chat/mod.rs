//! The OpenAI Chat Completions client (`openai/<model>`), also used for
//! OpenAI-compatible servers (`compat/<model>`: Ollama, vLLM, llama.cpp).

mod decode;
mod request;

pub use decode::{ChatDecoder, decode_body};
pub use request::build as build_request;
pub(crate) use request::effort;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use weft_core::model::{ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary};

use crate::config::ApiKey;
use crate::http::{HttpConfig, Transport, secret_header};
use crate::util::assemble;

/// OpenAI's default base URL (with `/v1`, as `OPENAI_BASE_URL` is in the SDKs).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Which server a Chat client talks to; they differ in small request details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatFlavor {
    /// OpenAI itself.
    OpenAi,
    /// An OpenAI-compatible server.
    Compat,
}

/// A Chat Completions client for one model.
#[derive(Debug, Clone)]
pub struct ChatClient {
    id: String,
    model: String,
    flavor: ChatFlavor,
    url: String,
    headers: HeaderMap,
    transport: Transport,
}

impl ChatClient {
    /// A client for `model` at `base_url` (ending in `/v1`); compatible servers may need no key.
    pub fn new(
        flavor: ChatFlavor,
        model: &str,
        api_key: Option<&ApiKey>,
        base_url: &str,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        let prefix = match flavor {
            ChatFlavor::OpenAi => "openai",
            ChatFlavor::Compat => "compat",
        };
        Ok(Self {
            id: format!("{prefix}/{model}"),
            model: model.to_owned(),
            flavor,
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            headers: bearer_headers(api_key)?,
            transport: Transport::new(http)?,
        })
    }
}

/// JSON content type plus `Authorization: Bearer <key>` when there is a key.
pub(crate) fn bearer_headers(api_key: Option<&ApiKey>) -> Result<HeaderMap, ModelError> {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(key) = api_key {
        headers.insert(
            AUTHORIZATION,
            secret_header(&format!("Bearer {}", key.expose()))?,
        );
    }
    Ok(headers)
}

#[async_trait]
impl ModelClient for ChatClient {
    fn id(&self) -> &str {
        &self.id
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelSummary, ModelError> {
        let body = build_request(self.flavor, &self.model, request, false);
        let resp = self.transport.post(&self.url, &self.headers, &body).await?;
        let text = self.transport.text(resp).await?;
        assemble(decode_body(&text)?)
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ChunkStream, ModelError> {
        let body = build_request(self.flavor, &self.model, request, true);
        let resp = self.transport.post(&self.url, &self.headers, &body).await?;
        let decoder = ChatDecoder::new(self.flavor == ChatFlavor::Compat);
        Ok(self.transport.sse(resp, decoder))
    }
}
