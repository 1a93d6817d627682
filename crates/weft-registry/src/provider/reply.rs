//! Conversions between a weft tool call's outcome and the wire's
//! `ToolResultMessage`, both ways: the provider encodes, the executor decodes.

use serde_json::Value;
use weft_core::tool::{Bounds, RetryHint, RetryReason, ToolError, ToolIdent, ToolResultBody};
use weft_tools::{ToolFailure, ToolReply};

use crate::schema;
use crate::wire::{self, ServerDataItem, ToolResultMessage, WireBounds, WireToolError};

/// The error code of a call that may or may not have taken effect: it was
/// published (or started) and then its result was lost, and its tool is not
/// idempotent, so it is not run again.
pub const OUTCOME_UNKNOWN: &str = "outcome_unknown";

/// The result message for a successful call.
pub fn encode_reply(tool_use_id: &str, reply: &ToolReply) -> ToolResultMessage {
    let result = match &reply.body {
        ToolResultBody::Json(v) => Some(wire::raw(v)),
        ToolResultBody::Content(c) => Some(match &c.structured {
            Some(s) => wire::raw(s),
            None => wire::raw(&serde_json::to_value(c).unwrap_or(Value::Null)),
        }),
        ToolResultBody::Omitted(o) => Some(wire::raw(&Value::String(o.marker()))),
        ToolResultBody::Error(e) => {
            return encode_failure(tool_use_id, &ToolFailure::from(e.clone()));
        }
    };
    ToolResultMessage {
        tool_use_id: tool_use_id.to_owned(),
        result,
        bounds: reply.bounds.as_ref().map(encode_bounds),
        server_data: reply
            .server_data
            .as_ref()
            .map(encode_server_data)
            .unwrap_or_default(),
        error: None,
    }
}

/// The result message for a failed call.
pub fn encode_failure(tool_use_id: &str, failure: &ToolFailure) -> ToolResultMessage {
    ToolResultMessage {
        tool_use_id: tool_use_id.to_owned(),
        error: Some(WireToolError {
            code: failure.error.code.to_string(),
            message: failure.error.message.clone(),
            issues: failure
                .error
                .field_issues
                .iter()
                .map(schema::from_field_issue)
                .collect(),
        }),
        ..Default::default()
    }
}

/// An error result with a code and a message.
pub fn error_result(
    tool_use_id: &str,
    code: impl Into<weft_core::tool::ToolErrorCode>,
    message: impl Into<String>,
) -> ToolResultMessage {
    encode_failure(
        tool_use_id,
        &ToolFailure::from(ToolError::new(code, message)),
    )
}

fn encode_bounds(b: &Bounds) -> WireBounds {
    WireBounds {
        returned: i64::try_from(b.returned).unwrap_or(i64::MAX),
        total: b.total.map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
        truncated: b.truncated,
        next_cursor: b.next_cursor.clone(),
        refinement_hint: b.refinement_hint.clone().unwrap_or_default(),
    }
}

/// Server data: an array of `{kind, audience, data}` items is sent as is;
/// anything else travels as one item of kind `weft`, audience `internal`.
fn encode_server_data(v: &Value) -> Vec<ServerDataItem> {
    if let Ok(items) = serde_json::from_value::<Vec<ItemShape>>(v.clone()) {
        return items
            .into_iter()
            .map(|i| ServerDataItem {
                kind: i.kind,
                audience: i.audience,
                data: Some(wire::raw(&i.data)),
            })
            .collect();
    }
    vec![ServerDataItem {
        kind: "weft".into(),
        audience: "internal".into(),
        data: Some(wire::raw(v)),
    }]
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemShape {
    kind: String,
    audience: String,
    data: Value,
}

/// A result message as the weft outcome of a call to `tool`.
// The error is a `ToolFailure`, as in `ToolSet::call_tool`.
#[allow(clippy::result_large_err)]
pub fn decode_result(tool: &ToolIdent, msg: &ToolResultMessage) -> Result<ToolReply, ToolFailure> {
    if let Some(err) = &msg.error {
        let issues: Vec<_> = err.issues.iter().map(schema::to_field_issue).collect();
        let error = ToolError::new(err.code.clone(), err.message.clone()).with_field_issues(issues);
        let hint = retry_hint(tool, &err.code, &error);
        return Err(ToolFailure {
            error,
            retry_hint: hint,
        });
    }
    let body = match &msg.result {
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| ToolFailure {
            error: ToolError::new(
                ToolError::INTERNAL,
                format!("the provider's result for `{tool}` is not JSON: {e}"),
            ),
            retry_hint: Some(RetryHint::new(RetryReason::MalformedResponse).for_tool(tool.clone())),
        })?,
        None => Value::Null,
    };
    let server_data = match msg.server_data.as_slice() {
        [] => None,
        [one] if one.kind == "weft" && one.audience == "internal" => {
            one.data.as_ref().and_then(|d| serde_json::from_str(d.get()).ok())
        }
        items => Some(Value::Array(
            items
                .iter()
                .map(|i| {
                    serde_json::json!({
                        "kind": i.kind,
                        "audience": i.audience,
                        "data": i.data.as_ref().and_then(|d| serde_json::from_str::<Value>(d.get()).ok()),
                    })
                })
                .collect(),
        )),
    };
    Ok(ToolReply {
        body: ToolResultBody::Json(body),
        server_data,
        bounds: msg.bounds.as_ref().map(|b| Bounds {
            returned: u64::try_from(b.returned).unwrap_or(0),
            total: b.total.and_then(|t| u64::try_from(t).ok()),
            truncated: b.truncated,
            next_cursor: b.next_cursor.clone(),
            refinement_hint: Some(b.refinement_hint.clone()).filter(|h| !h.is_empty()),
        }),
    })
}

/// The retry hint for an error `code` (see the protocol doc's table).
pub fn retry_hint(tool: &ToolIdent, code: &str, error: &ToolError) -> Option<RetryHint> {
    let reason = match code {
        "invalid_arguments" | "validation_error" | "invalid_input" => {
            let missing: Vec<String> = error
                .field_issues
                .iter()
                .filter(|i| i.kind == weft_core::tool::FieldIssueKind::Missing)
                .map(|i| i.field.clone())
                .collect();
            if !missing.is_empty() {
                let mut hint = RetryHint::new(RetryReason::MissingFields).for_tool(tool.clone());
                hint.missing_fields = missing;
                return Some(hint);
            }
            RetryReason::InvalidArguments
        }
        "timeout" => RetryReason::Timeout,
        "rate_limited" => RetryReason::RateLimited,
        "service_unavailable" | "queue_full" | "unknown_toolset" | "tool_unavailable" => {
            RetryReason::ToolUnavailable
        }
        OUTCOME_UNKNOWN => {
            return Some(
                RetryHint::new(RetryReason::ToolUnavailable)
                    .for_tool(tool.clone())
                    .with_message("the call may have taken effect: check before calling it again"),
            );
        }
        _ => return None,
    };
    Some(RetryHint::new(reason).for_tool(tool.clone()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use weft_core::tool::{FieldIssue, FieldIssueKind};

    use super::*;

    #[test]
    fn replies_and_failures_survive_the_wire() {
        let tool = ToolIdent::new("calc.add");
        let reply = ToolReply {
            body: ToolResultBody::Json(json!({"sum": 3})),
            server_data: Some(json!({"chart": [1, 2]})),
            bounds: Some(Bounds {
                returned: 2,
                total: Some(9),
                truncated: true,
                next_cursor: None,
                refinement_hint: Some("less".into()),
            }),
        };
        let msg = encode_reply("u1", &reply);
        let bytes = wire::encode(&msg);
        let back: ToolResultMessage = wire::decode(&bytes).unwrap();
        assert_eq!(decode_result(&tool, &back).unwrap(), reply);

        let failure = ToolFailure::from(
            ToolError::new("invalid_arguments", "bad").with_field_issues(vec![FieldIssue {
                field: "/a".into(),
                kind: FieldIssueKind::Missing,
                message: "missing field".into(),
            }]),
        );
        let msg = encode_failure("u2", &failure);
        let back = decode_result(&tool, &msg).unwrap_err();
        assert_eq!(back.error.code, "invalid_arguments");
        assert_eq!(back.error.field_issues[0].field, "/a");
        let hint = back.retry_hint.unwrap();
        assert_eq!(hint.reason, RetryReason::MissingFields);
        assert_eq!(hint.missing_fields, vec!["/a"]);
        for (code, reason) in [
            ("timeout", RetryReason::Timeout),
            ("rate_limited", RetryReason::RateLimited),
            ("service_unavailable", RetryReason::ToolUnavailable),
            ("queue_full", RetryReason::ToolUnavailable),
            ("validation_error", RetryReason::InvalidArguments),
        ] {
            let e = ToolError::new(code, "x");
            assert_eq!(
                retry_hint(&tool, code, &e).unwrap().reason,
                reason,
                "{code}"
            );
        }
        assert!(retry_hint(&tool, "boom", &ToolError::new("boom", "x")).is_none());
    }
}
