//! The gateway's HTTP client: what providers use to register and pong, and
//! executors to learn a toolset's tools; it sends its bearer token (marked
//! sensitive, never logged) with every request.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::access::BearerToken;
use crate::dto::{
    PongRequest, PongResponse, Problem, RegisterRequest, RegisterResponse, ToolsetView,
};
use crate::error::RegistryError;

/// A gateway's base URL and an HTTP client.
#[derive(Debug, Clone)]
pub struct GatewayClient {
    base: String,
    http: reqwest::Client,
    token: Option<BearerToken>,
}

/// How a gateway answered a pong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PongReply {
    /// Taken (or ignored as stale: nothing to do either way).
    Done,
    /// The toolset is not registered: register again.
    Unregistered,
}

impl GatewayClient {
    /// A client of the gateway at `base` (`http://host:port`).
    pub fn new(base: impl Into<String>) -> Result<Self, RegistryError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| RegistryError::Config(format!("http client: {e}")))?;
        Ok(Self {
            base: base.into().trim_end_matches('/').to_owned(),
            http,
            token: None,
        })
    }

    /// The same client sending `token` as its bearer token.
    pub fn with_token(mut self, token: Option<BearerToken>) -> Self {
        self.token = token;
        self
    }

    /// A request to `path` with the bearer token.
    fn request(&self, method: reqwest::Method, path: &str) -> (String, reqwest::RequestBuilder) {
        let url = self.url(path);
        let req = self.http.request(method, &url);
        let req = match &self.token {
            Some(t) => req.bearer_auth(t.secret()),
            None => req,
        };
        (url, req)
    }

    /// Registers a toolset.
    pub async fn register(&self, req: &RegisterRequest) -> Result<RegisterResponse, RegistryError> {
        let (_, builder) = self.request(reqwest::Method::POST, "/v1/toolsets");
        self.send(builder, Some(req)).await
    }

    /// Unregisters a toolset.
    pub async fn unregister(&self, name: &str) -> Result<(), RegistryError> {
        let (url, req) = self.request(reqwest::Method::DELETE, &format!("/v1/toolsets/{name}"));
        let resp = req.send().await.map_err(|e| gateway(&url, e))?;
        check(&url, resp).await.map(|_| ())
    }

    /// Answers a ping.
    pub async fn pong(&self, toolset: &str, ping_id: &str) -> Result<PongReply, RegistryError> {
        let (url, req) = self.request(
            reqwest::Method::POST,
            &format!("/v1/toolsets/{toolset}/pong"),
        );
        let resp = req
            .json(&PongRequest {
                ping_id: ping_id.to_owned(),
            })
            .send()
            .await
            .map_err(|e| gateway(&url, e))?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(PongReply::Unregistered);
        }
        let _: PongResponse = decode(&url, check(&url, resp).await?).await?;
        Ok(PongReply::Done)
    }

    /// One toolset with its tools and health.
    pub async fn toolset(&self, name: &str) -> Result<ToolsetView, RegistryError> {
        let (url, req) = self.request(reqwest::Method::GET, &format!("/v1/toolsets/{name}"));
        let resp = req.send().await.map_err(|e| gateway(&url, e))?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Err(RegistryError::UnknownToolset(name.to_owned()));
        }
        decode(&url, check(&url, resp).await?).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send<B: Serialize, T: DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
        body: Option<&B>,
    ) -> Result<T, RegistryError> {
        let req = match body {
            Some(b) => req.json(b),
            None => req,
        };
        let req = req
            .build()
            .map_err(|e| RegistryError::Config(format!("http request: {e}")))?;
        let url = req.url().to_string();
        let resp = self.http.execute(req).await.map_err(|e| gateway(&url, e))?;
        decode(&url, check(&url, resp).await?).await
    }
}

/// A failure the gateway's answer tells.
fn refused(url: &str, message: String) -> RegistryError {
    RegistryError::Gateway {
        url: url.to_owned(),
        message,
    }
}

/// A transport failure, with its causes (`error sending request: ...:
/// Connection refused`): reqwest's own message alone does not say why.
fn gateway(url: &str, e: impl std::error::Error) -> RegistryError {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    RegistryError::Gateway {
        url: url.to_owned(),
        message,
    }
}

async fn check(url: &str, resp: reqwest::Response) -> Result<reqwest::Response, RegistryError> {
    if resp.status().is_success() {
        return Ok(resp);
    }
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let message = match serde_json::from_str::<Problem>(&text) {
        Ok(p) => format!("{} {}: {}", status.as_u16(), p.code, p.detail),
        Err(_) => format!(
            "{}: {}",
            status.as_u16(),
            text.chars().take(300).collect::<String>()
        ),
    };
    Err(refused(url, message))
}

async fn decode<T: DeserializeOwned>(
    url: &str,
    resp: reqwest::Response,
) -> Result<T, RegistryError> {
    let bytes = resp.bytes().await.map_err(|e| gateway(url, e))?;
    serde_json::from_slice(&bytes).map_err(|e| refused(url, format!("unreadable answer: {e}")))
}
