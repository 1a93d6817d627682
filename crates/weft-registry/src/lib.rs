//! weft-registry: tools served by other processes through Redis Streams,
//! wire-compatible with loom-mcp's `toolregistry`.
//!
//! - [`access`]: the gateway's bearer tokens, roles and scopes.
//! - [`wire`]: stream names and the JSON messages, byte for byte.
//! - [`pulse`]: Pulse stream entries (`pulse:stream:<name>`, fields `n`, `p`, `t`).
//! - [`conn`]: Redis connections (multiplexed writes, dedicated blocking reads).
//! - [`catalog`]: the registry's state in Redis.
//! - [`admission`]: the one-script health check, queue bound and publish.
//! - `batch`: one round trip for the items callers submit at the same time.
//! - [`executor`]: a registry toolset as a weft `ToolSet`.
//! - [`gateway`]: the HTTP service (`weft registry serve`) and the health pinger.
//! - [`provider`]: serves a weft toolset from its request stream.
//! - [`client`], [`dto`]: the gateway's HTTP client and bodies.
//! - [`schema`]: payload validation with loom-mcp's field issues.
//! - `trace`: W3C trace context from the executor's span to the provider's.

pub mod access;
pub mod admission;
mod batch;
pub mod catalog;
pub mod client;
pub mod conn;
pub mod dto;
pub mod error;
pub mod executor;
pub mod gateway;
mod go_json;
pub mod provider;
pub mod pulse;
pub mod schema;
mod trace;
pub mod wire;

pub use access::{BearerToken, RegistryTokens};
pub use catalog::{Catalog, Namespace, ToolSchema, ToolsetRecord};
pub use client::GatewayClient;
pub use conn::{Redis, RedisOptions};
pub use error::RegistryError;
pub use executor::{ExecutorConfig, LazyRegistryToolSet, RegistryToolSet};
pub use gateway::{Gateway, GatewayAuth, GatewayConfig};
pub use provider::{Provider, ProviderConfig};
