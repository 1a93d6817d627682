//! A server's `elicitation/create` on one connection: the calls in flight
//! with their [`Elicitor`]s, and the answer to the server.
//!
//! A request goes to the call that asked for it, never to another run's:
//! - over streamable HTTP a server sends it on the response stream of the
//!   `tools/call` it belongs to, and rmcp marks it with that request's id
//!   ([`InboundStreamOrigin`]); it goes to that call's elicitor;
//! - otherwise (stdio, or the standalone stream) the request names no call:
//!   it goes to the most recent call in flight when every call in flight
//!   belongs to one run, and is declined when calls of several runs are in
//!   flight, since it cannot be told whose it is.
//!
//! A request no call takes (none in flight, or its call's elicitor is
//! detached) goes to the toolset's handler (`ElicitationSupport`) when one
//! is set, and is declined otherwise, as is a request this client cannot
//! present. A request the run refuses (too many pending) or withdraws (the
//! call ended) is a JSON-RPC error. An accepted form's content leaves with
//! the defaults of the fields it leaves out, and only if it fits the
//! requested schema.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction as McpAction, ElicitationCapability,
    FormElicitationCapability, RequestId, UrlElicitationCapability,
};
use rmcp::service::InboundStreamOrigin;
use serde_json::Value;
use tokio::sync::Notify;
use weft_core::awaiting::complete_form;
use weft_core::elicitation::{
    ElicitationAction, ElicitationError, ElicitationMode, ElicitationRequest, ElicitationResponse,
    Elicitor,
};
use weft_core::ids::RunId;
use weft_tools::ElicitationHandler;

/// The longest a request marked with a call's id waits for that call to
/// learn its id (rmcp gives it when the request is queued, before the
/// server can see it, so this wait is a formality).
const SENT_WAIT: Duration = Duration::from_secs(5);

/// The toolset-wide fallback handler, shared with each connection.
pub(crate) type Fallback = Arc<Mutex<Option<Arc<dyn ElicitationHandler>>>>;

/// The calls in flight on one connection, oldest first.
#[derive(Default)]
pub(crate) struct InFlight {
    next: AtomicU64,
    calls: Mutex<Vec<Call>>,
    /// Wakes requests waiting for a call to learn its request id.
    sent: Notify,
}

struct Call {
    key: u64,
    /// The `tools/call` request's id, once rmcp has given it.
    request: Option<RequestId>,
    run: RunId,
    elicitor: Elicitor,
}

/// A call's place in [`InFlight`]; leaves it when dropped.
pub(crate) struct Entered {
    calls: Arc<InFlight>,
    key: u64,
}

/// Where a request goes.
enum Route {
    /// To this call's elicitor.
    Call(Elicitor),
    /// To the toolset's handler: no call takes it.
    Unclaimed,
    /// Declined: calls of several runs are in flight and it names none.
    Ambiguous,
}

impl InFlight {
    /// Records a call of `run` that asks through `elicitor` until the guard
    /// drops; [`Entered::sent`] gives it its request id.
    pub(crate) fn enter(self: &Arc<Self>, run: RunId, elicitor: Elicitor) -> Entered {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Call {
            key,
            request: None,
            run,
            elicitor,
        });
        Entered {
            calls: self.clone(),
            key,
        }
    }

    async fn route(&self, origin: Option<&InboundStreamOrigin>) -> Route {
        match origin {
            Some(InboundStreamOrigin::OutboundRequest(id)) => self.by_request(id).await,
            _ => self.alone(),
        }
    }

    /// The call sent as request `id`, waiting (bounded) while a call in
    /// flight has not learnt its id yet.
    async fn by_request(&self, id: &RequestId) -> Route {
        let deadline = tokio::time::Instant::now() + SENT_WAIT;
        loop {
            let notified = self.sent.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let calls = self.lock();
                if let Some(call) = calls.iter().find(|c| c.request.as_ref() == Some(id)) {
                    return if call.elicitor.is_attached() {
                        Route::Call(call.elicitor.clone())
                    } else {
                        Route::Unclaimed
                    };
                }
                if calls.iter().all(|c| c.request.is_some()) {
                    return Route::Unclaimed;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Route::Unclaimed;
            }
        }
    }

    /// For a request that names no call: the latest call when all calls in
    /// flight are one run's.
    fn alone(&self) -> Route {
        let calls = self.lock();
        let Some(last) = calls.last() else {
            return Route::Unclaimed;
        };
        if calls.iter().any(|c| c.run != last.run) {
            return Route::Ambiguous;
        }
        match calls.iter().rev().find(|c| c.elicitor.is_attached()) {
            Some(call) => Route::Call(call.elicitor.clone()),
            None => Route::Unclaimed,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Call>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entered {
    /// Records the request id rmcp gave the call.
    pub(crate) fn sent(&self, id: &RequestId) {
        if let Some(call) = self.calls.lock().iter_mut().find(|c| c.key == self.key) {
            call.request = Some(id.clone());
        }
        self.calls.sent.notify_waiters();
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.calls.lock().retain(|c| c.key != self.key);
        self.calls.sent.notify_waiters();
    }
}

/// What this client tells servers it can elicit: forms (whose answers it
/// checks against the schema) and URLs.
pub(crate) fn capability() -> ElicitationCapability {
    ElicitationCapability::new()
        .with_form(FormElicitationCapability::new().with_schema_validation(true))
        .with_url(UrlElicitationCapability::new())
}

/// Answers a server's elicitation request.
pub(crate) async fn answer(
    calls: &InFlight,
    fallback: &Fallback,
    params: ElicitRequestParams,
    origin: Option<InboundStreamOrigin>,
) -> Result<ElicitResult, ErrorData> {
    let Some(request) = request_of(params) else {
        return Ok(ElicitResult::new(McpAction::Decline));
    };
    let schema = match &request.mode {
        ElicitationMode::Form { requested_schema } => Some(requested_schema.clone()),
        ElicitationMode::Url { .. } => None,
    };
    let response = match calls.route(origin.as_ref()).await {
        Route::Call(elicitor) => elicitor.elicit(request).await,
        Route::Ambiguous => {
            tracing::warn!(
                message = %request.message,
                "an elicitation that names no call came while calls of several runs \
                 were in flight on one connection; declined"
            );
            return Ok(ElicitResult::new(McpAction::Decline));
        }
        Route::Unclaimed => {
            let handler = fallback
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            match handler {
                Some(h) => h
                    .elicit(request)
                    .await
                    .map_err(|e| ElicitationError::Refused(e.message)),
                None => Err(ElicitationError::Detached),
            }
        }
    };
    match response {
        Ok(r) => checked(schema.as_ref(), r).map(result_of),
        Err(ElicitationError::Detached) => Ok(ElicitResult::new(McpAction::Decline)),
        Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
    }
}

fn request_of(params: ElicitRequestParams) -> Option<ElicitationRequest> {
    match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => {
            let schema = serde_json::to_value(requested_schema).ok()?;
            Some(ElicitationRequest::form(message, schema))
        }
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => Some(ElicitationRequest::url(message, url, elicitation_id)),
        _ => None,
    }
}

/// An accepted form's content with its defaults, checked against the
/// schema once more (a toolset handler's answer is checked only here); a
/// content that does not fit never reaches the server.
fn checked(
    schema: Option<&Value>,
    mut response: ElicitationResponse,
) -> Result<ElicitationResponse, ErrorData> {
    let (Some(schema), ElicitationAction::Accept) = (schema, response.action) else {
        return Ok(response);
    };
    let content = response.content.take().unwrap_or(Value::Null);
    match complete_form(schema, &content) {
        Ok(content) => {
            response.content = Some(content);
            Ok(response)
        }
        Err(e) => Err(ErrorData::internal_error(
            format!("the elicitation's answer does not fit its form: {e}"),
            None,
        )),
    }
}

fn result_of(response: ElicitationResponse) -> ElicitResult {
    match response.action {
        ElicitationAction::Accept => {
            let result = ElicitResult::new(McpAction::Accept);
            match response.content {
                Some(content) => result.with_content(content),
                None => result,
            }
        }
        ElicitationAction::Decline => ElicitResult::new(McpAction::Decline),
        ElicitationAction::Cancel => ElicitResult::new(McpAction::Cancel),
    }
}
