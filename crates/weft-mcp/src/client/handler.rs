//! The client side of one MCP connection: what weft tells a server about
//! itself, and what it does with the server's notifications and requests
//! (tool-list changes mark the cached list stale, as the transport
//! reads them, see [`super::watch`]; elicitations go to the call
//! that asked, see [`super::elicit`]; progress and log notifications to the
//! output of the call they belong to, see [`super::progress`]).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

// Logging is deprecated by a draft of the spec (SEP-2577); released
// versions' servers still send it.
#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use weft_tools::ToolListNotifier;

use super::elicit::{self, Fallback, InFlight};
use super::progress::Listeners;
use super::stderr::StderrTail;

/// Handles one connection's server-to-client traffic.
#[derive(Clone)]
pub(crate) struct Handler {
    /// Set when the server said its tools changed; cleared by the re-list.
    pub(crate) stale: Arc<AtomicBool>,
    /// Tells the toolset's subscribers.
    pub(crate) notifier: Arc<ToolListNotifier>,
    /// The calls in flight on this connection, for elicitations.
    pub(crate) calls: Arc<InFlight>,
    /// The calls in flight, for progress and log notifications.
    pub(crate) listeners: Arc<Listeners>,
    /// The toolset's handler for elicitations no call can take.
    fallback: Fallback,
    /// A stdio server's last stderr lines, for the errors.
    pub(crate) stderr: Arc<StderrTail>,
}

impl Handler {
    pub(crate) fn new(notifier: Arc<ToolListNotifier>, fallback: Fallback) -> Self {
        Self {
            stale: Arc::new(AtomicBool::new(false)),
            notifier,
            calls: Arc::default(),
            listeners: Arc::default(),
            fallback,
            stderr: Arc::default(),
        }
    }
}

impl ClientHandler for Handler {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.listeners.progress(&params);
        std::future::ready(())
    }

    #[allow(deprecated)]
    fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.listeners.log(&params);
        std::future::ready(())
    }

    fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<ElicitResult, ErrorData>> + Send + '_ {
        let origin = context.extensions.get::<InboundStreamOrigin>().cloned();
        elicit::answer(&self.calls, &self.fallback, request, origin)
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicit::capability());
        ClientConfig::new(
            capabilities,
            Implementation::new("weft", env!("CARGO_PKG_VERSION")),
        )
    }
}
