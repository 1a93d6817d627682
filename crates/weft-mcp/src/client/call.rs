//! One `tools/call` on a connection, sent so its progress can be told
//! apart: the request's progress token (which rmcp assigns) is known
//! before the answer comes, so the call's output listens for it
//! ([`super::progress`]). A call abandoned before its answer (a timeout, a
//! cancelled run) tells the server with `notifications/cancelled`, as
//! rmcp's own `call_tool` does.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use weft_core::tool::OutputSink;

use super::elicit::Entered;
use super::progress::Listeners;
use crate::error::McpError;

/// Sends `params` and waits for the result; the server's progress goes to
/// `output`, and `entered` learns the request's id (for the server's
/// elicitations).
pub(crate) async fn call(
    peer: &Peer<RoleClient>,
    listeners: &std::sync::Arc<Listeners>,
    params: CallToolRequestParams,
    output: &OutputSink,
    entered: &Entered,
) -> Result<CallToolResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    entered.sent(&handle.id);
    let _listening = listeners.listen(&handle.progress_token, output);
    let mut abandoned = Abandoned {
        peer,
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    abandoned.id = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A failed call as the toolset's error.
pub(crate) fn error(toolset: &str, tool: &str, error: ServiceError) -> McpError {
    let toolset = toolset.to_owned();
    let tool = tool.to_owned();
    match error {
        ServiceError::McpError(e) => McpError::Remote {
            toolset,
            tool,
            code: e.code.0,
            message: e.message.to_string(),
        },
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => McpError::Closed {
            toolset,
            tool,
            detail: String::new(),
        },
        ServiceError::Timeout { timeout } => McpError::CallTimeout {
            toolset,
            tool,
            after: timeout,
        },
        other => McpError::Malformed {
            toolset,
            tool,
            message: other.to_string(),
        },
    }
}

/// Tells the server a call nobody waits for any more is cancelled.
struct Abandoned<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let reason = Some("request abandoned by the caller".to_owned());
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                    .await;
            });
        }
    }
}
