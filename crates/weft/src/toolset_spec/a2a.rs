//! `type = "a2a"` toolsets of agent files: a remote agent reached over
//! A2A, by its Agent Card's URL, offered as one tool `<name>.send` (see
//! `crate::a2a::client`).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use weft_tools::ToolSet;

use crate::a2a::client::A2aToolSet;

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
        Ok(())
    }

    /// The toolset; the card is read on first use.
    pub fn toolset(&self) -> Arc<dyn ToolSet> {
        let ms = self.call_timeout_ms.unwrap_or(DEFAULT_CALL_TIMEOUT_MS);
        Arc::new(A2aToolSet::new(
            &self.name,
            &self.url,
            Duration::from_millis(ms),
        ))
    }
}
