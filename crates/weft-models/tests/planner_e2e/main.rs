//! The model planner end to end: a two-tool agent driven by weft-core's run
//! machine (a small sans-IO driver loop stands in for the runtime) against
//! the scripted model and against each provider's local replay server.
//! The system prompt goes through the prompt registry and carries the
//! reminders (`prompts`). Usage carries its cost at the model's price
//! (`cost`).

mod ask;
#[path = "../common/mod.rs"]
mod common;
mod cost;
mod harness;
mod http;
mod prompts;
mod scripted;
mod whole;
