//! The one HTTP client skeleton every provider API fills in.
//!
//! A provider API ([`WireApi`]) says how a [`ModelRequest`] becomes a request
//! body, where it is sent, and how a streamed or whole response body becomes
//! [`StreamChunk`]s. [`HttpModelClient`] does the rest, the same for every
//! API: it POSTs the body through the shared transport (retries, timeouts,
//! error mapping), turns an SSE response into a chunk stream, and folds a
//! whole response into a [`ModelSummary`] with its usage.
//!
//! The provider clients (`AnthropicClient`, `ChatClient`, `ResponsesClient`,
//! `GeminiClient`, `VertexClient`)
//! are this type with their API filled in; each provider module owns its
//! [`WireApi`] and its constructor.

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Serialize;
use weft_core::model::{
    ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary, StreamChunk,
};

use crate::decode::EventDecoder;
use crate::http::{HttpConfig, Transport, secret_header};
use crate::key::ApiKey;
use crate::util::assemble;

/// What sets one provider API apart: its request body, its endpoint and its decoders.
pub trait WireApi: std::fmt::Debug + Clone + Send + Sync + 'static {
    /// The request body, serialized as JSON.
    type Body: Serialize + Send + Sync;
    /// The stream decoder for one response.
    type Decoder: EventDecoder + 'static;

    /// The path appended to the base URL, e.g. `/v1/messages`.
    const PATH: &'static str;

    /// The URL a request for `model` goes to, streamed or not: by default
    /// the base URL and [`WireApi::PATH`], the same for both.
    fn url(&self, base_url: &str, model: &str, stream: bool) -> String {
        let _ = (model, stream);
        format!("{}{}", base_url.trim_end_matches('/'), Self::PATH)
    }

    /// The provider prefix of model ids, e.g. `anthropic`.
    fn prefix(&self) -> &'static str;

    /// The body asking `model` for `request`, streamed or not; an error
    /// when the request cannot be expressed in the API (a tool schema
    /// using what the API does not accept).
    fn body(
        &self,
        model: &str,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<Self::Body, ModelError>;

    /// A fresh decoder for one streamed response.
    fn decoder(&self) -> Self::Decoder;

    /// Decodes a whole (non-streamed) response body.
    fn decode_body(&self, body: &str) -> Result<Vec<StreamChunk>, ModelError>;
}

/// A client for one model behind an HTTP provider API `A`.
#[derive(Debug, Clone)]
pub struct HttpModelClient<A> {
    api: A,
    id: String,
    model: String,
    /// Where streamed requests go.
    url: String,
    /// Where requests for a whole answer go.
    whole_url: String,
    /// The endpoint's host and port, for traces.
    server: Option<(String, u16)>,
    headers: HeaderMap,
    transport: Transport,
}

impl<A: WireApi> HttpModelClient<A> {
    /// A client for `model` at `base_url`, sending `headers` with every request.
    pub(crate) fn with_api(
        api: A,
        model: &str,
        base_url: &str,
        headers: HeaderMap,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        let url = api.url(base_url, model, true);
        let whole_url = api.url(base_url, model, false);
        Ok(Self {
            id: format!("{}/{model}", api.prefix()),
            model: model.to_owned(),
            server: server_of(&url),
            url,
            whole_url,
            headers,
            transport: Transport::new(http)?,
            api,
        })
    }

    /// A client for `model` at `base_url` that sends JSON with
    /// `Authorization: Bearer <key>` when there is a key.
    pub(crate) fn with_bearer(
        api: A,
        model: &str,
        api_key: Option<&ApiKey>,
        base_url: &str,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        Self::with_api(api, model, base_url, bearer_headers(api_key)?, http)
    }

    /// The provider API this client speaks.
    pub fn api(&self) -> &A {
        &self.api
    }

    async fn send(
        &self,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let body = self.api.body(&self.model, request, stream)?;
        let url = if stream { &self.url } else { &self.whole_url };
        self.transport.post(url, &self.headers, &body).await
    }
}

#[async_trait]
impl<A: WireApi> ModelClient for HttpModelClient<A> {
    fn id(&self) -> &str {
        &self.id
    }

    fn server(&self) -> Option<(&str, u16)> {
        self.server
            .as_ref()
            .map(|(host, port)| (host.as_str(), *port))
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelSummary, ModelError> {
        let resp = self.send(request, false).await?;
        let text = self.transport.text(resp).await?;
        assemble(self.api.decode_body(&text)?)
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ChunkStream, ModelError> {
        let resp = self.send(request, true).await?;
        Ok(self.transport.sse(resp, self.api.decoder()))
    }
}

/// The host and port of `url` (the scheme's default port when it names
/// none); `None` when it does not parse or names no host.
fn server_of(url: &str) -> Option<(String, u16)> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?;
    // An IPv6 host comes bracketed; the attribute holds the bare address.
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    Some((host, url.port_or_known_default()?))
}

/// JSON content type plus `Authorization: Bearer <key>` when there is a key.
fn bearer_headers(api_key: Option<&ApiKey>) -> Result<HeaderMap, ModelError> {
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

#[cfg(test)]
mod tests {
    use super::server_of;

    #[test]
    fn the_server_is_the_urls_host_and_port() {
        assert_eq!(
            server_of("https://api.openai.com/v1/chat/completions"),
            Some(("api.openai.com".to_owned(), 443))
        );
        assert_eq!(
            server_of("http://127.0.0.1:11434/v1/chat/completions"),
            Some(("127.0.0.1".to_owned(), 11434))
        );
        assert_eq!(
            server_of("http://[::1]:8080/v1/messages"),
            Some(("::1".to_owned(), 8080))
        );
        assert_eq!(server_of("not a url/v1/messages"), None);
    }
}
