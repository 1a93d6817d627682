//! How a tool output appears to a model: server data stripped, omitted results
//! replaced by their marker, errors rendered with their retry hint.

use std::fmt::Write as _;

use serde_json::Value;

use crate::message::Part;
use crate::tool::{ToolOutput, ToolResultBody};

/// The tool-result part a model sees for `output`.
pub fn render_tool_output(output: &ToolOutput) -> Part {
    let (content, is_error) = match &output.result {
        ToolResultBody::Json(Value::String(s)) => (vec![Part::Text { text: s.clone() }], false),
        ToolResultBody::Json(v) => (
            vec![Part::Text {
                text: v.to_string(),
            }],
            false,
        ),
        ToolResultBody::Content(c) => {
            let mut parts = c.parts.clone();
            if let (true, Some(s)) = (parts.is_empty(), &c.structured) {
                parts.push(Part::Text {
                    text: s.to_string(),
                });
            }
            (parts, false)
        }
        ToolResultBody::Omitted(o) => {
            let mut text = o.marker();
            if let Some(b) = &output.bounds {
                let _ = write!(text, " (returned {}", b.returned);
                if let Some(t) = b.total {
                    let _ = write!(text, " of {t}");
                }
                text.push(')');
                if let Some(h) = &b.refinement_hint {
                    let _ = write!(text, " {h}");
                }
            }
            (vec![Part::Text { text }], false)
        }
        ToolResultBody::Error(e) => {
            let mut text = format!("error ({}): {}", e.code, e.message);
            for issue in &e.field_issues {
                let field = if issue.field.is_empty() {
                    "(root)"
                } else {
                    &issue.field
                };
                let _ = write!(text, "\n- {field}: {}", issue.message);
            }
            if let Some(h) = &output.retry_hint {
                let reason = serde_json::to_value(h.reason).unwrap_or(Value::Null);
                let _ = write!(
                    text,
                    "\nretry hint: {}",
                    reason.as_str().unwrap_or("unknown")
                );
                if !h.missing_fields.is_empty() {
                    let _ = write!(text, "\nmissing fields: {}", h.missing_fields.join(", "));
                }
                if let Some(ex) = &h.example_input {
                    let _ = write!(text, "\nexample input: {ex}");
                }
                if let Some(q) = &h.clarifying_question {
                    let _ = write!(text, "\nquestion: {q}");
                }
                if let Some(m) = &h.message {
                    let _ = write!(text, "\n{m}");
                }
            }
            (vec![Part::Text { text }], true)
        }
    };
    Part::ToolResult {
        tool_use_id: output.tool_call_id.clone(),
        content,
        is_error,
    }
}
