//! The model planner end to end: a two-tool agent driven by weft-core's run
//! machine (a small sans-IO driver loop stands in for the runtime) against
//! the scripted model and against each provider's local replay server.

#[path = "../common/mod.rs"]
mod common;
mod harness;
mod http;
mod scripted;
