//! Tool failures: [`ToolError`], its [`ToolErrorCode`] and per-field issues.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What kind of failure a [`ToolError`] is; serialized as a snake_case
/// string (`"timeout"`, `"tool_unavailable"`, ...). Codes weft does not
/// know (a foreign provider's own) are kept as [`ToolErrorCode::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolErrorCode {
    /// Arguments were malformed or violated the schema (`invalid_arguments`).
    InvalidArguments,
    /// The call ran past its timeout (`timeout`).
    Timeout,
    /// The tool panicked (`panicked`).
    Panicked,
    /// The call was cancelled (`cancelled`).
    Cancelled,
    /// The tool or its toolset could not be reached (`tool_unavailable`).
    Unavailable,
    /// The call was not executed: another call of its turn was invalid, a
    /// cap was reached, or a human denied it (`not_executed`).
    NotExecuted,
    /// Any other failure of weft's own (`internal`).
    Internal,
    /// A code of the tool's own.
    Other(String),
}

impl ToolErrorCode {
    /// The code as written on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            ToolErrorCode::InvalidArguments => "invalid_arguments",
            ToolErrorCode::Timeout => "timeout",
            ToolErrorCode::Panicked => "panicked",
            ToolErrorCode::Cancelled => "cancelled",
            ToolErrorCode::Unavailable => "tool_unavailable",
            ToolErrorCode::NotExecuted => "not_executed",
            ToolErrorCode::Internal => "internal",
            ToolErrorCode::Other(s) => s,
        }
    }
}

impl From<&str> for ToolErrorCode {
    fn from(s: &str) -> Self {
        match s {
            "invalid_arguments" => ToolErrorCode::InvalidArguments,
            "timeout" => ToolErrorCode::Timeout,
            "panicked" => ToolErrorCode::Panicked,
            "cancelled" => ToolErrorCode::Cancelled,
            "tool_unavailable" => ToolErrorCode::Unavailable,
            "not_executed" => ToolErrorCode::NotExecuted,
            "internal" => ToolErrorCode::Internal,
            other => ToolErrorCode::Other(other.to_owned()),
        }
    }
}

impl From<String> for ToolErrorCode {
    fn from(s: String) -> Self {
        match ToolErrorCode::from(s.as_str()) {
            ToolErrorCode::Other(_) => ToolErrorCode::Other(s),
            known => known,
        }
    }
}

impl PartialEq<str> for ToolErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ToolErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<ToolErrorCode> for &ToolErrorCode {
    fn eq(&self, other: &ToolErrorCode) -> bool {
        **self == *other
    }
}

impl fmt::Display for ToolErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ToolErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(ToolErrorCode::from)
    }
}

/// A structured tool failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// What kind of failure this is.
    pub code: ToolErrorCode,
    /// What went wrong, for humans and models.
    pub message: String,
    /// Per-field problems with the arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub field_issues: Vec<FieldIssue>,
    /// Underlying causes, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<String>,
}

impl ToolError {
    /// Arguments were malformed or violated the schema.
    pub const INVALID_ARGUMENTS: ToolErrorCode = ToolErrorCode::InvalidArguments;
    /// The call ran past its timeout.
    pub const TIMEOUT: ToolErrorCode = ToolErrorCode::Timeout;
    /// The tool panicked.
    pub const PANICKED: ToolErrorCode = ToolErrorCode::Panicked;
    /// The call was cancelled.
    pub const CANCELLED: ToolErrorCode = ToolErrorCode::Cancelled;
    /// The tool or its toolset could not be reached.
    pub const UNAVAILABLE: ToolErrorCode = ToolErrorCode::Unavailable;
    /// The call was not executed (another call of its turn was invalid, or a human denied it).
    pub const NOT_EXECUTED: ToolErrorCode = ToolErrorCode::NotExecuted;
    /// Any other failure.
    pub const INTERNAL: ToolErrorCode = ToolErrorCode::Internal;

    /// An error with a code and a message.
    pub fn new(code: impl Into<ToolErrorCode>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            field_issues: Vec::new(),
            causes: Vec::new(),
        }
    }

    /// Attaches field issues.
    pub fn with_field_issues(mut self, issues: Vec<FieldIssue>) -> Self {
        self.field_issues = issues;
        self
    }

    /// Builds an error from any std error, recording its source chain as causes.
    /// Pair it with [`super::RetryHintProvider::retry_hint`] for the output's hint.
    pub fn from_error<E>(code: impl Into<ToolErrorCode>, err: &E) -> Self
    where
        E: std::error::Error + ?Sized,
    {
        let mut causes = Vec::new();
        let mut source = err.source();
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        Self {
            code: code.into(),
            message: err.to_string(),
            field_issues: Vec::new(),
            causes,
        }
    }
}

/// One problem with one argument field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldIssue {
    /// JSON pointer to the field (`/a`, `/items/0/name`); empty for the whole value.
    pub field: String,
    /// What kind of problem.
    pub kind: FieldIssueKind,
    /// What is wrong, in words.
    pub message: String,
}

/// Kinds of argument field problems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldIssueKind {
    /// A required field is absent.
    Missing,
    /// The field has the wrong JSON type.
    WrongType,
    /// The field is not allowed.
    Unexpected,
    /// The field has the right type but an invalid value.
    Invalid,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_today_s_strings_and_keep_foreign_ones() {
        for code in [
            ToolError::INVALID_ARGUMENTS,
            ToolError::TIMEOUT,
            ToolError::PANICKED,
            ToolError::CANCELLED,
            ToolError::UNAVAILABLE,
            ToolError::NOT_EXECUTED,
            ToolError::INTERNAL,
            ToolErrorCode::Other("rate_limited".into()),
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ToolErrorCode>(&json).unwrap(), code);
        }
        assert_eq!(
            serde_json::to_value(ToolError::new(ToolError::UNAVAILABLE, "down")).unwrap()["code"],
            "tool_unavailable"
        );
        assert_eq!(
            ToolErrorCode::from("queue_full"),
            ToolErrorCode::Other("queue_full".into())
        );
        assert!(ToolError::TIMEOUT == "timeout");
    }
}
