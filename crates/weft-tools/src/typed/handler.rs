//! Type erasure for typed tool handlers: argument decoding, error conversion
//! and the boxed handler a [`super::FnToolSet`] stores.

// `ToolFailure` is large, but the `ToolSet` contract returns it by value, so
// boxing it here would only add a copy on the way out.
#![allow(clippy::result_large_err)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use weft_core::tool::{
    FieldIssue, FieldIssueKind, RetryHintProvider, ToolError, ToolErrorCode, ToolIdent, ToolRequest,
};

use crate::schema::{ArgsValidator, invalid_arguments};
use crate::toolset::{ToolFailure, ToolReply};

/// The future a stored handler returns.
pub(crate) type HandlerFuture =
    Pin<Box<dyn Future<Output = Result<ToolReply, ToolFailure>> + Send>>;

/// A stored handler: takes the request, whose payload is validated and normalized.
pub(crate) type ErasedHandler = Arc<dyn Fn(ToolRequest) -> HandlerFuture + Send + Sync>;

/// Converts a handler's error into a [`ToolFailure`].
///
/// Implemented for [`ToolError`] (no retry hint), [`ToolFailure`], and every
/// [`DomainError`], whose [`RetryHintProvider::retry_hint`] becomes the
/// failure's hint.
pub trait IntoToolFailure {
    /// The failure to report.
    fn into_tool_failure(self) -> ToolFailure;
}

/// Marks a domain error type whose failures become [`ToolFailure`]s with its
/// retry hint: implement [`std::error::Error`], [`RetryHintProvider`] and
/// this marker (`impl DomainError for MyError {}`).
///
/// The marker exists because `weft-core` does not implement
/// `RetryHintProvider` for `ToolError`, so a blanket impl over every
/// `Error + RetryHintProvider` would conflict with the one for `ToolError`.
pub trait DomainError: std::error::Error + RetryHintProvider {
    /// The error's code in the resulting [`ToolError`].
    fn code(&self) -> ToolErrorCode {
        ToolError::INTERNAL
    }
}

impl IntoToolFailure for ToolError {
    fn into_tool_failure(self) -> ToolFailure {
        ToolFailure::from(self)
    }
}

impl IntoToolFailure for ToolFailure {
    fn into_tool_failure(self) -> ToolFailure {
        self
    }
}

impl<E: DomainError> IntoToolFailure for E {
    fn into_tool_failure(self) -> ToolFailure {
        ToolFailure {
            error: ToolError::from_error(self.code(), &self),
            retry_hint: self.retry_hint(),
        }
    }
}

/// Decodes the handler's argument type, reporting a failure at the field that did not fit.
pub(crate) fn decode<A: DeserializeOwned>(
    tool: &ToolIdent,
    payload: &Value,
) -> Result<A, ToolFailure> {
    // Tracking the path allocates for every field; it is only needed to say
    // where decoding failed, so a failure decodes again with it.
    if let Ok(args) = A::deserialize(payload) {
        return Ok(args);
    }
    serde_path_to_error::deserialize(payload).map_err(|e| {
        let field = pointer(e.path());
        let issue = FieldIssue {
            field,
            kind: FieldIssueKind::Invalid,
            message: e.inner().to_string(),
        };
        invalid_arguments(tool, payload, vec![issue], None)
    })
}

/// Turns a serializable handler result into a JSON reply.
pub(crate) fn json_reply<R: Serialize>(value: &R) -> Result<ToolReply, ToolFailure> {
    serde_json::to_value(value)
        .map(ToolReply::json)
        .map_err(|e| {
            ToolFailure::from(ToolError::new(
                ToolError::INTERNAL,
                format!("the tool's result could not be serialized: {e}"),
            ))
        })
}

/// Validates `payload`, then normalizes it in place (`{}` in place of `null`).
pub(crate) fn checked_payload(
    validator: &ArgsValidator,
    tool: &ToolIdent,
    payload: &mut Arc<Value>,
) -> Result<(), ToolFailure> {
    match validator.validate(payload) {
        Ok(()) => {
            if payload.is_null() {
                *payload = Arc::new(validator.normalize(Value::Null));
            }
            Ok(())
        }
        Err(issues) => Err(validator.failure(tool, payload, issues)),
    }
}

/// The JSON pointer of a serde path.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                out = crate::schema::join_pointer(&out, key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        items: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        n: u8,
    }

    #[test]
    fn decode_errors_point_at_the_field() {
        let tool = ToolIdent::from("t.x");
        let failure =
            decode::<Outer>(&tool, &json!({"items": [{"n": 1}, {"n": 300}]})).unwrap_err();
        assert_eq!(failure.error.code, ToolError::INVALID_ARGUMENTS);
        assert_eq!(failure.error.field_issues[0].field, "/items/1/n");
    }
}
