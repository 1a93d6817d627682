//! Elicitation: a running tool asking the human for input mid-call (MCP's
//! `elicitation/create`). The tool calls the [`Elicitor`] attached to its
//! [`crate::tool::ToolRequest`]; the runtime turns the request into an await
//! item of the run and completes the returned future with the human's
//! answer. A detached elicitor (the default) answers every request with
//! [`ElicitationError::Detached`].
//!
//! This module has no async runtime: the elicitor hands back a boxed future
//! (`futures-core`), which whoever attached it completes.

use std::fmt;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a tool asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationRequest {
    /// What the tool asks, in words.
    pub message: String,
    /// A form to fill in, or a URL to open.
    #[serde(flatten)]
    pub mode: ElicitationMode,
}

impl ElicitationRequest {
    /// A form: `requested_schema` is a flat JSON Schema object of primitive properties.
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        Self {
            message: message.into(),
            mode: ElicitationMode::Form { requested_schema },
        }
    }

    /// A URL the human opens (out of band) before accepting.
    pub fn url(
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: impl Into<String>,
    ) -> Self {
        Self {
            message: message.into(),
            mode: ElicitationMode::Url {
                url: url.into(),
                elicitation_id: elicitation_id.into(),
            },
        }
    }
}

/// How the human answers: by filling in a form, or by visiting a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationMode {
    /// Typed questions: one property of the schema per answer field.
    Form {
        /// JSON Schema (`type: object`, flat primitive `properties`, `required`).
        requested_schema: Value,
    },
    /// A URL to open; the interaction happens there.
    Url {
        /// Where to go.
        url: String,
        /// The server's id for this elicitation (may be empty).
        #[serde(default)]
        elicitation_id: String,
    },
}

/// What the human did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    /// Answered (a form's content, or done at the URL).
    Accept,
    /// Refused to answer.
    Decline,
    /// Dismissed the request without choosing.
    Cancel,
}

impl fmt::Display for ElicitationAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElicitationAction::Accept => "accept",
            ElicitationAction::Decline => "decline",
            ElicitationAction::Cancel => "cancel",
        })
    }
}

/// The answer a tool gets back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationResponse {
    /// What the human did.
    pub action: ElicitationAction,
    /// The form's content, for an accepted form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

impl ElicitationResponse {
    /// Accepted, with `content` (a form's fields; `None` for a URL).
    pub fn accept(content: Option<Value>) -> Self {
        Self {
            action: ElicitationAction::Accept,
            content,
        }
    }

    /// Declined.
    pub fn decline() -> Self {
        Self {
            action: ElicitationAction::Decline,
            content: None,
        }
    }

    /// Cancelled.
    pub fn cancel() -> Self {
        Self {
            action: ElicitationAction::Cancel,
            content: None,
        }
    }
}

/// Why an elicitation got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElicitationError {
    /// The call has no one to ask (a detached elicitor).
    #[error("no one can answer elicitations for this call")]
    Detached,
    /// The run refused the request (too many pending, the call is not running, ...).
    #[error("elicitation refused: {0}")]
    Refused(String),
    /// The request was withdrawn before an answer: the call or the run ended.
    #[error("the elicitation was withdrawn before it was answered")]
    Withdrawn,
}

/// The future an [`Elicitor`] returns.
pub type ElicitFuture = BoxFuture<'static, Result<ElicitationResponse, ElicitationError>>;

/// Receives a tool's elicitation requests.
pub type ElicitFn = dyn Fn(ElicitationRequest) -> ElicitFuture + Send + Sync;

/// Where a running tool sends elicitation requests; cheap to clone.
#[derive(Clone, Default)]
pub struct Elicitor(Option<Arc<ElicitFn>>);

impl Elicitor {
    /// An elicitor that hands every request to `f`.
    pub fn new(f: impl Fn(ElicitationRequest) -> ElicitFuture + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(f)))
    }

    /// An elicitor that answers every request with [`ElicitationError::Detached`].
    pub fn detached() -> Self {
        Self(None)
    }

    /// Whether requests go anywhere.
    pub fn is_attached(&self) -> bool {
        self.0.is_some()
    }

    /// Asks; resolves when the human answers (or the request is refused or withdrawn).
    pub fn elicit(&self, request: ElicitationRequest) -> ElicitFuture {
        match &self.0 {
            Some(f) => f(request),
            None => Box::pin(std::future::ready(Err(ElicitationError::Detached))),
        }
    }
}

impl fmt::Debug for Elicitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_attached() {
            "Elicitor(attached)"
        } else {
            "Elicitor(detached)"
        })
    }
}

/// Elicitors never make two requests differ: equality is about the call.
impl PartialEq for Elicitor {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn block_on<T>(f: BoxFuture<'static, T>) -> T {
        // The futures here are ready at once; poll them with a no-op waker.
        let mut f = f;
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("future not ready"),
        }
    }

    #[test]
    fn detached_refuses_and_attached_forwards() {
        let request = ElicitationRequest::form("name?", json!({"type": "object"}));
        assert_eq!(
            block_on(Elicitor::detached().elicit(request.clone())),
            Err(ElicitationError::Detached)
        );
        let e = Elicitor::new(|r: ElicitationRequest| {
            Box::pin(std::future::ready(Ok(ElicitationResponse::accept(Some(
                json!({"message": r.message}),
            ))))) as ElicitFuture
        });
        assert_eq!(
            block_on(e.elicit(request)),
            Ok(ElicitationResponse::accept(Some(
                json!({"message": "name?"})
            )))
        );
        assert_eq!(format!("{e:?}"), "Elicitor(attached)");
        assert_eq!(e, Elicitor::detached());
    }

    #[test]
    fn wire_shapes() {
        let form = ElicitationRequest::form("name?", json!({"type": "object"}));
        assert_eq!(
            serde_json::to_value(&form).unwrap(),
            json!({"message": "name?", "mode": "form", "requested_schema": {"type": "object"}})
        );
        let url = ElicitationRequest::url("go", "https://x.test/a", "e1");
        let wire = serde_json::to_value(&url).unwrap();
        assert_eq!(
            wire,
            json!({"message": "go", "mode": "url", "url": "https://x.test/a", "elicitation_id": "e1"})
        );
        assert_eq!(
            serde_json::from_value::<ElicitationRequest>(wire).unwrap(),
            url
        );
        assert_eq!(
            serde_json::to_value(ElicitationResponse::decline()).unwrap(),
            json!({"action": "decline"})
        );
    }
}
