//! [`OAuthConfig`]: how weft authorizes with a remote MCP server over OAuth
//! 2.1: where tokens are kept, the loopback callback port, the client name,
//! identity (see [`super::identity`]) and scopes, how the authorization URL reaches the human, the step
//! timeouts and the clock token expiry is measured with.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use weft_core::time::{Clock, SystemClock};

use futures_util::future::BoxFuture;
use weft_core::elicitation::ElicitationAction;

use super::identity::{ClientIdentity, Grant, PrivateKey, SecretSource};

/// The default time one HTTP step (discovery, registration, token request) may take.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// The default time the human has to authorize in the browser.
pub const DEFAULT_AUTHORIZE_TIMEOUT: Duration = Duration::from_secs(300);
/// A token is refreshed when less than this is left (or half its lifetime, if shorter).
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// OAuth for one streamable HTTP MCP server.
#[derive(Clone)]
pub struct OAuthConfig {
    /// The directory of token files (one per server); `None` for the default
    /// (`$XDG_CONFIG_HOME/weft/oauth`, else `~/.config/weft/oauth`).
    pub token_dir: Option<PathBuf>,
    /// The loopback callback port on 127.0.0.1; 0 picks a free one.
    pub redirect_port: u16,
    /// The client name sent in dynamic client registration.
    pub client_name: String,
    /// The scopes to ask for; empty for the ones the server suggests.
    pub scopes: Vec<String>,
    /// The grant, and a client registered beforehand with its secret or key.
    pub identity: ClientIdentity,
    /// Shows the authorization URL to the human.
    pub open: Arc<dyn AuthorizationPresenter>,
    /// How long one HTTP step may take.
    pub step_timeout: Duration,
    /// How long the human has to authorize.
    pub authorize_timeout: Duration,
    /// The clock token expiry is measured with.
    pub clock: Arc<dyn Clock>,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            token_dir: None,
            redirect_port: 0,
            client_name: "weft".to_owned(),
            scopes: Vec::new(),
            identity: ClientIdentity::default(),
            open: Arc::new(StderrPresenter),
            step_timeout: DEFAULT_STEP_TIMEOUT,
            authorize_timeout: DEFAULT_AUTHORIZE_TIMEOUT,
            clock: Arc::new(SystemClock),
        }
    }
}

impl OAuthConfig {
    /// Keeps token files in `dir`.
    pub fn with_token_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.token_dir = Some(dir.into());
        self
    }

    /// Listens for the callback on this port (0 for any).
    pub fn with_redirect_port(mut self, port: u16) -> Self {
        self.redirect_port = port;
        self
    }

    /// Registers under this client name.
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Asks for these scopes.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Uses `grant` to get tokens.
    pub fn with_grant(mut self, grant: Grant) -> Self {
        self.identity.grant = grant;
        self
    }

    /// Uses this client id, registered beforehand (no dynamic registration).
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.identity.client_id = Some(client_id.into());
        self
    }

    /// Authenticates the client with the secret read from `source`.
    pub fn with_client_secret(mut self, source: SecretSource) -> Self {
        self.identity.secret = Some(source);
        self
    }

    /// Authenticates the client with assertions signed by `key` (`private_key_jwt`).
    pub fn with_private_key(mut self, key: PrivateKey) -> Self {
        self.identity.private_key = Some(key);
        self
    }

    /// Shows the authorization URL with `open`.
    pub fn with_presenter(mut self, open: Arc<dyn AuthorizationPresenter>) -> Self {
        self.open = open;
        self
    }

    /// Sets the per-step timeout.
    pub fn with_step_timeout(mut self, timeout: Duration) -> Self {
        self.step_timeout = timeout;
        self
    }

    /// Sets the time the human has to authorize.
    pub fn with_authorize_timeout(mut self, timeout: Duration) -> Self {
        self.authorize_timeout = timeout;
        self
    }

    /// Measures token expiry with `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The token directory: the configured one or the default.
    pub fn resolved_token_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.token_dir {
            return Some(dir.clone());
        }
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|home| PathBuf::from(home).join(".config"))
            })?;
        Some(config_home.join("weft").join("oauth"))
    }
}

/// Presenter and clock compare by identity.
impl PartialEq for OAuthConfig {
    fn eq(&self, other: &Self) -> bool {
        self.token_dir == other.token_dir
            && self.redirect_port == other.redirect_port
            && self.client_name == other.client_name
            && self.scopes == other.scopes
            && self.identity == other.identity
            && Arc::ptr_eq(&self.open, &other.open)
            && self.step_timeout == other.step_timeout
            && self.authorize_timeout == other.authorize_timeout
            && Arc::ptr_eq(&self.clock, &other.clock)
    }
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("token_dir", &self.token_dir)
            .field("redirect_port", &self.redirect_port)
            .field("client_name", &self.client_name)
            .field("scopes", &self.scopes)
            .field("identity", &self.identity)
            .field("step_timeout", &self.step_timeout)
            .field("authorize_timeout", &self.authorize_timeout)
            .finish_non_exhaustive()
    }
}

/// An authorization the human has to give in a browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationPrompt {
    /// The toolset asking.
    pub toolset: String,
    /// The MCP server, as shown in messages.
    pub server: String,
    /// The URL to open.
    pub url: String,
}

/// Resolves when the human refuses an authorization (with how they refused
/// it), ending the flow at once; stays pending while they may still
/// authorize. Dropped when the flow ends either way.
pub type Refusal = BoxFuture<'static, ElicitationAction>;

/// Shows the authorization URL to the human (prints it, opens a browser,
/// asks through the run that needs the tool, ...).
pub trait AuthorizationPresenter: Send + Sync {
    /// Called once per authorization; must not block. The future resolves
    /// if the human refuses; a presenter that cannot tell returns [`never_refused`].
    fn present(&self, prompt: &AuthorizationPrompt) -> Refusal;
}

/// The refusal of a presenter that cannot learn of one: the flow waits
/// for the callback until its timeout.
pub fn never_refused() -> Refusal {
    Box::pin(std::future::pending())
}

/// Prints the authorization URL on stderr.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrPresenter;

impl AuthorizationPresenter for StderrPresenter {
    fn present(&self, prompt: &AuthorizationPrompt) -> Refusal {
        eprintln!(
            "toolset `{}`: {} needs authorization; open this URL in a browser:\n  {}",
            prompt.toolset, prompt.server, prompt.url
        );
        never_refused()
    }
}
