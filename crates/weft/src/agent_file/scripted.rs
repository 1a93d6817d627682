//! The turns of a scripted planner in an agent file (`[[planner.turns]]`):
//! each is a final answer (`text`), a final tool result (`result`: the
//! run's answer as its parent tool's result, for an agent called as a
//! tool), tool calls (`tool_calls`), or a clarification question to the
//! human (`ask`), and becomes one [`PlanResult`] of a
//! [`weft_runtime::ScriptedPlanner`].

use serde::Deserialize;
use serde_json::Value;
use weft_core::AwaitItemId;
use weft_core::awaiting::{AwaitItem, Clarification};
use weft_core::planner::{Decision, PlanResult, ToolCallRequest};

/// One scripted turn: exactly one of `text`, `result`, `tool_calls` or `ask`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnSpec {
    /// A final answer.
    #[serde(default)]
    pub text: Option<String>,
    /// A final tool result (any TOML value, as JSON): what the parent's
    /// call of this agent gets, checked against the `output_schema` the
    /// parent's agent toolset declares for it.
    #[serde(default)]
    pub result: Option<toml::Value>,
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
        let given = [
            self.text.is_some(),
            self.result.is_some(),
            self.tool_calls.is_some(),
            self.ask.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(format!(
                "turn {turn}: give exactly one of `text`, `result`, `tool_calls` or `ask`"
            ));
        }
        match (&self.tool_calls, &self.ask) {
            (Some(calls), _) if calls.is_empty() => {
                Err(format!("turn {turn}: `tool_calls` is empty"))
            }
            (_, Some(q)) if q.trim().is_empty() => Err(format!("turn {turn}: `ask` is empty")),
            _ => Ok(()),
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
        if let Some(result) = &self.result {
            return PlanResult::new(Decision::FinalToolResult {
                result: serde_json::to_value(result).unwrap_or(Value::Null),
            });
        }
        PlanResult::final_text(self.text.clone().unwrap_or_default())
    }
}

fn toml_to_json(table: &toml::Table) -> Value {
    serde_json::to_value(table).unwrap_or(Value::Null)
}
