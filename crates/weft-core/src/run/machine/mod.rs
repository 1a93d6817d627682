//! [`RunMachine`]: the run's state, how it is created and serialized, and
//! the helpers its transitions share. The transitions live in the files
//! beside this one: [`view`] (getters, `next_step` and the time budget),
//! [`inputs`] (what the driver feeds), [`batch`] (checking and executing a
//! turn's tool calls, caps), [`awaits`] (entering and answering awaits) and
//! [`elicit`] (running calls asking the human, while the batch executes),
//! [`validate`] (checking a machine read back from a store) and [`head`]
//! (the machine split for storage: a small head and its append-only lists).
//! See the module docs of [`crate::run`] for the driver loop.

mod availability;
mod awaits;
mod batch;
mod children;
mod crash;
mod elicit;
mod exclusive;
mod head;
mod inputs;
mod resolve;
mod validate;
mod view;

pub use elicit::MAX_PENDING_ELICITATIONS;
pub use head::SnapshotHead;
pub use validate::InvalidSnapshot;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::awaiting::{AwaitAnswer, AwaitItem, Confirmation, Elicitation};
use crate::event::EventKind;
use crate::ids::{AgentId, AwaitItemId, SessionId, ToolCallId};
use crate::message::{Message, Part, Role};
use crate::planner::{
    CallArguments, Decision, PlanResult, Reminder, Termination, TerminationReason,
};
use crate::run::active_time::ActiveTime;
use crate::run::append_only::AppendOnly;
use crate::run::catalog::{
    InvalidReason, InvalidToolCallContext, PlanOutcome, Resolution, ToolCatalog,
};
use crate::run::error::RunError;
use crate::run::outbox::Outbox;
use crate::run::policy::Policy;
use crate::run::reminders::{ReminderAdded, ReminderSet};
use crate::run::render::render_tool_output;
use crate::run::step::{PendingCalls, PhaseName, PlanKind, RunFailure, RunOutcome, Step, ToolCall};
use crate::run::transcript::Transcript;
use crate::time::Timestamp;
use crate::tool::{RetryHint, ToolError, ToolErrorCode, ToolIdent, ToolOutput, ToolResultBody};

/// The snapshot format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// How to create a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The agent running.
    pub agent_id: AgentId,
    /// The session the run belongs to.
    pub session_id: SessionId,
    /// The run's limits.
    pub policy: Policy,
    /// The conversation the run starts from (session history plus input).
    pub messages: Vec<Message>,
}

impl RunConfig {
    /// A run of `agent_id` in `session_id` on `messages`, with the default policy.
    pub fn new(
        agent_id: impl Into<AgentId>,
        session_id: impl Into<SessionId>,
        messages: Vec<Message>,
    ) -> Self {
        Self {
            agent_id: agent_id.into(),
            session_id: session_id.into(),
            policy: Policy::default(),
            messages,
        }
    }

    /// The same run under `policy`.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }
}

/// Progress of an await after an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwaitProgress {
    /// More items need answers.
    Pending {
        /// How many.
        remaining: usize,
    },
    /// Every item is answered; the run moves on.
    Satisfied,
}

/// A run's decisions as a sans-IO state machine; see [`crate::run`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMachine {
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
    transcript: Transcript,
    outputs: AppendOnly<Arc<ToolOutput>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    state: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "ReminderSet::is_empty")]
    reminders: ReminderSet,
    #[serde(default)]
    event_seq: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    paused: bool,
    /// Questions of running calls of the batch, waiting for answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    elicitations: Vec<Elicitation>,
    /// Elicitations asked so far: the next one's id.
    #[serde(default, skip_serializing_if = "is_zero")]
    elicitation_seq: u64,
    #[serde(skip)]
    outbox: Outbox,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
enum Phase {
    Planning { kind: PlanKind },
    Resolving(Box<Resolving>),
    Executing(Batch),
    Awaiting(Box<Awaiting>),
    Finished { outcome: RunOutcome },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Batch {
    calls: Vec<ToolCall>,
    results: Vec<Option<Arc<ToolOutput>>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Resolving {
    preamble: Vec<Part>,
    calls: Vec<Checked>,
    current: usize,
    context: InvalidToolCallContext,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Checked {
    id: ToolCallId,
    requested: String,
    arguments: CallArguments,
    parent: Option<ToolCallId>,
    verdict: Verdict,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Verdict {
    Valid {
        name: ToolIdent,
        payload: Value,
        /// The call waits for a human's approval (the tool policy says so).
        #[serde(default)]
        confirm: bool,
    },
    Invalid(InvalidReason),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Awaiting {
    items: Vec<AwaitItem>,
    answers: Vec<Option<AwaitAnswer>>,
    then: AfterAwait,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum AfterAwait {
    Plan,
    Execute(Batch),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Finalize {
    termination: Termination,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deadline: Option<Timestamp>,
}

impl RunMachine {
    /// A new run at `now`, about to plan its first turn; its first event
    /// (`RunStarted`) waits in the outbox.
    pub fn new(config: RunConfig, now: Timestamp) -> Self {
        let mut outbox = Outbox::default();
        outbox.push(EventKind::RunStarted {
            agent_id: config.agent_id,
            session_id: config.session_id,
            input: config.messages.clone(),
        });
        Self {
            format: Format,
            policy: config.policy,
            phase: Phase::Planning {
                kind: PlanKind::Start,
            },
            turn: 0,
            retries_used: 0,
            calls_made: 0,
            failures_in_row: 0,
            next_call_seq: 0,
            clock: ActiveTime::started(now),
            finalize: None,
            restrict_to: None,
            transcript: Transcript::new(config.messages),
            outputs: AppendOnly::default(),
            state: BTreeMap::new(),
            reminders: ReminderSet::default(),
            event_seq: 0,
            paused: false,
            elicitations: Vec::new(),
            elicitation_seq: 0,
            outbox,
        }
    }

    // ---- internals -----------------------------------------------------

    /// Ends the run with `outcome` and says so. Results of a batch cut short
    /// (by a cancel or a failure) stay among the run's outputs: those calls
    /// ran, and their events said so.
    fn finish(&mut self, outcome: RunOutcome) {
        self.withdraw_elicitations();
        self.outbox.push(EventKind::RunFinished {
            outcome: outcome.clone(),
        });
        let batch = match std::mem::replace(&mut self.phase, Phase::Finished { outcome }) {
            Phase::Executing(b) => Some(b),
            Phase::Awaiting(a) => match a.then {
                AfterAwait::Execute(b) => Some(b),
                AfterAwait::Plan => None,
            },
            _ => None,
        };
        if let Some(b) = batch {
            self.outputs.extend(b.results.into_iter().flatten());
        }
    }

    /// Makes the run finalize because of `termination` and says so.
    fn terminate(&mut self, termination: Termination, deadline: Option<Timestamp>) {
        self.outbox.push(EventKind::Termination {
            termination: termination.clone(),
        });
        self.finalize = Some(Finalize {
            termination,
            deadline,
        });
    }

    /// An output the machine recorded itself, announced as finished.
    fn record(&mut self, output: ToolOutput) -> Arc<ToolOutput> {
        let output = Arc::new(output);
        self.outbox.push(EventKind::ToolFinished {
            output: output.clone(),
        });
        output
    }

    fn wrong_phase(&self, input: &'static str) -> RunError {
        RunError::WrongPhase {
            input,
            phase: self.phase_name(),
        }
    }

    fn id_in_use(&self, id: &ToolCallId) -> bool {
        self.outputs.iter().any(|o| &o.tool_call_id == id)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn parse_arguments(arguments: &CallArguments) -> Result<Value, InvalidReason> {
    match arguments {
        CallArguments::Json(v) => Ok(v.clone()),
        CallArguments::Raw(s) => {
            serde_json::from_str(s).map_err(|e| InvalidReason::MalformedJson {
                message: e.to_string(),
            })
        }
    }
}

fn raw_payload(arguments: &CallArguments) -> Value {
    match arguments {
        CallArguments::Json(v) => v.clone(),
        CallArguments::Raw(s) => Value::String(s.clone()),
    }
}

fn not_executed(call: &ToolCall, code: ToolErrorCode, message: &str) -> ToolOutput {
    ToolOutput::error(
        call.id.clone(),
        call.name.clone(),
        call.payload.clone(),
        ToolError::new(code, message),
    )
}

fn placeholder_context() -> InvalidToolCallContext {
    // Made once: every accepted batch holds a placeholder while it is checked.
    static NO_CALL: std::sync::LazyLock<ToolCallId> =
        std::sync::LazyLock::new(|| ToolCallId::new(""));
    InvalidToolCallContext {
        tool_name: String::new(),
        tool_call_id: NO_CALL.clone(),
        arguments: CallArguments::Json(Value::Null),
        reason: InvalidReason::UnknownTool,
        available: Vec::new(),
        retries_left: 0,
    }
}

/// The snapshot format marker; deserializing another version is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Format;

impl Serialize for Format {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(FORMAT_VERSION)
    }
}

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u32::deserialize(d)?;
        if v == FORMAT_VERSION {
            Ok(Format)
        } else {
            Err(serde::de::Error::custom(format!(
                "run snapshot format {v} is not supported (this build reads format {FORMAT_VERSION})"
            )))
        }
    }
}
