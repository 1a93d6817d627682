//! Elicitations: a call of the batch being executed asks the human for
//! input. Each becomes a pending await item of the run (announced by
//! `AwaitRequested`) while the batch keeps executing; an answer removes it
//! (`AwaitSatisfied`), and the end of its call, of the batch or of the run
//! withdraws it (`AwaitWithdrawn`), as does the tool that asked when it stops
//! waiting.

use super::*;
use crate::awaiting::Elicitation;
use crate::elicitation::ElicitationRequest;

/// How many elicitations a run may have pending at once.
pub const MAX_PENDING_ELICITATIONS: usize = 8;

impl RunMachine {
    /// Records that running call `tool_call_id` asks the human `request`;
    /// returns the new await item's id. Only a call of the batch being
    /// executed that has no result yet may ask, and at most
    /// [`MAX_PENDING_ELICITATIONS`] may be pending.
    pub fn elicit(
        &mut self,
        tool_call_id: &ToolCallId,
        request: ElicitationRequest,
        _now: Timestamp,
    ) -> Result<AwaitItemId, RunError> {
        let Phase::Executing(batch) = &self.phase else {
            return Err(self.wrong_phase("elicit"));
        };
        let running = batch
            .calls
            .iter()
            .zip(&batch.results)
            .find(|(c, r)| &c.id == tool_call_id && r.is_none());
        let Some((call, _)) = running else {
            return Err(RunError::UnknownToolCall(tool_call_id.clone()));
        };
        if self.elicitations.len() >= MAX_PENDING_ELICITATIONS {
            return Err(RunError::TooManyElicitations {
                max: MAX_PENDING_ELICITATIONS,
            });
        }
        self.elicitation_seq += 1;
        let item = Elicitation {
            id: AwaitItemId::new(format!("elicit_{}", self.elicitation_seq)),
            tool_call_id: tool_call_id.clone(),
            tool: call.name.clone(),
            message: request.message,
            mode: request.mode,
        };
        let id = item.id.clone();
        self.outbox.push(EventKind::AwaitRequested {
            items: vec![AwaitItem::Elicitation(item.clone())],
        });
        self.elicitations.push(item);
        Ok(id)
    }

    /// The elicitations pending, oldest first.
    pub fn elicitations(&self) -> &[Elicitation] {
        &self.elicitations
    }

    /// Withdraws every pending elicitation; how many there were. A driver
    /// recovering a run calls it: the tools that asked died with the process.
    pub fn withdraw_elicitations(&mut self) -> usize {
        let n = self.elicitations.len();
        self.withdraw_where(|_| true);
        n
    }

    /// Withdraws pending elicitation `item`: the tool that asked stopped
    /// waiting for the answer (what it needed happened another way). Whether
    /// it was pending.
    pub fn withdraw_elicitation(&mut self, item: &AwaitItemId) -> bool {
        let pending = self.elicitations.iter().any(|e| &e.id == item);
        self.withdraw_where(|e| &e.id == item);
        pending
    }

    /// Answers the pending elicitation at `i`, already checked to be `item`;
    /// an accepted form is recorded with its defaults filled in.
    pub(super) fn answer_elicitation(
        &mut self,
        i: usize,
        item: &AwaitItemId,
        answer: AwaitAnswer,
    ) -> Result<AwaitProgress, RunError> {
        let asked = self.elicitations[i].clone();
        let answer = asked.with_defaults(answer);
        AwaitItem::Elicitation(asked)
            .validate(&answer)
            .map_err(|error| RunError::InvalidAnswer {
                item: item.clone(),
                error,
            })?;
        self.elicitations.remove(i);
        self.outbox.push(EventKind::AwaitSatisfied {
            item_id: item.clone(),
            answer,
        });
        Ok(match self.elicitations.len() {
            0 => AwaitProgress::Satisfied,
            remaining => AwaitProgress::Pending { remaining },
        })
    }

    /// Withdraws the pending elicitations of call `id` (it has a result).
    pub(super) fn withdraw_elicitations_of(&mut self, id: &ToolCallId) {
        self.withdraw_where(|e| &e.tool_call_id == id);
    }

    fn withdraw_where(&mut self, mut gone: impl FnMut(&Elicitation) -> bool) {
        if self.elicitations.is_empty() {
            return;
        }
        let (withdrawn, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.elicitations)
            .into_iter()
            .partition(|e| gone(e));
        self.elicitations = kept;
        for e in withdrawn {
            self.outbox
                .push(EventKind::AwaitWithdrawn { item_id: e.id });
        }
    }
}
