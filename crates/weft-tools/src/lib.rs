//! weft-tools: tool infrastructure. Toolsets and their lifecycles, typed tools
//! built from async Rust functions, argument validation against JSON Schema,
//! and the catalog the run machine checks tool calls against.
//!
//! Organization:
//! - [`toolset`]: the [`ToolSet`] trait and the reply types of a call.
//! - [`capability`]: optional toolset capabilities and their lookup through wrappers.
//! - [`startable`]: [`StartableToolSet`], a lazy, single-flight start/stop lifecycle.
//! - [`schema`]: compiled argument validators, field issues and retry hints.
//! - [`catalog`]: [`SchemaCatalog`], the run machine's [`weft_core::run::ToolCatalog`].
//! - [`typed`]: [`FnToolSet`], tools built from async Rust functions.
//! - [`describe`]: the optional `description` parameter injected into every tool.

pub mod capability;
pub mod catalog;
pub mod describe;
pub mod reply;
pub mod schema;
pub mod startable;
pub mod toolset;
pub mod typed;

pub use capability::{find_capability, find_lifecycle};
pub use catalog::{CatalogError, SchemaCatalog};
pub use describe::{DescribedToolSet, strip_description};
pub use schema::ArgsValidator;
pub use startable::StartableToolSet;
pub use toolset::{ToolFailure, ToolReply, ToolSet};
pub use typed::FnToolSet;
