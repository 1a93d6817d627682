//! The decisions replay compares: the run machine's own events reduced to
//! what a run decided (a tool call with its arguments and result, an await,
//! a termination, the outcome), leaving out ids of time and transport.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use weft_core::ToolCallId;
use weft_core::awaiting::AwaitItem;
use weft_core::event::EventKind;
use weft_core::planner::Termination;
use weft_core::run::RunOutcome;
use weft_core::tool::ToolIdent;

/// One decision of a run, as replay compares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// A tool call the run made (or refused: over a cap, denied), with its result.
    ToolCall {
        /// The call's id (shown, not compared).
        tool_call_id: ToolCallId,
        /// The tool.
        tool: ToolIdent,
        /// Its arguments.
        arguments: Value,
        /// Its result, or why there is none (`not_executed` for a cap or a denial).
        result: Value,
    },
    /// The run waited for these items (running tools' questions left out).
    Await {
        /// The items.
        items: Vec<AwaitItem>,
    },
    /// The machine forced finalization.
    Termination {
        /// Why.
        termination: Termination,
    },
    /// The run ended.
    Finish {
        /// How.
        outcome: RunOutcome,
    },
}

impl Decision {
    /// The decision an event records, if it records one.
    pub fn of(kind: &EventKind) -> Option<Decision> {
        match kind {
            EventKind::ToolFinished { output } => Some(Decision::ToolCall {
                tool_call_id: output.tool_call_id.clone(),
                tool: output.name.clone(),
                arguments: (*output.payload).clone(),
                result: serde_json::to_value(&output.result).unwrap_or(Value::Null),
            }),
            EventKind::AwaitRequested { items } => {
                let items: Vec<AwaitItem> = items
                    .iter()
                    .filter(|i| !matches!(i, AwaitItem::Elicitation(_)))
                    .cloned()
                    .collect();
                (!items.is_empty()).then_some(Decision::Await { items })
            }
            EventKind::Termination { termination } => Some(Decision::Termination {
                termination: termination.clone(),
            }),
            EventKind::RunFinished { outcome } => Some(Decision::Finish {
                outcome: outcome.clone(),
            }),
            _ => None,
        }
    }

    /// Whether `other` is the same decision (call ids aside).
    pub fn same_as(&self, other: &Decision) -> bool {
        match (self, other) {
            (
                Decision::ToolCall {
                    tool: t1,
                    arguments: a1,
                    result: r1,
                    ..
                },
                Decision::ToolCall {
                    tool: t2,
                    arguments: a2,
                    result: r2,
                    ..
                },
            ) => t1 == t2 && a1 == a2 && r1 == r2,
            (a, b) => a == b,
        }
    }

    /// One line saying what the decision was.
    pub fn summary(&self) -> String {
        match self {
            Decision::ToolCall {
                tool,
                arguments,
                result,
                ..
            } => {
                let kind = result.get("kind").and_then(Value::as_str).unwrap_or("?");
                format!("call {tool}({arguments}) -> {kind}")
            }
            Decision::Await { items } => {
                let kinds: Vec<String> = items
                    .iter()
                    .map(|i| {
                        serde_json::to_value(i)
                            .ok()
                            .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
                            .unwrap_or_else(|| "item".to_owned())
                    })
                    .collect();
                format!("await [{}]", kinds.join(", "))
            }
            Decision::Termination { termination } => format!(
                "termination {}: {}",
                serde_json::to_value(termination.reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                termination.message
            ),
            Decision::Finish { outcome } => match outcome {
                RunOutcome::Response { message, .. } => {
                    format!("final answer {:?}", message.joined_text())
                }
                RunOutcome::ToolResult { result, .. } => format!("final tool result {result}"),
                RunOutcome::Failed { failure } => format!(
                    "failed: {}",
                    serde_json::to_string(failure).unwrap_or_default()
                ),
                RunOutcome::Cancelled { reason } => format!("cancelled: {reason}"),
            },
        }
    }

    /// The decision as JSON, for diffs.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
