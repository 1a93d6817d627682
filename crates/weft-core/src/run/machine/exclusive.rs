//! Tools that must be called alone ([`Policy::exclusive_tools`]): a turn
//! that calls one beside other tools runs none of its calls.

use super::*;

impl RunMachine {
    /// The not-executed results of every call of a turn that calls an
    /// exclusive tool beside others, in order; `None` for a turn that may
    /// run.
    pub(super) fn refuse_mixed(&self, calls: &[ToolCall]) -> Option<Vec<ToolOutput>> {
        let exclusive = &self.policy.exclusive_tools;
        if calls.len() < 2 || exclusive.is_empty() {
            return None;
        }
        let alone = calls.iter().find(|c| exclusive.contains(&c.name))?;
        let refusals = calls
            .iter()
            .map(|c| {
                let message = if exclusive.contains(&c.name) {
                    format!("`{}` must be called alone", c.name)
                } else {
                    format!(
                        "`{}` was skipped because `{}` must be called alone",
                        c.name, alone.name
                    )
                };
                not_executed(c, ToolError::NOT_EXECUTED, &message)
            })
            .collect();
        Some(refusals)
    }
}
