//! The OAuth client's identity: the grant it uses ([`Grant`]), a client id
//! registered with the authorization server beforehand, and the secret
//! ([`SecretSource`]) or private key ([`PrivateKey`]) it proves that id
//! with. Secrets are read when needed, from a file or an environment
//! variable, never kept in a configuration file, and never shown.

use std::fmt;
use std::path::{Path, PathBuf};

use super::error::OAuthFlowError;

/// The largest secret or key file read.
const MAX_SECRET_BYTES: u64 = 64 * 1024;

/// How weft gets its tokens (`authorization_code` or `client_credentials`
/// in a configuration file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A human authorizes in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// No human: the client authenticates as itself (client credentials);
    /// needs a client id and a secret or private key.
    ClientCredentials,
}

/// Where a client secret is read from.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// The contents of this file (one trailing newline removed).
    File(PathBuf),
    /// The value of this environment variable.
    Env(String),
}

impl SecretSource {
    /// Reads the secret.
    pub fn read(&self) -> Result<String, OAuthFlowError> {
        let secret = match self {
            SecretSource::File(path) => read_file(path, "client secret")?,
            SecretSource::Env(name) => std::env::var(name).map_err(|e| {
                OAuthFlowError::credentials(format!(
                    "client secret: environment variable `{name}`: {e}"
                ))
            })?,
        };
        let secret = secret.strip_suffix('\n').unwrap_or(&secret);
        let secret = secret.strip_suffix('\r').unwrap_or(secret);
        if secret.is_empty() {
            return Err(OAuthFlowError::credentials(format!(
                "client secret: {self:?} is empty"
            )));
        }
        Ok(secret.to_owned())
    }
}

/// Names the source, never the secret.
impl fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretSource::File(path) => write!(f, "file {}", path.display()),
            SecretSource::Env(name) => write!(f, "environment variable `{name}`"),
        }
    }
}

/// A private key the client signs its RFC 7523 assertions (`private_key_jwt`) with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateKey {
    /// The PEM file of the key (PKCS#8; PKCS#1 also for RSA).
    pub file: PathBuf,
    /// The JWS algorithm (`ES256`, `RS256`, ...); `None` for the first one
    /// the server lists that weft signs with, else `ES256`.
    pub algorithm: Option<String>,
}

impl PrivateKey {
    /// The key file's PEM text.
    pub fn read_pem(&self) -> Result<String, OAuthFlowError> {
        read_file(&self.file, "private key")
    }
}

/// The client's registration with the authorization server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientIdentity {
    /// How tokens are obtained.
    pub grant: Grant,
    /// A client id issued beforehand; with one, no dynamic registration.
    pub client_id: Option<String>,
    /// The client secret (`client_secret_basic` or `client_secret_post`).
    pub secret: Option<SecretSource>,
    /// The private key (`private_key_jwt`).
    pub private_key: Option<PrivateKey>,
}

impl ClientIdentity {
    /// Checks that the settings fit together.
    pub fn validate(&self) -> Result<(), OAuthFlowError> {
        if self.secret.is_some() && self.private_key.is_some() {
            return Err(OAuthFlowError::credentials(
                "set a client secret or a private key, not both",
            ));
        }
        if self.client_id.is_none() && (self.secret.is_some() || self.private_key.is_some()) {
            return Err(OAuthFlowError::credentials(
                "a client secret or private key needs a `client_id`",
            ));
        }
        if self.private_key.is_some() && self.grant != Grant::ClientCredentials {
            return Err(OAuthFlowError::credentials(
                "a private key (private_key_jwt) is used with the client_credentials grant only",
            ));
        }
        if self.grant == Grant::ClientCredentials
            && (self.client_id.is_none() || (self.secret.is_none() && self.private_key.is_none()))
        {
            return Err(OAuthFlowError::credentials(
                "the client_credentials grant needs a `client_id` and a client secret or private key",
            ));
        }
        Ok(())
    }
}

fn read_file(path: &Path, what: &str) -> Result<String, OAuthFlowError> {
    use std::io::Read;
    let fail = |e: &dyn fmt::Display| {
        OAuthFlowError::credentials(format!("{what}: cannot read {}: {e}", path.display()))
    };
    let file = std::fs::File::open(path).map_err(|e| fail(&e))?;
    let mut text = String::new();
    file.take(MAX_SECRET_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| fail(&e))?;
    if text.len() as u64 > MAX_SECRET_BYTES {
        return Err(fail(&format!("larger than {MAX_SECRET_BYTES} bytes")));
    }
    Ok(text)
}
