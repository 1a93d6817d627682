//! weft as an MCP server: the transports, the handler exposing an agent (as
//! one tool) and, optionally, weft toolsets (their results mapped to MCP
//! content in `content`), what a running call reports to its client, the
//! run's questions asked of it (`ask`), and MCP logging.

mod ask;
mod content;
pub mod handler;
mod http_guard;
pub mod logging;
pub mod progress;
pub mod transport;

pub use ask::{Asker, NotAnswered};
pub use handler::{AgentRunner, AgentTool, WeftServer};
pub use progress::Progress;
pub use transport::{HttpServer, ServeError, serve_stdio};
