//! A transport that sees a server's `notifications/tools/list_changed` as
//! it arrives, in order with the messages around it.
//!
//! rmcp hands notifications to the handler on a task of their own, so a
//! call's answer that came after the notification could wake the caller
//! before the handler marked the tools stale, and the next turn would start
//! on the old list. Marking them here, as the message is read, happens
//! before the service loop even sees the answer that follows it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use weft_tools::ToolListNotifier;

use super::handler::Handler;

/// `inner`, marking the connection's tools stale on a list change.
pub(crate) struct Watched<T> {
    inner: T,
    stale: Arc<AtomicBool>,
    notifier: Arc<ToolListNotifier>,
}

impl<T> Watched<T> {
    /// `inner`, telling `handler`'s stale flag and notifier.
    pub(crate) fn new(inner: T, handler: &Handler) -> Self {
        Self {
            inner,
            stale: handler.stale.clone(),
            notifier: handler.notifier.clone(),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(n)) = &message
            && matches!(
                n.notification,
                ServerNotification::ToolListChangedNotification(_)
            )
        {
            self.stale.store(true, Ordering::Release);
            self.notifier.notify();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
