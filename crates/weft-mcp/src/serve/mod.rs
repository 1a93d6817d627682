//! weft as an MCP server: the transports, and the handler exposing an agent
//! (as one tool) and, optionally, weft toolsets.

pub mod transport;

pub use transport::{HttpServer, ServeError, serve_stdio};
