//! weft as an MCP server: the transports, and the handler exposing an agent
//! (as one tool) and, optionally, weft toolsets.

pub mod handler;
pub mod transport;

pub use handler::{AgentRunner, AgentTool, Progress, WeftServer};
pub use transport::{HttpServer, ServeError, serve_stdio};
