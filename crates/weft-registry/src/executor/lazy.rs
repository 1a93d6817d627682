//! A registry toolset that connects on first use, for callers that build
//! their toolsets synchronously (agent files): the name is known at once;
//! Redis (with its CA file, for `rediss://`) and the gateway are reached
//! when the runtime first lists the tools.

use async_trait::async_trait;
use tokio::sync::OnceCell;
use weft_core::tool::{ToolError, ToolRequest, ToolSpec};
use weft_tools::{ToolFailure, ToolReply, ToolSet};

use super::{ExecutorConfig, RegistryToolSet};
use crate::conn::{Redis, RedisOptions};
use crate::error::RegistryError;

/// A [`RegistryToolSet`] connected on first use.
pub struct LazyRegistryToolSet {
    name: String,
    redis_url: String,
    redis_ca_file: Option<std::path::PathBuf>,
    config: ExecutorConfig,
    inner: OnceCell<RegistryToolSet>,
}

impl LazyRegistryToolSet {
    /// A toolset that will connect to `redis_url` and `config.gateway`.
    pub fn new(redis_url: impl Into<String>, config: ExecutorConfig) -> Self {
        Self {
            name: config
                .alias
                .clone()
                .unwrap_or_else(|| config.toolset.clone()),
            redis_url: redis_url.into(),
            redis_ca_file: None,
            config,
            inner: OnceCell::new(),
        }
    }

    /// Trusts the CA of this PEM file for a `rediss://` Redis.
    pub fn with_redis_ca_file(mut self, path: std::path::PathBuf) -> Self {
        self.redis_ca_file = Some(path);
        self
    }

    async fn get(&self) -> Result<&RegistryToolSet, ToolError> {
        self.inner
            .get_or_try_init(|| async {
                let ca_pem = match &self.redis_ca_file {
                    Some(path) => Some(std::fs::read(path).map_err(|e| {
                        RegistryError::Config(format!(
                            "reading the Redis CA file {}: {e}",
                            path.display()
                        ))
                    })?),
                    None => None,
                };
                let options = RedisOptions {
                    ca_pem,
                    ..RedisOptions::default()
                };
                let redis = Redis::connect_opts(&self.redis_url, options).await?;
                RegistryToolSet::connect(redis, self.config.clone()).await
            })
            .await
            .map_err(|e| {
                ToolError::new(
                    ToolError::UNAVAILABLE,
                    format!("registry toolset `{}`: {e}", self.config.toolset),
                )
            })
    }
}

#[async_trait]
impl ToolSet for LazyRegistryToolSet {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        self.get().await?.list_tools().await
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        self.get()
            .await
            .map_err(ToolFailure::from)?
            .call_tool(request)
            .await
    }
}
