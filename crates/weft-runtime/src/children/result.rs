//! A child run's answer as its parent's tool result, under the parent
//! tool's result contract: the `FinalToolResult` a child ends with is the
//! result as it is; a text answer is `{"text": ...}`. When the tool
//! declares an output schema, the result must match it: a final tool
//! result, or a text answer that is JSON (a model's way to answer in
//! kind, a surrounding code fence allowed). A result that breaks the
//! contract is the call's [`INVALID_RESULT`] error, naming each mismatch.
//! The runtime's payload budget then bounds the result like any other.

use serde_json::{Value, json};
use weft_core::tool::{ToolError, ToolErrorCode};

/// Error code of a call whose child's result breaks the tool's output schema.
pub const INVALID_RESULT: &str = "invalid_result";

/// Most schema mismatches one error names.
const MAX_PROBLEMS: usize = 8;

/// How a child answered, before the contract applies.
pub(crate) enum Answer {
    /// Its final answer's text.
    Text(String),
    /// Its final tool result.
    Result(Value),
}

/// Why `schema` cannot be a tool's output schema, if it cannot.
pub(crate) fn check_schema(schema: &Value) -> Result<(), String> {
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| format!("not a valid JSON Schema: {e}"))
}

/// The parent tool's result for `answer`, held to `schema` when the tool
/// declares one.
pub(crate) fn under_contract(schema: Option<&Value>, answer: Answer) -> Result<Value, ToolError> {
    let Some(schema) = schema else {
        return Ok(match answer {
            Answer::Text(text) => json!({ "text": text }),
            Answer::Result(result) => result,
        });
    };
    let result = match answer {
        Answer::Result(result) => result,
        Answer::Text(text) => serde_json::from_str(unfenced(&text)).map_err(|e| {
            invalid(
                format!(
                    "the agent answered in text that is not JSON ({e}), but the tool's \
                     output schema requires a JSON result"
                ),
                Vec::new(),
            )
        })?,
    };
    let validator = jsonschema::validator_for(schema).map_err(|e| {
        ToolError::new(
            ToolError::INTERNAL,
            format!("the tool's output schema is invalid: {e}"),
        )
    })?;
    let problems: Vec<String> = validator
        .iter_errors(&result)
        .take(MAX_PROBLEMS)
        .map(|e| {
            let at = e.instance_path.to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            format!("at `{at}`: {e}")
        })
        .collect();
    if problems.is_empty() {
        return Ok(result);
    }
    Err(invalid(
        format!(
            "the agent's result does not match the tool's output schema: {}",
            problems.join("; ")
        ),
        problems,
    ))
}

fn invalid(message: String, causes: Vec<String>) -> ToolError {
    let mut error = ToolError::new(ToolErrorCode::from(INVALID_RESULT), message);
    error.causes = causes;
    error
}

/// `text` trimmed, without a surrounding Markdown code fence.
fn unfenced(text: &str) -> &str {
    let text = text.trim();
    let Some(inner) = text.strip_prefix("```").and_then(|t| t.strip_suffix("```")) else {
        return text;
    };
    // The fence's first line may name a language (`json`).
    inner
        .split_once('\n')
        .map_or(inner, |(_, body)| body)
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
        })
    }

    #[test]
    fn without_a_schema_text_is_wrapped_and_a_result_kept() {
        let text = under_contract(None, Answer::Text("hi".into())).unwrap();
        assert_eq!(text, json!({"text": "hi"}));
        let result = under_contract(None, Answer::Result(json!([1]))).unwrap();
        assert_eq!(result, json!([1]));
    }

    #[test]
    fn a_matching_result_or_json_text_passes_the_schema() {
        let ok = under_contract(Some(&schema()), Answer::Result(json!({"answer": 42})));
        assert_eq!(ok.unwrap(), json!({"answer": 42}));
        let fenced = "```json\n{\"answer\": 7}\n```";
        let ok = under_contract(Some(&schema()), Answer::Text(fenced.into()));
        assert_eq!(ok.unwrap(), json!({"answer": 7}));
    }

    #[test]
    fn a_mismatch_is_an_invalid_result_naming_what_is_wrong() {
        let err =
            under_contract(Some(&schema()), Answer::Result(json!({"answer": "x"}))).unwrap_err();
        assert_eq!(err.code, INVALID_RESULT);
        assert!(err.message.contains("/answer"), "{}", err.message);
        assert_eq!(err.causes.len(), 1, "{:?}", err.causes);
        let err = under_contract(Some(&schema()), Answer::Text("forty-two".into())).unwrap_err();
        assert_eq!(err.code, INVALID_RESULT);
        assert!(err.message.contains("not JSON"), "{}", err.message);
    }

    #[test]
    fn a_schema_that_does_not_compile_is_refused() {
        assert!(check_schema(&schema()).is_ok());
        assert!(check_schema(&json!({"type": 5})).is_err());
    }
}
