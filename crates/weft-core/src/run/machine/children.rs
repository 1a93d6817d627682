//! What a run lets the child runs its calls start use: the rest of its
//! caps, read when a batch's calls start.

use std::time::Duration;

use super::*;
use crate::tool::child::ChildAllowance;

impl RunMachine {
    /// What a child run started by a call of the current batch may use at
    /// `now`: what is left of this run's time budget, of its tool calls (the
    /// batch counted) and of its turns (the current one counted). A child's
    /// own caps are clipped to these, so a tree of runs stays within its
    /// root's.
    pub fn child_allowance(&self, now: Timestamp) -> ChildAllowance {
        let policy = &self.policy;
        ChildAllowance {
            time_left: policy
                .time_budget
                .map(|budget| budget.saturating_sub(Duration::from_millis(self.active_ms(now)))),
            tool_calls_left: policy
                .max_tool_calls
                .map(|cap| cap.get().saturating_sub(self.calls_made)),
            turns_left: policy
                .max_turns
                .map(|cap| cap.get().saturating_sub(self.turn)),
        }
    }
}
