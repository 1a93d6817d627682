//! weft-tools: tool infrastructure. Toolsets and their lifecycles, typed tools
//! built from async Rust functions, argument validation against JSON Schema,
//! and the catalog the run machine checks tool calls against.

pub mod toolset;

pub use toolset::{ToolFailure, ToolReply, ToolSet};
