//! The turns of a scripted planner in an agent file (`[[planner.turns]]`):
//! each is a final answer (`text`), tool calls (`tool_calls`), or a
//! clarification question to the human (`ask`), and becomes one
//! [`PlanResult`] of a [`weft_runtime::ScriptedPlanner`].

use serde::Deserialize;
use serde_json::Value;
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitItem, Clarification};
use weft_core::planner::{PlanResult, ToolCallRequest};

/// One scripted turn: exactly one of `text`, `tool_calls` or `ask`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnSpec {
    /// A final answer.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<CallSpec>>,
    /// A clarification question: the run awaits the human's free-text
    /// answer (item id `ask-<turn>`) and the next turn follows it.
    #[serde(default)]
    pub ask: Option<String>,
}

/// One scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    /// The tool's full name.
    pub name: String,
    /// The arguments.
    #[serde(default)]
    pub args: toml::Table,
}

impl TurnSpec {
    /// Checks turn number `turn` (from 1); the message says what is wrong.
    pub(super) fn check(&self, turn: usize) -> Result<(), String> {
        match (&self.text, &self.tool_calls, &self.ask) {
            (Some(_), None, None) => Ok(()),
            (None, Some(calls), None) if !calls.is_empty() => Ok(()),
            (None, Some(_), None) => Err(format!("turn {turn}: `tool_calls` is empty")),
            (None, None, Some(q)) if !q.trim().is_empty() => Ok(()),
            (None, None, Some(_)) => Err(format!("turn {turn}: `ask` is empty")),
            _ => Err(format!(
                "turn {turn}: give exactly one of `text`, `tool_calls` or `ask`"
            )),
        }
    }

    /// Turn number `turn` (from 1) as the planner's result.
    pub(super) fn plan(&self, turn: usize) -> PlanResult {
        if let Some(calls) = &self.tool_calls {
            return PlanResult::tool_calls(
                calls
                    .iter()
                    .map(|c| ToolCallRequest::new(c.name.clone(), toml_to_json(&c.args)))
                    .collect(),
            );
        }
        if let Some(question) = &self.ask {
            return PlanResult::await_items(vec![AwaitItem::Clarification(Clarification {
                id: AwaitItemId::new(format!("ask-{turn}")),
                question: question.clone(),
                missing_fields: Vec::new(),
                restrict_to_tool: None,
                example_input: None,
                clarifying_prompt: None,
            })]);
        }
        PlanResult::final_text(self.text.clone().unwrap_or_default())
    }
}

fn toml_to_json(table: &toml::Table) -> Value {
    serde_json::to_value(table).unwrap_or(Value::Null)
}
