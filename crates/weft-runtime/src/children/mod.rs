//! Agents called as tools: [`AgentToolSet`] offers other agents of the same
//! runtime as tools; calling one starts a child run through the call's
//! `weft_core::child::Children` (see `crate::runtime` for the runner) and
//! answers with the child's outcome. `ask` turns a child's questions into
//! its parent's.

pub(crate) mod ask;
mod toolset;

pub use toolset::AgentToolSet;
