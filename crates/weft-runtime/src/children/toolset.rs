//! [`AgentToolSet`]: other agents as tools. A call takes `{"input": "..."}`,
//! runs the agent as a child run on that input, and answers with the
//! child's outcome under the tool's result contract (see
//! `super::result`): its final text (`{"text": ...}`), or its final tool
//! result; with an output schema, the result (or a JSON text answer) must
//! match it. The child run's id travels in the result's server data
//! (`{"child_run_id": ...}`), never to the model.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use weft_core::AgentId;
use weft_core::child::{ChildEnd, ChildRequest};
use weft_core::message::Message;
use weft_core::tool::{
    ToolAnnotations, ToolError, ToolErrorCode, ToolIdent, ToolRequest, ToolSpec,
};
use weft_tools::{ElicitationHandler, ElicitationSupport, ToolFailure, ToolReply, ToolSet};

use super::result::{self, Answer};

/// Error code of a call whose child run failed or was cancelled.
pub const CHILD_FAILED: &str = "child_run_failed";

/// Label naming a child run's parent run.
pub const PARENT_RUN_LABEL: &str = "weft.parent_run";

/// Label naming the parent's call a child run answers.
pub const PARENT_CALL_LABEL: &str = "weft.parent_call";

/// Longest input a call may give its agent, in bytes.
pub const MAX_INPUT: usize = 64 * 1024;

/// One agent offered as a tool.
#[derive(Debug, Clone)]
struct AgentTool {
    agent: AgentId,
    description: String,
    output_schema: Option<Value>,
}

/// Agents of the same runtime offered as tools, named `<set>.<agent id>`.
#[derive(Debug, Clone)]
pub struct AgentToolSet {
    name: String,
    agents: Vec<AgentTool>,
}

impl AgentToolSet {
    /// An empty set named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            agents: Vec::new(),
        }
    }

    /// Offers `agent`, described to the model as `description`.
    pub fn agent(mut self, agent: impl Into<AgentId>, description: impl Into<String>) -> Self {
        self.agents.push(AgentTool {
            agent: agent.into(),
            description: description.into(),
            output_schema: None,
        });
        self
    }

    /// Offers `agent`, whose answer must match `output_schema` (a JSON
    /// Schema): its final tool result, or its text answer read as JSON. A
    /// result that does not match is the call's
    /// [`INVALID_RESULT`](super::INVALID_RESULT) error.
    pub fn agent_with_result(
        mut self,
        agent: impl Into<AgentId>,
        description: impl Into<String>,
        output_schema: Value,
    ) -> Self {
        self.agents.push(AgentTool {
            agent: agent.into(),
            description: description.into(),
            output_schema: Some(output_schema),
        });
        self
    }

    /// Why `schema` cannot be an agent tool's output schema, if it cannot
    /// (it must compile as a JSON Schema).
    pub fn check_output_schema(schema: &Value) -> Result<(), String> {
        result::check_schema(schema)
    }

    /// The agents offered, in order.
    pub fn agents(&self) -> impl Iterator<Item = &AgentId> {
        self.agents.iter().map(|a| &a.agent)
    }

    fn spec(&self, tool: &AgentTool) -> ToolSpec {
        ToolSpec {
            name: ToolIdent::new(format!("{}.{}", self.name, tool.agent)),
            description: tool.description.clone(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "input": {"type": "string", "description": "The task for the agent, in words"},
                },
                "required": ["input"],
                "additionalProperties": false,
            }),
            output_schema: tool.output_schema.clone(),
            annotations: ToolAnnotations {
                // A call run again after a crash finds the child it started.
                idempotent: true,
                ..ToolAnnotations::default()
            },
            tags: vec!["agent".to_owned()],
        }
    }
}

#[async_trait]
impl ToolSet for AgentToolSet {
    fn name(&self) -> &str {
        &self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(self.agents.iter().map(|a| self.spec(a)).collect())
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let tool = self
            .agents
            .iter()
            .find(|a| request.name.as_str() == format!("{}.{}", self.name, a.agent))
            .ok_or_else(|| {
                ToolError::new(
                    ToolError::UNAVAILABLE,
                    format!("no agent tool `{}`", request.name),
                )
            })?;
        let input = request
            .payload
            .get("input")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ToolError::new(ToolError::INVALID_ARGUMENTS, "`input` must be a string")
            })?;
        if input.len() > MAX_INPUT {
            return Err(ToolError::new(
                ToolError::INVALID_ARGUMENTS,
                format!(
                    "`input` is {} bytes; at most {MAX_INPUT} are allowed",
                    input.len()
                ),
            )
            .into());
        }
        let mut labels = request.labels.clone();
        labels.insert(PARENT_RUN_LABEL.to_owned(), request.run_id.to_string());
        labels.insert(
            PARENT_CALL_LABEL.to_owned(),
            request.tool_call_id.to_string(),
        );
        let child = ChildRequest {
            agent: tool.agent.clone(),
            messages: vec![Message::user(input)],
            labels,
        };
        let outcome = request.children.run(child, &request.elicit).await?;
        let child_run_id = request
            .children
            .parent()
            .map(|p| weft_core::child::child_run_id(&p.run_id, &p.tool_call_id).to_string());
        let answer = match outcome {
            ChildEnd::Response { message } => Answer::Text(message.joined_text()),
            ChildEnd::ToolResult { result } => Answer::Result(result),
            ChildEnd::Failed { reason } => {
                return Err(ToolError::new(
                    ToolErrorCode::from(CHILD_FAILED.to_owned()),
                    format!("agent `{}` failed: {reason}", tool.agent),
                )
                .into());
            }
            ChildEnd::Cancelled { reason } => {
                return Err(ToolError::new(
                    ToolError::CANCELLED,
                    format!("agent `{}` was cancelled: {reason}", tool.agent),
                )
                .into());
            }
        };
        let mut reply =
            ToolReply::json(result::under_contract(tool.output_schema.as_ref(), answer)?);
        reply.server_data = child_run_id.map(|id| json!({"child_run_id": id}));
        Ok(reply)
    }

    fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
        Some(self)
    }

    fn bounded_by_run_budget(&self) -> bool {
        true
    }
}

/// A child's questions are asked through the parent's call, which the
/// runtime attaches; there is no handler to set.
impl ElicitationSupport for AgentToolSet {
    fn set_elicitation_handler(&self, _handler: Option<Arc<dyn ElicitationHandler>>) {}
}
