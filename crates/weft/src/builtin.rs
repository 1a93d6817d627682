//! Built-in in-process toolsets that agent files can name: `calc` and `text`.
//! They exist for examples, tests and benchmarks.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use weft_core::tool::{RetryHint, RetryReason, ToolError};
use weft_tools::{FnToolSet, ToolFailure, ToolSet};

/// Two integer operands.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Operands {
    /// The left operand.
    pub a: i64,
    /// The right operand.
    pub b: i64,
}

/// A piece of text.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TextArg {
    /// The text.
    pub text: String,
}

fn overflow(op: &str) -> ToolFailure {
    ToolFailure {
        error: ToolError::new("overflow", format!("the {op} overflows a 64-bit integer")),
        retry_hint: Some(
            RetryHint::new(RetryReason::InvalidArguments).with_message("use smaller operands"),
        ),
    }
}

/// `calc.add`, `calc.subtract`, `calc.multiply`, `calc.divide` on 64-bit integers.
pub fn calc() -> Arc<dyn ToolSet> {
    Arc::new(
        FnToolSet::new("calc")
            .with_instructions("Use the calc tools for arithmetic; they work on 64-bit integers.")
            .tool("add", "Adds two integers: a + b", |o: Operands| async move {
                o.a.checked_add(o.b).ok_or_else(|| overflow("sum"))
            })
            .read_only()
            .idempotent()
            .tool("subtract", "Subtracts two integers: a - b", |o: Operands| async move {
                o.a.checked_sub(o.b).ok_or_else(|| overflow("difference"))
            })
            .read_only()
            .idempotent()
            .tool("multiply", "Multiplies two integers: a * b", |o: Operands| async move {
                o.a.checked_mul(o.b).ok_or_else(|| overflow("product"))
            })
            .read_only()
            .idempotent()
            .tool("divide", "Divides two integers, rounding toward zero: a / b", |o: Operands| async move {
                if o.b == 0 {
                    return Err(ToolFailure {
                        error: ToolError::new("division_by_zero", "b must not be zero"),
                        retry_hint: Some(RetryHint::new(RetryReason::InvalidArguments).with_message("choose a non-zero b")),
                    });
                }
                o.a.checked_div(o.b).ok_or_else(|| overflow("quotient"))
            })
            .read_only()
            .idempotent(),
    )
}

/// `text.word_count` and `text.upper`.
pub fn text() -> Arc<dyn ToolSet> {
    Arc::new(
        FnToolSet::new("text")
            .tool(
                "word_count",
                "Counts the words of a text",
                |t: TextArg| async move { Ok::<_, ToolError>(t.text.split_whitespace().count()) },
            )
            .read_only()
            .idempotent()
            .tool("upper", "Upper-cases a text", |t: TextArg| async move {
                Ok::<_, ToolError>(t.text.to_uppercase())
            })
            .read_only()
            .idempotent(),
    )
}

/// The built-in toolset called `name`.
pub fn by_name(name: &str) -> Option<Arc<dyn ToolSet>> {
    match name {
        "calc" => Some(calc()),
        "text" => Some(text()),
        _ => None,
    }
}

/// Names of the built-in toolsets.
pub const NAMES: &[&str] = &["calc", "text"];
