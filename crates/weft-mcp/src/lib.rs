//! weft-mcp: the Model Context Protocol adapter, on the official Rust SDK
//! (`rmcp`).
//!
//! Organization:
//! - [`config`]: [`McpConfig`], how to reach a server (stdio child process or
//!   streamable HTTP) and the limits applied to it.
//! - [`client`]: [`McpToolSet`], an MCP server's tools as a weft toolset.
//! - [`tenants`]: [`TenantScopedToolSet`], an OAuth server with one identity per tenant.
//! - [`convert`]: MCP tools and results mapped to weft specs and replies.
//! - [`bound`]: results cut to the payload budget, with bounds.
//! - [`error`]: [`McpError`], every failure naming its toolset and tool.
//! - [`oauth`]: OAuth 2.1 for streamable HTTP servers ([`OAuthConfig`]).
//! - [`serve`]: weft as an MCP server (stdio, streamable HTTP).
//! - `trace`: the caller's W3C trace context in each call's request `_meta`.

pub mod bound;
pub mod client;
pub mod config;
pub mod convert;
pub mod error;
pub mod oauth;
pub mod tenants;
mod tls;
mod trace;

pub use client::McpToolSet;
pub use config::{Backoff, McpConfig, Transport};
pub use error::McpError;
pub use oauth::{OAuthConfig, OAuthFlowError};
pub use tenants::TenantScopedToolSet;
pub mod serve;
