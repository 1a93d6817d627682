//! Child runs of a run's calls: what they may use (the rest of its caps,
//! read when a batch's calls start) and the record of each one a call
//! started (`ChildRunLinked`).

use std::time::Duration;

use super::*;
use crate::ids::RunId;
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

    /// Records that running call `call` started (or found again) child run
    /// `child` of agent `agent`: a `ChildRunLinked` event, before any of the
    /// child's events are shown. Refused unless `call` is a call of the
    /// current batch that has no result yet.
    pub fn child_linked(
        &mut self,
        call: &ToolCallId,
        child: RunId,
        agent: AgentId,
    ) -> Result<(), RunError> {
        let Phase::Executing(batch) = &self.phase else {
            return Err(self.wrong_phase("child_linked"));
        };
        let running = batch
            .calls
            .iter()
            .zip(&batch.results)
            .any(|(c, r)| &c.id == call && r.is_none());
        if !running {
            return Err(RunError::UnknownToolCall(call.clone()));
        }
        self.outbox.push(EventKind::ChildRunLinked {
            tool_call_id: call.clone(),
            child_run_id: child,
            agent_id: agent,
        });
        Ok(())
    }
}
