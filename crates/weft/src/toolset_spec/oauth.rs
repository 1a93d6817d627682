//! The `[toolsets.oauth]` table of an HTTP MCP toolset: where tokens go,
//! the grant, a pre-registered client with its secret or key, and how many
//! tenants' connections stay open.

use std::path::PathBuf;

use serde::Deserialize;
use weft_mcp::OAuthConfig;
use weft_mcp::oauth::{ClientIdentity, Grant, PrivateKey, SecretSource};

/// The `oauth` table of an HTTP MCP toolset; every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthSpec {
    /// Where token files go (default `$XDG_CONFIG_HOME/weft/oauth` or `~/.config/weft/oauth`).
    #[serde(default)]
    pub token_dir: Option<PathBuf>,
    /// The loopback callback port on 127.0.0.1 (default: any free port).
    #[serde(default)]
    pub redirect_port: u16,
    /// The client name sent in dynamic client registration (default `weft`).
    #[serde(default)]
    pub client_name: Option<String>,
    /// The scopes to ask for (default: the ones the server suggests).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// `authorization_code` (default: a human authorizes in a browser) or
    /// `client_credentials` (no human; needs `client_id` and a secret or key).
    #[serde(default)]
    pub grant: Grant,
    /// A client id registered beforehand; with one, no dynamic registration.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The file holding the client secret.
    #[serde(default)]
    pub client_secret_file: Option<PathBuf>,
    /// The environment variable holding the client secret.
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// The PEM private key for `private_key_jwt` (client_credentials only).
    #[serde(default)]
    pub private_key_file: Option<PathBuf>,
    /// The key's JWS algorithm (default: the first the server lists, else ES256).
    #[serde(default)]
    pub signing_algorithm: Option<String>,
    /// How many tenants' connections `weft serve` keeps open at once
    /// (default 64); each tenant has its own tokens.
    #[serde(default)]
    pub max_tenants: Option<usize>,
}

impl McpOAuthSpec {
    /// The OAuth settings; the authorization URL is printed on stderr. The
    /// message says which keys do not fit together.
    pub fn config(&self) -> Result<OAuthConfig, String> {
        let mut config = OAuthConfig::default()
            .with_redirect_port(self.redirect_port)
            .with_scopes(self.scopes.iter().cloned());
        config.token_dir = self.token_dir.clone();
        if let Some(name) = &self.client_name {
            config = config.with_client_name(name.clone());
        }
        config.identity = ClientIdentity {
            grant: self.grant,
            client_id: self.client_id.clone(),
            secret: match (&self.client_secret_file, &self.client_secret_env) {
                (Some(_), Some(_)) => {
                    return Err("set `client_secret_file` or `client_secret_env`, not both".into());
                }
                (Some(file), None) => Some(SecretSource::File(file.clone())),
                (None, Some(name)) => Some(SecretSource::Env(name.clone())),
                (None, None) => None,
            },
            private_key: self.private_key_file.clone().map(|file| PrivateKey {
                file,
                algorithm: self.signing_algorithm.clone(),
            }),
        };
        config.identity.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }
}
