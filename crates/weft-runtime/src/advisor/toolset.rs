//! The advisor's toolset: it lists the `advisor` tool so the run's catalog
//! validates calls to it; the driver runs those calls itself (they need the
//! run's transcript and budget), so this toolset never executes one.

use async_trait::async_trait;
use serde_json::json;
use weft_core::tool::{ToolAnnotations, ToolError, ToolRequest, ToolSpec};
use weft_tools::capability::Instructions;
use weft_tools::{ToolFailure, ToolReply, ToolSet};

use super::{GUIDANCE, MAX_QUESTION_CHARS, TOOL};

/// Lists the `advisor` tool; its instructions are the guidance block, so a
/// model planner given this toolset tells its model when to call it.
#[derive(Debug, Default)]
pub struct AdvisorToolSet;

impl Instructions for AdvisorToolSet {
    fn instructions_text(&self) -> String {
        GUIDANCE.to_owned()
    }
}

/// The `advisor` tool's spec.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TOOL.into(),
        description: "Ask a stronger advisor model for concise strategic guidance on this \
task. Call it alone, with one specific question."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "question": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUESTION_CHARS,
                    "description": "What you want advice on."
                }
            },
            "required": ["question"],
            "additionalProperties": false
        }),
        output_schema: None,
        // A call cut by a crash used nothing (its use is committed with its
        // result), so it may run again.
        annotations: ToolAnnotations {
            read_only: true,
            idempotent: true,
            ..ToolAnnotations::default()
        },
        tags: Vec::new(),
    }
}

#[async_trait]
impl ToolSet for AdvisorToolSet {
    fn name(&self) -> &str {
        TOOL
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(vec![spec()])
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        Err(ToolError::new(
            ToolError::UNAVAILABLE,
            format!("`{}` is run by the driver, not by a toolset", request.name),
        )
        .into())
    }

    fn instructions(&self) -> Option<&dyn Instructions> {
        Some(self)
    }
}
