//! weft-core: the contract every weft crate speaks and the sans-IO run machine.
//!
//! This crate does no IO. It has no async runtime, no sockets, no files and no
//! clocks: time comes in as a [`Timestamp`] value, tool results and planner
//! decisions come in as values, and [`run::RunMachine`] answers with the next
//! [`run::Step`] to take. The runtime (`weft-runtime`) drives it.
//!
//! Adapters (model clients, stores, registries, MCP) depend on this crate
//! alone: implement [`model::ModelClient`], [`store::RunStore`] or
//! [`planner::Planner`] here and the runtime can use it without knowing it.
//!
//! Organization:
//! - [`ids`], [`time`]: identifier newtypes and time values.
//! - [`message`]: conversation messages and their parts.
//! - [`tool`]: tool specs, requests, outputs, errors and retry hints.
//! - [`tool_output`]: the sink a running tool publishes live output to.
//! - [`awaiting`]: await barriers (clarifications, questions, external tools,
//!   confirmations, elicitations).
//! - [`elicitation`]: a running tool's questions to the human and the [`elicitation::Elicitor`] it asks through.
//! - [`planner`]: the planner trait, its inputs and its decisions.
//! - [`reminder`]: reminders (tiers, spacing) planners add to a run.
//! - [`prompt`]: the prompt registry: templates, versions, overrides, rendering.
//! - [`model`]: the model client trait, stream chunks and the stream assembler.
//! - [`event`]: run events.
//! - [`run`]: the run machine, its policy and its driver protocol.
//! - [`store`]: the run store trait that durable stores implement.
//! - [`lease`]: who may drive a run: leases with fencing epochs.
//! - [`history`]: history policies: what a run in a session starts from.

pub mod awaiting;
pub mod backoff;
pub mod elicitation;
pub mod event;
pub mod history;
pub mod ids;
pub mod lease;
pub mod message;
pub mod model;
pub mod planner;
pub mod prompt;
pub mod reminder;
pub mod run;
pub mod session;
pub mod store;
pub mod time;
pub mod tool;
pub mod tool_output;

pub use ids::{AgentId, AwaitItemId, RunId, SessionId, ToolCallId, TurnId};
pub use time::Timestamp;
pub use tool::child;
