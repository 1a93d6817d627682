//! The `weft` command's subcommands; `main.rs` only parses and dispatches.

pub mod admin;
pub mod ask;
pub mod mcp;
#[cfg(feature = "local")]
pub mod models;
pub mod provider;
pub mod registry;
pub mod run;
pub mod serve;
