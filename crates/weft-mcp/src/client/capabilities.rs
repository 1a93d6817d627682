//! The capabilities [`McpToolSet`] answers for: its lifecycle, its
//! elicitation fallback and its user-safe description.

use std::sync::{Arc, PoisonError};

use async_trait::async_trait;
use weft_core::tool::ToolError;
use weft_tools::{ElicitationHandler, ElicitationSupport, Lifecycle, PublicDescription};

use super::McpToolSet;

impl ElicitationSupport for McpToolSet {
    fn set_elicitation_handler(&self, handler: Option<Arc<dyn ElicitationHandler>>) {
        *self.fallback.lock().unwrap_or_else(PoisonError::into_inner) = handler;
    }
}

#[async_trait]
impl Lifecycle for McpToolSet {
    async fn start(&self) -> Result<(), ToolError> {
        self.ensure().await.map(drop).map_err(Into::into)
    }

    async fn stop(&self) -> Result<(), ToolError> {
        let _restarts = self.gate.lock().await;
        let live = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(live) = live {
            live.session.cancellation_token().cancel();
        }
        Ok(())
    }
}

impl PublicDescription for McpToolSet {
    fn public_description_text(&self) -> String {
        format!(
            "MCP server {} (toolset `{}`)",
            self.config.transport.describe(),
            self.config.name
        )
    }
}
