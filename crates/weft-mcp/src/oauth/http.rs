//! [`BearerClient`]: the streamable HTTP client of an OAuth-protected MCP
//! server. Each request carries the session's current token (refreshed
//! when about to expire), but only to the server's own origin; a 401 is
//! answered by one refresh and retry, and its `WWW-Authenticate` challenge
//! is kept for the authorization that follows. A 403 `insufficient_scope`
//! is answered by one scope step-up (a new authorization with the scopes
//! the challenge names) and retry; when that fails too, the reason is kept
//! for the toolset's error.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderName, HeaderValue};
use futures_util::stream::BoxStream;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    InsufficientScopeError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::error::OAuthFlowError;
use super::session::OAuthSession;

type HttpError = StreamableHttpError<rmcp_reqwest::Error>;

/// An HTTP client that signs requests with the session's token.
#[derive(Clone)]
pub struct BearerClient {
    inner: rmcp_reqwest::Client,
    session: Arc<OAuthSession>,
    challenge: Arc<Mutex<Option<String>>>,
    failure: Arc<Mutex<Option<OAuthFlowError>>>,
}

impl BearerClient {
    /// Signs `inner`'s requests with `session`'s token.
    pub fn new(inner: rmcp_reqwest::Client, session: Arc<OAuthSession>) -> Self {
        Self {
            inner,
            session,
            challenge: Arc::default(),
            failure: Arc::default(),
        }
    }

    /// Why the last scope step-up failed, taken.
    pub fn take_failure(&self) -> Option<OAuthFlowError> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The last `WWW-Authenticate` challenge of a 401, taken.
    pub fn take_challenge(&self) -> Option<String> {
        self.challenge
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The token for a request to `uri`: none for another origin, none when
    /// there is none (the server's 401 then starts the authorization).
    async fn token_for(&self, uri: &str) -> Option<String> {
        if !self.session.allows(uri) {
            return None;
        }
        match self.session.bearer().await {
            Ok(token) => token.map(|t| t.access_token),
            Err(e) => {
                tracing::warn!(error = %e, "no OAuth token for this request");
                None
            }
        }
    }

    /// Runs `call` with the token; after a 401 to a request that carried one,
    /// refreshes once and retries with the new token.
    async fn signed<T, F, Fut>(&self, uri: &str, call: F) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let sent = self.token_for(uri).await;
        let result = match call(sent.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) if sent.is_some() => {
                self.keep(&challenge.www_authenticate_header);
                match self.session.refresh().await {
                    Ok(Some(fresh)) if Some(&fresh.access_token) != sent.as_ref() => {
                        call(Some(fresh.access_token)).await
                    }
                    Ok(_) => Err(StreamableHttpError::AuthRequired(challenge)),
                    Err(e) => {
                        tracing::warn!(error = %e, "the server refused the token");
                        Err(StreamableHttpError::AuthRequired(challenge))
                    }
                }
            }
            Err(StreamableHttpError::InsufficientScope(refused)) => match &sent {
                Some(sent) => self.step_up(refused, sent, &call).await,
                None => Err(StreamableHttpError::InsufficientScope(refused)),
            },
            other => other,
        };
        if let Err(StreamableHttpError::AuthRequired(challenge)) = &result {
            self.keep(&challenge.www_authenticate_header);
        }
        result
    }

    /// Authorizes again with the scopes `refused` names and retries once; a
    /// failure is kept for [`BearerClient::take_failure`].
    async fn step_up<T, F, Fut>(
        &self,
        refused: InsufficientScopeError,
        sent: &str,
        call: &F,
    ) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let fresh = match self
            .session
            .step_up(&refused.www_authenticate_header, sent)
            .await
        {
            Ok(fresh) => fresh,
            Err(e) => {
                tracing::warn!(error = %e, "scope step-up failed");
                self.fail(e);
                return Err(StreamableHttpError::InsufficientScope(refused));
            }
        };
        match call(Some(fresh.access_token)).await {
            Err(StreamableHttpError::InsufficientScope(again)) => {
                let scopes = self
                    .session
                    .challenged_scopes(&again.www_authenticate_header);
                self.fail(OAuthFlowError::InsufficientScope { scopes });
                Err(StreamableHttpError::InsufficientScope(again))
            }
            other => other,
        }
    }

    fn fail(&self, failure: OAuthFlowError) {
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(failure);
    }

    fn keep(&self, challenge: &str) {
        *self
            .challenge
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(challenge.to_owned());
    }
}

impl StreamableHttpClient for BearerClient {
    type Error = rmcp_reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.signed(&uri, |token| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.signed(&uri, |token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.signed(&uri, |token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.signed(&uri, |token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.signed(&uri, |token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.signed(&uri, |token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
