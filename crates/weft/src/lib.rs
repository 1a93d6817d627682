//! weft: a durable agent runtime for Rust.
//!
//! This facade re-exports the crates an application embeds — the contract
//! ([`core`]), tools ([`tools`]) and the runtime ([`runtime`]) — and holds
//! what the `weft` binary is made of: agent files ([`agent_file`]) and the
//! built-in example toolsets ([`builtin`], from `weft-tools`). Its
//! benchmarks are the `weft-bench` crate's.
//!
//! ```no_run
//! use std::sync::Arc;
//! use weft::core::planner::{PlanResult, ToolCallRequest};
//! use weft::runtime::{Agent, Runtime, ScriptedPlanner, StartRequest};
//!
//! # async fn demo() -> anyhow::Result<()> {
//! let planner = Arc::new(ScriptedPlanner::new(vec![
//!     PlanResult::tool_calls(vec![ToolCallRequest::new("calc.add", serde_json::json!({"a": 2, "b": 3}))]),
//!     PlanResult::final_text("2 + 3 = 5"),
//! ]));
//! let agent = Agent::builder("calculator", planner).toolset(weft::builtin::calc()).build();
//! let runtime = Runtime::builder().agent(agent).build();
//! let run = runtime.start("calculator", StartRequest::user("What is 2 + 3?")).await?;
//! println!("{:?}", run.outcome().await?);
//! # Ok(()) }
//! ```

pub use weft_core as core;
pub use weft_runtime as runtime;
pub use weft_tools as tools;
pub use weft_tools::builtin;

pub use weft_a2a as a2a;
pub mod agent_file;
pub mod cli;
pub mod render;
pub mod toolset_spec;
pub mod transcript;
