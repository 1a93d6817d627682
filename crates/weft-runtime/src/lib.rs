//! weft-runtime: the driver of runs.
//!
//! A [`Runtime`] holds registered [`Agent`]s and a [`weft_core::store::RunStore`].
//! [`Runtime::start`] creates a run's [`weft_core::run::RunMachine`], commits
//! it with its `RunStarted` event, and spawns a task that loops on the
//! machine's steps: call the planner, resolve invalid calls, execute tool
//! batches concurrently (per-call timeout, panics and timeouts become tool
//! errors, oversized results are omitted), pause on awaits, finish. Every
//! step's events and snapshot are committed together, so a crashed process
//! recovers each unfinished run with [`Runtime::recover_unfinished`] without
//! re-executing completed tool calls.
//!
//! Observability: the driver opens GenAI spans (tracing target `gen_ai`:
//! `invoke_agent`, `execute_tool`, await events) that a trace exporter may
//! pick up, all parts of one run in one trace (the first part's span
//! context is kept in the run's state under [`RUN_TRACE_KEY`]), and tells
//! the runtime's [`Observer`] what it counted ([`observe`]).
//!
//! Architecture invariant: this crate knows no concrete adapter. Models,
//! durable stores and toolsets come in through `weft-core`'s and
//! `weft-tools`' traits; the in-memory store here is the only store it ships.

pub mod advisor;
mod agent;
mod children;
mod clock;
mod context;
mod driver;
mod error;
mod events;
mod inbox;
mod leases;
mod memory;
pub mod observe;
pub mod replay;
mod runtime;
mod scripted;
mod session;
mod tools;
mod toolsets;
mod turn;

pub use agent::{Agent, AgentBuilder, InvalidCallPolicy, RetryThenFail};
pub use children::{AgentToolSet, INVALID_RESULT, PARENT_CALL_LABEL, PARENT_RUN_LABEL};
pub use clock::{Clock, SystemClock, TokioClock};
pub use driver::spans::{
    CAPTURE_CONTENT_VAR, TARGET as GENAI_TARGET, TRACE_KEY as RUN_TRACE_KEY, capture_content,
};
pub use error::RuntimeError;
pub use events::{CATCH_UP_PAGE, EventStream};
pub use memory::MemoryStore;
pub use observe::{NoObserver, Observation, Observer};
pub use runtime::{
    DEFAULT_MAX_DRIVEN_RUNS, DEFAULT_PAYLOAD_BUDGET, RunHandle, Runtime, RuntimeBuilder,
    StartRequest,
};
pub use scripted::ScriptedPlanner;
pub use tools::CatalogError;
pub use toolsets::{RETRY_UNAVAILABLE, ToolsetFailure};
