//! Benchmarks behind `weft bench`: each prints JSON lines that anyone can rerun.

pub mod agent_loop;
mod command;
pub mod durable_loop;
pub mod mcp;
pub mod registry;
pub mod rss;

pub use command::BenchCommand;
