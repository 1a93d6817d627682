//! Taking a run back after the process that drove it died: which of the
//! calls that were in flight run again and which are answered as
//! interrupted.

use super::*;
use crate::tool::RetryReason;

impl RunMachine {
    /// Takes the run back after a crash, before its next step: the
    /// questions running calls asked are withdrawn (the tools that asked
    /// died with the process), and each call of the batch in flight that
    /// has no result is answered as interrupted unless `catalog` says its
    /// tool is idempotent (such a call runs again). A call of a tool the
    /// catalog no longer has counts as not idempotent. How many calls were
    /// answered; the batch completes when none is left to run.
    pub fn recover(&mut self, catalog: &dyn ToolCatalog, now: Timestamp) -> usize {
        self.withdraw_elicitations();
        let Phase::Executing(batch) = &self.phase else {
            return 0;
        };
        let cut: Vec<ToolOutput> = batch
            .calls
            .iter()
            .zip(&batch.results)
            .filter(|(call, result)| {
                result.is_none()
                    && !catalog
                        .spec(call.name.as_str())
                        .is_some_and(|s| s.annotations.idempotent)
            })
            .map(|(call, _)| interrupted(call))
            .collect();
        let n = cut.len();
        for output in cut {
            // The call is pending in this batch: the result is taken.
            let _ = self.tool_result(output, now);
        }
        n
    }
}

/// The result of a call a crash cut, which is not run again.
fn interrupted(call: &ToolCall) -> ToolOutput {
    let message = format!(
        "`{}` was interrupted by a restart and is not idempotent, so it was not run again",
        call.name
    );
    let hint = RetryHint::new(RetryReason::ToolUnavailable)
        .for_tool(call.name.clone())
        .with_message(
            "interrupted by restart: check whether it took effect before calling it again",
        );
    not_executed(call, ToolError::UNAVAILABLE, &message).with_retry_hint(Some(hint))
}
