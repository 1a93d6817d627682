//! A server's `elicitation/create` on one connection: the calls in flight
//! with their [`Elicitor`]s, and the answer to the server.
//!
//! MCP does not say which call a request belongs to, so it goes to the most
//! recently started call in flight whose elicitor is attached (the runtime
//! attaches one to every call it makes). With none, the toolset's handler
//! (`ElicitationSupport`) answers when one is set; otherwise, and for a
//! request this client cannot present, the answer is `decline`. A request
//! the run refuses (too many pending) or withdraws (the call ended) is a
//! JSON-RPC error. An accepted form's content leaves with the defaults of
//! the fields it leaves out, and only if it fits the requested schema.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction as McpAction, ElicitationCapability,
    FormElicitationCapability, UrlElicitationCapability,
};
use serde_json::Value;
use weft_core::awaiting::complete_form;
use weft_core::elicitation::{
    ElicitationAction, ElicitationError, ElicitationMode, ElicitationRequest, ElicitationResponse,
    Elicitor,
};
use weft_tools::ElicitationHandler;

/// The toolset-wide fallback handler, shared with each connection.
pub(crate) type Fallback = Arc<Mutex<Option<Arc<dyn ElicitationHandler>>>>;

/// The calls in flight on one connection, oldest first.
#[derive(Default)]
pub(crate) struct InFlight {
    next: AtomicU64,
    calls: Mutex<Vec<(u64, Elicitor)>>,
}

/// A call's place in [`InFlight`]; leaves it when dropped.
pub(crate) struct Entered {
    calls: Arc<InFlight>,
    id: u64,
}

impl InFlight {
    /// Records a call that asks through `elicitor` until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>, elicitor: Elicitor) -> Entered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push((id, elicitor));
        Entered {
            calls: self.clone(),
            id,
        }
    }

    /// The elicitor of the most recently started call that has one.
    fn latest(&self) -> Option<Elicitor> {
        self.lock()
            .iter()
            .rev()
            .find(|(_, e)| e.is_attached())
            .map(|(_, e)| e.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Elicitor)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.calls.lock().retain(|(id, _)| *id != self.id);
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
) -> Result<ElicitResult, ErrorData> {
    let Some(request) = request_of(params) else {
        return Ok(ElicitResult::new(McpAction::Decline));
    };
    let schema = match &request.mode {
        ElicitationMode::Form { requested_schema } => Some(requested_schema.clone()),
        ElicitationMode::Url { .. } => None,
    };
    let response = match calls.latest() {
        Some(elicitor) => elicitor.elicit(request).await,
        None => {
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
