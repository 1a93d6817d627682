//! Protocol errors: an input the machine cannot accept in its current phase.

use crate::awaiting::AnswerError;
use crate::ids::{AwaitItemId, ToolCallId};
use crate::run::step::PhaseName;
use crate::tool::ToolIdent;

/// An input the machine rejected; the machine is unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The input does not fit the machine's phase.
    #[error("`{input}` is not accepted while the run is {phase}")]
    WrongPhase {
        /// The input given.
        input: &'static str,
        /// The phase the machine is in.
        phase: PhaseName,
    },
    /// A tool result names a call that is not pending.
    #[error("tool call `{0}` is not pending")]
    UnknownToolCall(ToolCallId),
    /// A batch carries two results for one call.
    #[error("tool call `{0}` answered twice")]
    DuplicateToolResult(ToolCallId),
    /// A batch lacks results for some pending calls.
    #[error("no result for pending tool calls {0:?}")]
    MissingToolResults(Vec<ToolCallId>),
    /// A plan result uses one call id twice, or reuses an earlier one.
    #[error("tool call id `{0}` is used twice")]
    DuplicateCallId(ToolCallId),
    /// A plan result requests no tool calls.
    #[error("a tool-calls decision must request at least one call")]
    NoToolCalls,
    /// A plan result requests an await with no items.
    #[error("an await decision must have at least one item")]
    EmptyAwait,
    /// The run is finalizing and only a final answer is accepted.
    #[error("the run is finalizing: only a final response is accepted")]
    Finalizing,
    /// Retry was chosen but the retry bound is used up.
    #[error("invalid-call retries are used up (max {max})")]
    RetryLimitReached {
        /// The bound.
        max: u32,
    },
    /// Repair answers a call whose tool was right but whose arguments were
    /// not: another tool would get the same arguments, and the same call
    /// would need resolving again, forever. Retry, skip or fail instead.
    #[error("cannot repair a call whose arguments are invalid ({reason}); retry, skip or fail it")]
    RepairNotApplicable {
        /// Why the call is invalid.
        reason: String,
    },
    /// Repair names a tool that is unknown or not allowed.
    #[error("cannot repair with tool `{0}`: unknown or not allowed")]
    RepairNotAllowed(ToolIdent),
    /// Two await items share an id.
    #[error("await item id `{0}` is used twice")]
    DuplicateAwaitItem(AwaitItemId),
    /// A planner asked for a confirmation; only the policy creates those.
    #[error("confirmation items are created by the policy, not by planners")]
    ConfirmationFromPlanner,
    /// A planner asked for an elicitation; only running tools ask those.
    #[error("elicitation items are asked by running tools, not by planners")]
    ElicitationFromPlanner,
    /// A run has as many elicitations pending as it may.
    #[error("the run already has {max} elicitations pending")]
    TooManyElicitations {
        /// The bound.
        max: usize,
    },
    /// An answer names an item the await does not hold.
    #[error("await item `{0}` is unknown")]
    UnknownAwaitItem(AwaitItemId),
    /// An answer for an item that already has one.
    #[error("await item `{0}` is already answered")]
    AlreadyAnswered(AwaitItemId),
    /// The answer does not satisfy its item.
    #[error("invalid answer for await item `{item}`: {error}")]
    InvalidAnswer {
        /// The item.
        item: AwaitItemId,
        /// What is wrong.
        error: AnswerError,
    },
}
