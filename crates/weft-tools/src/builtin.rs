//! Built-in in-process toolsets that agent files can name: `calc`, `text` and
//! `journal`. They exist for examples, tests and benchmarks.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use crate::{FnToolSet, ToolFailure, ToolSet};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::tool::{RetryHint, RetryReason, ToolError, ToolRequest};

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

/// Arguments of the journal tools.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Entry {
    /// The text to record.
    pub text: String,
    /// How long to take, in milliseconds (at most 10 000).
    #[serde(default)]
    pub sleep_ms: u64,
}

/// The directory the journal toolset writes to.
pub const JOURNAL_DIR_VAR: &str = "WEFT_JOURNAL_DIR";

fn journal_dir() -> Result<std::path::PathBuf, ToolError> {
    std::env::var_os(JOURNAL_DIR_VAR)
        .map(std::path::PathBuf::from)
        .ok_or_else(|| {
            ToolError::new(
                ToolError::UNAVAILABLE,
                format!("set {JOURNAL_DIR_VAR} to use the journal tools"),
            )
        })
}

fn io_failure(e: std::io::Error) -> ToolError {
    ToolError::new(ToolError::INTERNAL, format!("journal: {e}"))
}

/// `journal.append` (appends a line per execution: not idempotent) and
/// `journal.put` (writes a file named after the call: idempotent), both in
/// the directory named by `WEFT_JOURNAL_DIR`. They make side effects visible,
/// for crash tests and demos.
pub fn journal() -> Arc<dyn ToolSet> {
    Arc::new(
        FnToolSet::new("journal")
            .tool_with_context(
                "append",
                "Appends a line to the journal (each execution adds one line)",
                |req: ToolRequest, e: Entry| async move {
                    let dir = journal_dir()?;
                    tokio::time::sleep(Duration::from_millis(e.sleep_ms.min(10_000))).await;
                    let line = format!("{} {} {}\n", req.run_id, req.tool_call_id, e.text);
                    let mut f = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(dir.join("journal.log"))
                        .map_err(io_failure)?;
                    f.write_all(line.as_bytes()).map_err(io_failure)?;
                    Ok::<_, ToolFailure>(json!({"appended": e.text}))
                },
            )
            .tool_with_context(
                "put",
                "Records an entry under the call's own name (executing it again changes nothing)",
                |req: ToolRequest, e: Entry| async move {
                    let dir = journal_dir()?;
                    tokio::time::sleep(Duration::from_millis(e.sleep_ms.min(10_000))).await;
                    let name = format!("{}.{}.entry", req.run_id, req.tool_call_id);
                    std::fs::write(dir.join(name), e.text.as_bytes()).map_err(io_failure)?;
                    Ok::<_, ToolFailure>(json!({"recorded": e.text}))
                },
            )
            .idempotent(),
    )
}

/// The built-in toolset called `name`.
pub fn by_name(name: &str) -> Option<Arc<dyn ToolSet>> {
    match name {
        "calc" => Some(calc()),
        "text" => Some(text()),
        "journal" => Some(journal()),
        _ => None,
    }
}

/// Names of the built-in toolsets.
pub const NAMES: &[&str] = &["calc", "text", "journal"];
