//! `type = "a2a"` toolsets of agent files: a remote agent reached over
//! A2A, by its Agent Card's URL, offered as one tool `<name>.send` (see
//! `crate::a2a::client`), with the secrets its card may ask for.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use weft_tools::ToolSet;

use crate::a2a::client::A2aToolSet;
use crate::a2a::client::auth::{SecretSource, Secrets};

/// How long one call waits for the remote agent by default (10 minutes).
const DEFAULT_CALL_TIMEOUT_MS: u64 = 600_000;

/// `type = "a2a"`: a remote A2A agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aSpec {
    /// The toolset's name (its tool is `<name>.send`).
    pub name: String,
    /// The Agent Card's URL, or the agent's base URL (the card is then at
    /// `/.well-known/agent-card.json`).
    pub url: String,
    /// How long one call may wait for the agent's answer, in milliseconds.
    #[serde(default)]
    pub call_timeout_ms: Option<u64>,
    /// Whether `weft run` may go on without the agent when its card cannot
    /// be read (with a warning); by default it stops before the first turn.
    #[serde(default)]
    pub optional: bool,
    /// The environment variable holding the bearer token, for a card that
    /// asks for HTTP bearer authentication.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The file holding the bearer token (instead of `token_env`).
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The environment variable holding the API key, for a card that asks
    /// for one (in a header or the query, as the card says).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The file holding the API key (instead of `api_key_env`).
    #[serde(default)]
    pub api_key_file: Option<PathBuf>,
}

impl A2aSpec {
    pub(super) fn check(&self) -> Result<(), String> {
        if self.name.trim().is_empty() || self.name.contains('.') {
            return Err(format!(
                "A2A toolset name `{}` must be non-empty and without dots",
                self.name
            ));
        }
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(format!(
                "A2A toolset `{}`: `url` must be an http:// or https:// URL",
                self.name
            ));
        }
        if self.token_env.is_some() && self.token_file.is_some() {
            return Err(format!(
                "A2A toolset `{}`: give `token_env` or `token_file`, not both",
                self.name
            ));
        }
        if self.api_key_env.is_some() && self.api_key_file.is_some() {
            return Err(format!(
                "A2A toolset `{}`: give `api_key_env` or `api_key_file`, not both",
                self.name
            ));
        }
        Ok(())
    }

    /// Where the secrets are read from (when the card asks for them).
    fn secrets(&self) -> Secrets {
        let source = |env: &Option<String>, file: &Option<PathBuf>| {
            env.clone()
                .map(SecretSource::Env)
                .or_else(|| file.clone().map(SecretSource::File))
        };
        Secrets {
            token: source(&self.token_env, &self.token_file),
            api_key: source(&self.api_key_env, &self.api_key_file),
        }
    }

    /// The toolset; the card is read on first use.
    pub fn toolset(&self) -> Arc<dyn ToolSet> {
        let ms = self.call_timeout_ms.unwrap_or(DEFAULT_CALL_TIMEOUT_MS);
        Arc::new(A2aToolSet::new(
            &self.name,
            &self.url,
            Duration::from_millis(ms),
            self.secrets(),
        ))
    }
}
