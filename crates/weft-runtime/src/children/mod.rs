//! Agents called as tools: [`AgentToolSet`] offers other agents of the same
//! runtime as tools; calling one starts a child run through the call's
//! `weft_core::child::Children` (see `crate::runtime` for the runner) and
//! answers with the child's outcome. `ask` turns a child's questions into
//! its parent's, `budget` clips a child's caps to what its parent has
//! left, and `result` holds a child's result to its parent tool's contract.

pub(crate) mod ask;
pub(crate) mod budget;
mod result;
mod toolset;

pub use result::INVALID_RESULT;
pub use toolset::{AgentToolSet, PARENT_CALL_LABEL, PARENT_RUN_LABEL};
