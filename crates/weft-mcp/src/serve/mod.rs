//! weft as an MCP server: the transports, the handler exposing an agent (as
//! one tool) and, optionally, weft toolsets, what a running call reports to
//! its client, and MCP logging.

pub mod handler;
mod http_guard;
pub mod logging;
pub mod progress;
pub mod transport;

pub use handler::{AgentRunner, AgentTool, WeftServer};
pub use progress::Progress;
pub use transport::{HttpServer, ServeError, serve_stdio};
