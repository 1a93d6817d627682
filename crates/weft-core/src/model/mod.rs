//! Models as the contract sees them: the [`ModelClient`] trait, requests,
//! stream chunks, token usage and its cost ([`Usage`]), and the sans-IO
//! [`StreamAssembler`] that turns chunks into a [`ModelSummary`] while
//! forwarding them to a planner's event sink, and the [`ModelSetup`] a
//! model planner records of what it asked with.

mod assemble;
mod setup;
mod types;
mod usage;

pub use assemble::{AssembleError, StreamAssembler, summary_chunks};
pub use setup::{MODEL_SETUP_KEY, ModelSetup, ToolDigest};
pub use types::*;
pub use usage::Usage;

use std::pin::Pin;

use async_trait::async_trait;
use futures_core::Stream;

/// A stream of chunks from a model.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<StreamChunk, ModelError>> + Send>>;

/// A language model behind some API.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// The client's model id, e.g. `anthropic/claude-sonnet-4-5`.
    fn id(&self) -> &str;

    /// Where the model is served: the host and port of the provider's
    /// endpoint (a trace's `server.address` and `server.port`); `None` for
    /// a model that runs in this process or plays back answers.
    fn server(&self) -> Option<(&str, u16)> {
        None
    }

    /// Sends a request and waits for the whole answer.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelSummary, ModelError>;

    /// Sends a request and streams the answer as it is produced.
    async fn stream(&self, request: &ModelRequest) -> Result<ChunkStream, ModelError>;
}
