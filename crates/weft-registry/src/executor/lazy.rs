//! A registry toolset that connects on first use, for callers that build
//! their toolsets synchronously (agent files): the name is known at once;
//! Redis and the gateway are reached when the runtime first lists the tools.

use async_trait::async_trait;
use tokio::sync::OnceCell;
use weft_core::tool::{ToolError, ToolRequest, ToolSpec};
use weft_tools::{ToolFailure, ToolReply, ToolSet};

use super::{ExecutorConfig, RegistryToolSet};
use crate::conn::Redis;

/// A [`RegistryToolSet`] connected on first use.
pub struct LazyRegistryToolSet {
    name: String,
    redis_url: String,
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
            config,
            inner: OnceCell::new(),
        }
    }

    async fn get(&self) -> Result<&RegistryToolSet, ToolError> {
        self.inner
            .get_or_try_init(|| async {
                let redis = Redis::connect(&self.redis_url).await?;
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
