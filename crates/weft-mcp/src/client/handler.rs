//! The client side of one MCP connection: what weft tells a server about
//! itself, and what it does with the server's notifications and requests
//! (tool-list changes mark the cached list stale).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient};
use weft_tools::ToolListNotifier;

/// Handles one connection's server-to-client traffic.
#[derive(Clone)]
pub(crate) struct Handler {
    /// Set when the server said its tools changed; cleared by the re-list.
    pub(crate) stale: Arc<AtomicBool>,
    /// Tells the toolset's subscribers.
    pub(crate) notifier: Arc<ToolListNotifier>,
}

impl Handler {
    pub(crate) fn new(notifier: Arc<ToolListNotifier>) -> Self {
        Self {
            stale: Arc::new(AtomicBool::new(false)),
            notifier,
        }
    }
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.stale.store(true, Ordering::Release);
        self.notifier.notify();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("weft", env!("CARGO_PKG_VERSION")),
        )
    }
}
