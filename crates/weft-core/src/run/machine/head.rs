//! A machine split for storage: its [`SnapshotHead`] (every field but the
//! transcript and the tool outputs, with their counts) and those two
//! append-only lists, stored item by item. A store that keeps the lists
//! apart writes, per commit, the head and the items it does not hold yet,
//! so what a step writes does not grow with the run's length.
//! [`RunMachine::from_parts`] puts a machine back together and checks it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Finalize, Format, Phase, RunMachine, is_zero};
use crate::awaiting::Elicitation;
use crate::message::Message;
use crate::run::AppendOnly;
use crate::run::active_time::ActiveTime;
use crate::run::outbox::Outbox;
use crate::run::policy::Policy;
use crate::run::reminders::ReminderSet;
use crate::run::transcript::Transcript;
use crate::tool::{ToolIdent, ToolOutput};

use super::validate::InvalidSnapshot;

/// A run machine without its transcript and tool outputs: how many of each
/// it has stands in for them. Serialized, it is the machine's JSON with
/// `transcript` and `outputs` replaced by `parts`
/// (`{"messages": n, "outputs": m}`), which a full snapshot never has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotHead {
    format: Format,
    policy: Policy,
    phase: Phase,
    turn: u32,
    retries_used: u32,
    calls_made: u32,
    failures_in_row: u32,
    next_call_seq: u64,
    clock: ActiveTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finalize: Option<Finalize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    restrict_to: Option<ToolIdent>,
    parts: PartCounts,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    state: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "ReminderSet::is_empty")]
    reminders: ReminderSet,
    #[serde(default)]
    event_seq: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    paused: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    elicitations: Vec<Elicitation>,
    #[serde(default, skip_serializing_if = "is_zero")]
    elicitation_seq: u64,
}

/// How many messages and tool outputs a head's machine has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct PartCounts {
    messages: usize,
    outputs: usize,
}

impl SnapshotHead {
    /// The number of messages in the machine's transcript.
    pub fn messages(&self) -> usize {
        self.parts.messages
    }

    /// The number of the machine's tool outputs.
    pub fn outputs(&self) -> usize {
        self.parts.outputs
    }
}

impl RunMachine {
    /// The machine without its transcript and tool outputs (read those
    /// through [`transcript`](Self::transcript) and
    /// [`tool_outputs`](Self::tool_outputs)); its size does not depend on
    /// the run's length, only on its current turn.
    pub fn snapshot_head(&self) -> SnapshotHead {
        SnapshotHead {
            format: Format,
            policy: self.policy.clone(),
            phase: self.phase.clone(),
            turn: self.turn,
            retries_used: self.retries_used,
            calls_made: self.calls_made,
            failures_in_row: self.failures_in_row,
            next_call_seq: self.next_call_seq,
            clock: self.clock.clone(),
            finalize: self.finalize.clone(),
            restrict_to: self.restrict_to.clone(),
            parts: PartCounts {
                messages: self.transcript.len(),
                outputs: self.outputs.len(),
            },
            state: self.state.clone(),
            reminders: self.reminders.clone(),
            event_seq: self.event_seq,
            paused: self.paused,
            elicitations: self.elicitations.clone(),
            elicitation_seq: self.elicitation_seq,
        }
    }

    /// The machine `head` describes, with its transcript (`messages`, oldest
    /// first) and tool outputs (in order), checked like a deserialized one
    /// ([`validate`](Self::validate)). Lists whose lengths differ from the
    /// head's counts are an error: an item was lost or added.
    pub fn from_parts(
        head: SnapshotHead,
        messages: Vec<Message>,
        outputs: Vec<Arc<ToolOutput>>,
    ) -> Result<Self, InvalidSnapshot> {
        if messages.len() != head.parts.messages {
            return Err(InvalidSnapshot(format!(
                "{} transcript messages where the head counts {}",
                messages.len(),
                head.parts.messages
            )));
        }
        if outputs.len() != head.parts.outputs {
            return Err(InvalidSnapshot(format!(
                "{} tool outputs where the head counts {}",
                outputs.len(),
                head.parts.outputs
            )));
        }
        let machine = Self {
            format: Format,
            policy: head.policy,
            phase: head.phase,
            turn: head.turn,
            retries_used: head.retries_used,
            calls_made: head.calls_made,
            failures_in_row: head.failures_in_row,
            next_call_seq: head.next_call_seq,
            clock: head.clock,
            finalize: head.finalize,
            restrict_to: head.restrict_to,
            transcript: Transcript::new(messages),
            outputs: AppendOnly::from_vec(outputs),
            state: head.state,
            reminders: head.reminders,
            event_seq: head.event_seq,
            paused: head.paused,
            elicitations: head.elicitations,
            elicitation_seq: head.elicitation_seq,
            outbox: Outbox::default(),
        };
        machine.validate()?;
        Ok(machine)
    }
}
