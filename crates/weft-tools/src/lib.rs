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
//! - [`builtin`]: the example toolsets agent files can name (`calc`, `text`, `journal`).

pub mod builtin;
pub mod capability;
pub mod catalog;
pub mod describe;
mod forward;
pub mod reply;
pub mod schema;
pub mod startable;
pub mod toolset;
pub mod typed;

pub use capability::{
    ElicitationHandler, ElicitationRequest, ElicitationResponse, ElicitationSupport, Instructions,
    Lifecycle, OAuthError, OAuthToken, OAuthTokenSource, PublicDescription, ToolListChanges,
    ToolListNotifier, find_capability, find_elicitation, find_instructions, find_lifecycle,
    find_oauth, find_public_description, find_tool_list_changes,
};
pub use catalog::{CatalogError, SchemaCatalog};
pub use describe::{
    DescribedToolSet, inject_description, strip_description, strip_description_for,
};
pub use reply::Content;
pub use schema::{ArgsValidator, SchemaError};
pub use startable::StartableToolSet;
pub use toolset::{ToolFailure, ToolReply, ToolSet};
pub use typed::{DomainError, FnToolSet, IntoToolFailure, RegistrationError, input_schema_for};
