//! JSON-RPC 2.0 as A2A uses it: reading a request (with JSON-RPC's error
//! codes for a body that is not one), and the success and error responses,
//! errors carrying A2A's codes (`TaskNotFound` -32001, ...) and, as the
//! official SDKs send them, a `google.rpc.ErrorInfo` detail naming the
//! reason.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use weft_runtime::RuntimeError;

/// A JSON-RPC error, with an A2A code where A2A has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    /// The code.
    pub code: i64,
    /// What was wrong.
    pub message: String,
    /// The details: one `google.rpc.ErrorInfo` with A2A's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: Some(json!([{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "a2a-protocol.org",
                "metadata": {},
            }])),
        }
    }

    /// -32700: the body is not JSON.
    pub fn parse(message: impl Into<String>) -> Self {
        Self::new(-32700, "PARSE_ERROR", message)
    }

    /// -32600: the JSON is not a JSON-RPC request.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(-32600, "INVALID_REQUEST", message)
    }

    /// -32601: no such method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            -32601,
            "METHOD_NOT_FOUND",
            format!("method `{}` not found", clip(method)),
        )
    }

    /// -32602: the params are not what the method takes.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, "INVALID_PARAMS", message)
    }

    /// -32603: the server failed.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, "INTERNAL_ERROR", message)
    }

    /// -32000 (a server error, as JSON-RPC reserves): a quota of the
    /// caller's is used up, and the message says until when.
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(-32000, "RESOURCE_EXHAUSTED", message)
    }

    /// -32001: no task with this id.
    pub fn task_not_found(id: &str) -> Self {
        Self::new(
            -32001,
            "TASK_NOT_FOUND",
            format!("task `{}` not found", clip(id)),
        )
    }

    /// -32002: the task has ended.
    pub fn not_cancelable(id: &str, state: &str) -> Self {
        Self::new(
            -32002,
            "TASK_NOT_CANCELABLE",
            format!("task `{}` cannot be canceled: it is {state}", clip(id)),
        )
    }

    /// -32003: push notifications are not offered.
    pub fn push_not_supported() -> Self {
        Self::new(
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            "push notifications are not supported; stream or poll the task",
        )
    }

    /// -32004: the operation does not apply.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(-32004, "UNSUPPORTED_OPERATION", message)
    }

    /// -32005: a part's content type is not taken.
    pub fn content_type(message: impl Into<String>) -> Self {
        Self::new(-32005, "CONTENT_TYPE_NOT_SUPPORTED", message)
    }

    /// -32009: the `A2A-Version` header names a version the method is not of.
    pub fn version(asked: &str, method: &str) -> Self {
        Self::new(
            -32009,
            "VERSION_NOT_SUPPORTED",
            format!(
                "A2A version `{}` is not supported by `{method}`: send `A2A-Version: 1.0`",
                clip(asked)
            ),
        )
    }
}

/// A runtime's refusal as a JSON-RPC error.
pub fn refused(e: RuntimeError) -> RpcError {
    match e {
        RuntimeError::RunNotFound(id) => RpcError::task_not_found(id.as_str()),
        RuntimeError::Protocol(e) => {
            RpcError::invalid_params(format!("the answer was refused: {e}"))
        }
        RuntimeError::NotAwaiting { .. } | RuntimeError::Finished(_) => {
            RpcError::unsupported(e.to_string())
        }
        RuntimeError::SessionEnded(_) => RpcError::invalid_params(e.to_string()),
        other => RpcError::internal(other.to_string()),
    }
}

/// At most 64 characters of what a client sent, for an error message.
pub fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

/// A JSON-RPC request that parsed.
#[derive(Debug, Clone)]
pub struct Request {
    /// Its id (a string, a number or null).
    pub id: Value,
    /// The method.
    pub method: String,
    /// The params (an object; absent ones read as `{}`).
    pub params: Value,
}

/// Reads a JSON-RPC request from `body`; on failure, the error and the id
/// to answer it with (null when the id could not be read).
pub fn read(body: &[u8]) -> Result<Request, (Value, RpcError)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            RpcError::parse(format!("the body is not JSON: {e}")),
        )
    })?;
    let Value::Object(mut object) = value else {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "a JSON-RPC request is an object"
        };
        return Err((Value::Null, RpcError::invalid_request(what)));
    };
    let id = match object.remove("id") {
        None | Some(Value::Null) => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::invalid_request("`id` must be a string, a number or null"),
            ));
        }
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id,
            RpcError::invalid_request("`jsonrpc` must be exactly \"2.0\""),
        ));
    }
    let method = match object.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => {
            return Err((
                id,
                RpcError::invalid_request("`method` must be a non-empty string"),
            ));
        }
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            return Err((id, RpcError::invalid_params("`params` must be an object")));
        }
    };
    Ok(Request { id, method, params })
}

/// The params of `request` as `T`, or why not (-32602).
pub fn params<T: serde::de::DeserializeOwned>(request: &Request) -> Result<T, RpcError> {
    serde_json::from_value(request.params.clone()).map_err(|e| {
        RpcError::invalid_params(format!("invalid params for `{}`: {e}", request.method))
    })
}

/// A success response.
pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn failure(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> i64 {
        read(body.as_bytes())
            .map(|_| 0)
            .unwrap_or_else(|(_, e)| e.code)
    }

    #[test]
    fn malformed_requests_get_their_codes() {
        assert_eq!(code("{"), -32700);
        assert_eq!(code("[]"), -32600);
        assert_eq!(code(r#"{"id":1,"method":"GetTask"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), -32600);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            -32602
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"a","method":"x"}"#), 0);
    }

    #[test]
    fn an_error_keeps_the_request_id() {
        let (id, _) = read(br#"{"jsonrpc":"1.0","id":7,"method":"x"}"#).unwrap_err();
        assert_eq!(id, json!(7));
        let body = failure(&id, &RpcError::task_not_found("t"));
        assert_eq!(body["error"]["code"], -32001);
        assert_eq!(body["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    }
}
