//! The run machine: a run's decisions as a sans-IO, serializable state machine.
//!
//! [`RunMachine`] holds everything a run has decided and seen: its policy, its
//! phase, its counters, its active-time clock, its transcript and its tool
//! outputs. It performs no IO and reads no clock; a driver (the runtime, a
//! test, a replay tool) feeds it inputs and asks it what to do next.
//!
//! Its methods come in four kinds, in the manner of `quinn-proto`:
//! - **getters** (`phase_name`, `transcript`, `tool_outputs`, `turn`, ...)
//!   never change anything;
//! - **`next_step(now)`** says what the driver must do now. It applies the
//!   time budget, so it takes `&mut self`, but asking twice without new input
//!   returns the same step: that is what makes recovering after a crash work;
//! - **inputs** (`plan_result`, `resolve`, `tool_result`, `tool_results`,
//!   `elicit`, `answer`, `cancel`, `fail`) move the machine forward; an input in the
//!   wrong phase, or one that breaks the protocol, is a typed [`RunError`]
//!   and changes nothing;
//! - **`poll_timeout()`** gives the next deadline at which `next_step` must be
//!   called even if no input arrives;
//! - **`poll_event()`** (and `drain_events()`) hands over the events the
//!   transitions produced — run started, tool finished, await requested,
//!   satisfied and withdrawn, paused, continued, termination, run finished with its outcome —
//!   in order. The driver records exactly these, adding only what it saw
//!   itself (tool starts, streamed text, usage); it never infers an event
//!   from the machine's state.
//!
//! A driver loops: `next_step(now)`, do what it says, feed the result back,
//! collect the events, repeat until [`Step::Finish`]. Serialize the machine at any point (the
//! format carries [`FORMAT_VERSION`]) and a deserialized copy continues
//! exactly where the original was.

mod active_time;
mod append_only;
mod catalog;
mod error;
mod machine;
mod outbox;
mod policy;
mod projection;
mod reminders;
mod render;
mod step;
mod transcript;

#[cfg(test)]
mod decide_tests;
#[cfg(test)]
mod elicit_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use append_only::AppendOnly;

/// Every tool output of a run, in order (see [`RunMachine::tool_outputs`]).
pub type ToolOutputs = AppendOnly<std::sync::Arc<crate::tool::ToolOutput>>;
pub use catalog::{InvalidReason, InvalidToolCallContext, PlanOutcome, Resolution, ToolCatalog};
pub use error::RunError;
pub use machine::{
    AwaitProgress, FORMAT_VERSION, InvalidSnapshot, MAX_PENDING_ELICITATIONS, RunConfig,
    RunMachine, SnapshotHead,
};
pub use policy::{Policy, default_caps};
pub use projection::RunProjection;
pub use reminders::{ReminderAdded, ReminderSet};
pub use render::render_tool_output;
pub use step::{PendingCalls, PhaseName, PlanKind, RunFailure, RunOutcome, Step, ToolCall};
pub use transcript::Transcript;
