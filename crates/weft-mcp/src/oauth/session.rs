//! [`OAuthSession`]: one toolset's OAuth state for its MCP server: the
//! stored token (refreshed when less than [`REFRESH_MARGIN`] is left), a new
//! authorization when there is none or its refresh was refused, a scope
//! step-up when the server wants more scopes, and the origin the token may
//! be sent to.

use std::time::{Duration, UNIX_EPOCH};

use weft_core::Timestamp;

use async_trait::async_trait;
use oauth2::TokenResponse;
use rmcp::transport::auth::{AuthError, AuthorizationManager, WWWAuthenticateParams};
use rmcp_reqwest::Url;
use weft_tools::{OAuthError, OAuthToken, OAuthTokenSource};

use super::config::{OAuthConfig, REFRESH_MARGIN};
use super::error::OAuthFlowError;
use super::flow::{FlowInput, authorize, resume};
use super::store::{TokenFile, TokenStore};

/// One toolset's OAuth state.
pub struct OAuthSession {
    toolset: String,
    server: String,
    resource: String,
    origin: Url,
    config: OAuthConfig,
    store: TokenStore,
    /// The manager that refreshes; the lock makes refreshes and authorizations single-flight.
    manager: tokio::sync::Mutex<Option<AuthorizationManager>>,
}

impl OAuthSession {
    /// The state of toolset `toolset` for the MCP server at `resource` (`server` as shown in messages).
    pub fn new(
        toolset: &str,
        server: &str,
        resource: &str,
        config: OAuthConfig,
    ) -> Result<Self, OAuthFlowError> {
        let origin = Url::parse(resource)
            .map_err(|e| OAuthFlowError::metadata(format!("the server URL: {e}")))?;
        let dir = config.resolved_token_dir().ok_or_else(|| {
            OAuthFlowError::store("no token directory: set one, or XDG_CONFIG_HOME or HOME")
        })?;
        let store = TokenStore::new(&dir, resource, config.clock.clone());
        Ok(Self {
            toolset: toolset.to_owned(),
            server: server.to_owned(),
            resource: resource.to_owned(),
            origin,
            config,
            store,
            manager: tokio::sync::Mutex::new(None),
        })
    }

    /// The token file's path.
    pub fn token_path(&self) -> &std::path::Path {
        self.store.path()
    }

    /// Whether a request to `uri` may carry the token: only on the server's own origin.
    pub fn allows(&self, uri: &str) -> bool {
        Url::parse(uri).is_ok_and(|u| {
            u.scheme() == self.origin.scheme()
                && u.host_str()
                    .zip(self.origin.host_str())
                    .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
                && u.port_or_known_default() == self.origin.port_or_known_default()
        })
    }

    /// The stored token, refreshed first when it is about to expire; `None`
    /// when there is none. A refused refresh deletes the tokens and is an error.
    pub async fn bearer(&self) -> Result<Option<OAuthToken>, OAuthFlowError> {
        let mut manager = self.manager.lock().await;
        let Some(file) = self.store.read().await? else {
            return Ok(None);
        };
        if file.credentials.token_response.is_none() {
            return Ok(None);
        }
        if !self.expiring(&file) {
            return Ok(token_of(&file));
        }
        tracing::debug!(toolset = %self.toolset, "access token about to expire; refreshing");
        self.refresh_locked(&mut manager, &file).await
    }

    /// Refreshes now (the server refused the token); `None` when there is nothing to refresh.
    pub async fn refresh(&self) -> Result<Option<OAuthToken>, OAuthFlowError> {
        let mut manager = self.manager.lock().await;
        match self.store.read().await? {
            Some(file) if file.credentials.token_response.is_some() => {
                self.refresh_locked(&mut manager, &file).await
            }
            _ => Ok(None),
        }
    }

    /// Makes sure a call can go out: refreshes an expiring token, and
    /// authorizes again when the refresh was refused. Without any token it
    /// does nothing (the server's 401 starts the authorization).
    pub async fn prepare(&self) -> Result<(), OAuthFlowError> {
        match self.bearer().await {
            Ok(_) => Ok(()),
            Err(OAuthFlowError::RefreshRejected { message }) => {
                tracing::warn!(
                    toolset = %self.toolset,
                    reason = %message,
                    "token refresh refused; authorizing again"
                );
                self.authorize(None).await
            }
            Err(e) => Err(e),
        }
    }

    /// The full authorization, from the server's `challenge` (or the last one stored).
    pub async fn authorize(&self, challenge: Option<&str>) -> Result<(), OAuthFlowError> {
        let mut manager = self.manager.lock().await;
        let stored = self.store.context().challenge;
        let challenge = challenge.or(stored.as_deref());
        let fresh = authorize(&self.input(), challenge, None).await?;
        *manager = Some(fresh);
        Ok(())
    }

    /// Scope step-up after a 403 `insufficient_scope` to a request that
    /// carried `sent`: authorizes again with the scopes the `challenge` names
    /// joined to those held, and returns the new token. When another request
    /// already stepped up to those scopes, its token is returned instead.
    pub async fn step_up(&self, challenge: &str, sent: &str) -> Result<OAuthToken, OAuthFlowError> {
        let mut manager = self.manager.lock().await;
        let wanted = self.challenged_scopes(challenge);
        let held = self.store.read().await?.as_ref().and_then(token_of);
        if let Some(token) = &held
            && token.access_token != sent
            && wanted.iter().all(|s| token.scopes.contains(s))
        {
            return Ok(token.clone());
        }
        let mut scopes = held.map(|t| t.scopes).unwrap_or_default();
        for scope in &wanted {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        tracing::info!(
            toolset = %self.toolset,
            scopes = %scopes.join(" "),
            "the server wants more scopes; authorizing again"
        );
        let fresh = authorize(&self.input(), Some(challenge), Some(&scopes)).await?;
        *manager = Some(fresh);
        self.store
            .read()
            .await?
            .as_ref()
            .and_then(token_of)
            .ok_or_else(|| OAuthFlowError::TokenExchange {
                message: "no token after authorizing again".to_owned(),
            })
    }

    /// The scopes a `WWW-Authenticate` challenge names.
    pub fn challenged_scopes(&self, challenge: &str) -> Vec<String> {
        WWWAuthenticateParams::parse(challenge, &self.origin)
            .scope
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    fn input(&self) -> FlowInput<'_> {
        FlowInput {
            toolset: &self.toolset,
            server: &self.server,
            resource: &self.resource,
            config: &self.config,
            store: &self.store,
        }
    }

    /// Whether the token has less than the margin left (half its lifetime for short ones).
    fn expiring(&self, file: &TokenFile) -> bool {
        let credentials = &file.credentials;
        let (Some(tokens), Some(received_at)) =
            (&credentials.token_response, credentials.token_received_at)
        else {
            return false;
        };
        let Some(lifetime) = tokens.expires_in() else {
            return false;
        };
        let margin = REFRESH_MARGIN.min(lifetime / 2);
        let expires_at =
            Timestamp::from_millis(received_at.saturating_mul(1_000)).saturating_add(lifetime);
        self.config.clock.now().saturating_add(margin) >= expires_at
    }

    async fn refresh_locked(
        &self,
        manager: &mut Option<AuthorizationManager>,
        file: &TokenFile,
    ) -> Result<Option<OAuthToken>, OAuthFlowError> {
        let has_refresh_token = file
            .credentials
            .token_response
            .as_ref()
            .is_some_and(|t| t.refresh_token().is_some());
        if !has_refresh_token {
            self.store.remove().await?;
            return Err(OAuthFlowError::RefreshRejected {
                message: "the token expired and there is no refresh token".to_owned(),
            });
        }
        if manager.is_none() {
            *manager = Some(resume(&self.input(), &file.credentials.client_id).await?);
        }
        let Some(current) = manager.as_ref() else {
            return Ok(None);
        };
        let step = self.config.step_timeout;
        let refreshed = OAuthFlowError::timed("token refresh", step, async {
            current.refresh_token().await.map_err(|e| match e {
                AuthError::TokenRefreshRejected(message) => {
                    OAuthFlowError::RefreshRejected { message }
                }
                AuthError::AuthorizationRequired => OAuthFlowError::RefreshRejected {
                    message: "authorization required".to_owned(),
                },
                AuthError::CredentialStoreError(message) => OAuthFlowError::Store { message },
                other => OAuthFlowError::Refresh {
                    message: other.to_string(),
                },
            })
        })
        .await;
        match refreshed {
            Ok(_) => {
                tracing::info!(toolset = %self.toolset, "access token refreshed");
                Ok(self.store.read().await?.as_ref().and_then(token_of))
            }
            Err(e @ OAuthFlowError::RefreshRejected { .. }) => {
                self.store.remove().await?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }
}

fn token_of(file: &TokenFile) -> Option<OAuthToken> {
    let tokens = file.credentials.token_response.as_ref()?;
    let expires_at = tokens
        .expires_in()
        .zip(file.credentials.token_received_at)
        .map(|(lifetime, received_at)| UNIX_EPOCH + Duration::from_secs(received_at) + lifetime);
    Some(OAuthToken {
        access_token: tokens.access_token().secret().clone(),
        expires_at,
        scopes: file.credentials.granted_scopes.clone(),
    })
}

/// The token for other parts of weft: a valid one, authorizing first when there is none.
#[async_trait]
impl OAuthTokenSource for OAuthSession {
    async fn token(&self) -> Result<OAuthToken, OAuthError> {
        self.prepare().await.map_err(weft_error)?;
        if let Some(token) = self.bearer().await.map_err(weft_error)? {
            return Ok(token);
        }
        self.authorize(None).await.map_err(weft_error)?;
        self.bearer()
            .await
            .map_err(weft_error)?
            .ok_or_else(|| OAuthError::Server("no token after authorization".to_owned()))
    }

    async fn refresh(&self) -> Result<OAuthToken, OAuthError> {
        OAuthSession::refresh(self)
            .await
            .map_err(weft_error)?
            .ok_or_else(|| OAuthError::RefreshRejected("no stored token".to_owned()))
    }
}

fn weft_error(e: OAuthFlowError) -> OAuthError {
    match e {
        OAuthFlowError::RefreshRejected { message } => OAuthError::RefreshRejected(message),
        other => OAuthError::Server(other.to_string()),
    }
}

impl std::fmt::Debug for OAuthSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSession")
            .field("toolset", &self.toolset)
            .field("server", &self.server)
            .field("token_path", &self.store.path())
            .finish_non_exhaustive()
    }
}
