//! weft-registry: tools served by other processes through Redis Streams,
//! wire-compatible with loom-mcp's `toolregistry`.
//!
//! - [`wire`]: stream names and the JSON messages, byte for byte.
//! - [`pulse`]: Pulse stream entries (`pulse:stream:<name>`, fields `n`, `p`, `t`).

mod go_json;
pub mod wire;
