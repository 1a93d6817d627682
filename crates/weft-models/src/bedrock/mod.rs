//! The Amazon Bedrock client (`bedrock/<model id or inference profile>`):
//! the Converse API, streamed with `POST /model/{modelId}/converse-stream`
//! (answered in the binary `application/vnd.amazon.eventstream` framing,
//! [`frames`]), whole answers with `POST /model/{modelId}/converse`. Every
//! request is signed with SigV4 ([`sign`]) at each attempt, with
//! credentials and the region from the standard AWS chain
//! ([`credentials`]); the endpoint is `https://bedrock-runtime.<region>.amazonaws.com`
//! unless a base URL (`BEDROCK_BASE_URL`, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`,
//! an agent's `base_url`) names another.

mod chain;
pub mod credentials;
mod decode;
pub mod frames;
mod profile;
mod request;
pub mod sign;
mod sts;

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use weft_core::model::{ChunkStream, ModelClient, ModelError, ModelRequest, ModelSummary};

pub use credentials::{CredentialSource, Credentials, WebIdentity};
pub use decode::{ConverseDecoder, decode_body, stop_reason};
pub use frames::{FrameDecoder, decode_stream};
pub use request::{NO_TOOLS_NOW, build as build_request, is_claude};

use crate::http::{HttpConfig, Transport};
use crate::util::assemble;

/// The endpoint of the Bedrock runtime in `region`.
pub fn default_base_url(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// A client for one Bedrock model (a model id, an inference profile id or an ARN).
#[derive(Debug, Clone)]
pub struct BedrockClient {
    id: String,
    model: String,
    stream_url: String,
    whole_url: String,
    server: Option<(String, u16)>,
    region: String,
    chain: Arc<chain::Chain>,
    transport: Transport,
}

impl BedrockClient {
    /// A client for `model` at `base_url` (e.g. [`default_base_url`]),
    /// signing for `region` with credentials from `source`.
    pub fn new(
        model: &str,
        base_url: &str,
        region: &str,
        source: CredentialSource,
        http: HttpConfig,
    ) -> Result<Self, ModelError> {
        let base = base_url.trim_end_matches('/');
        let label = encode_label(model);
        let stream_url = format!("{base}/model/{label}/converse-stream");
        let parsed = reqwest::Url::parse(&stream_url).map_err(|e| ModelError::Config {
            message: format!("the Bedrock base URL `{base_url}` is not a URL: {e}"),
        })?;
        let server = parsed.host_str().and_then(|h| {
            let host = h.trim_start_matches('[').trim_end_matches(']').to_owned();
            Some((host, parsed.port_or_known_default()?))
        });
        Ok(Self {
            id: format!("bedrock/{model}"),
            model: model.to_owned(),
            whole_url: format!("{base}/model/{label}/converse"),
            stream_url,
            server,
            region: region.to_owned(),
            chain: Arc::new(chain::Chain::new(source)),
            transport: Transport::new(http)?,
        })
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    async fn send(
        &self,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<reqwest::Response, ModelError> {
        let body = build_request(&self.model, request);
        let bytes = Bytes::from(serde_json::to_vec(&body).map_err(|e| ModelError::Other {
            message: format!("cannot serialize the request: {e}"),
        })?);
        let creds = self.chain.get(self.transport.client()).await?;
        let (url, accept) = if stream {
            (&self.stream_url, "application/vnd.amazon.eventstream")
        } else {
            (&self.whole_url, "application/json")
        };
        let headers = |body: &[u8]| {
            sign::signed_headers(&creds, &self.region, url, accept, body, SystemTime::now())
        };
        self.transport.post_with(url, bytes, &headers).await
    }
}

#[async_trait]
impl ModelClient for BedrockClient {
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
        assemble(decode_body(&text)?)
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ChunkStream, ModelError> {
        let resp = self.send(request, true).await?;
        Ok(self.transport.framed(resp, FrameDecoder::new()))
    }
}

/// A model id as one URL path segment: every byte but the unreserved ones
/// percent-encoded (an ARN's `:` and `/`, a version's `:`).
pub fn encode_label(model: &str) -> String {
    let mut out = String::with_capacity(model.len());
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Builds the client for `bedrock/<model>`: the credential source and the
/// region from `env`, the base URL given, else `BEDROCK_BASE_URL` or
/// `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, else the region's endpoint.
pub fn from_env(
    model: &str,
    base_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    http: HttpConfig,
) -> Result<BedrockClient, ModelError> {
    let (source, region) = credentials::resolve(env)?;
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let base = base_url
        .map(str::to_owned)
        .or_else(|| var("BEDROCK_BASE_URL"))
        .or_else(|| var("AWS_ENDPOINT_URL_BEDROCK_RUNTIME"))
        .unwrap_or_else(|| default_base_url(&region));
    BedrockClient::new(model, &base, &region, source, http)
}

#[cfg(test)]
mod tests;
