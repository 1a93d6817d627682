//! The `weft` command's subcommands; `main.rs` only parses and dispatches.

pub mod ask;
pub mod run;
