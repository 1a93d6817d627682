//! Whose tasks an A2A endpoint sees, and how it starts one. [`Open`] is
//! `weft a2a serve`'s: the whole server is one agent for whoever reaches
//! it, every task is visible to every client and a client's `contextId`
//! becomes the session id as it is. A host with tenants (`weft serve`)
//! brings its own: the runs it starts carry the caller's labels, in
//! sessions the caller owns, under the caller's quotas, and a task of
//! anyone else is not found.

use async_trait::async_trait;
use weft_core::SessionId;
use weft_core::tool::Labels;
use weft_runtime::{Runtime, StartRequest};

use crate::rpc::{RpcError, refused};

/// Whose tasks an endpoint sees and how it starts one.
#[async_trait]
pub trait Tenancy: Send + Sync {
    /// Whether the caller may see, answer and cancel a run labelled `labels`.
    fn owns(&self, labels: &Labels) -> bool;

    /// Starts the caller's run of `agent`. `request` has its run id and
    /// messages; its session is the client's `contextId` when it gave one
    /// (checked to be well formed), none otherwise.
    async fn start(
        &self,
        runtime: &Runtime,
        agent: &str,
        request: StartRequest,
    ) -> Result<(), RpcError>;
}

/// Every task visible to every client; a new context gets a fresh id.
#[derive(Debug, Clone, Copy, Default)]
pub struct Open;

#[async_trait]
impl Tenancy for Open {
    fn owns(&self, _labels: &Labels) -> bool {
        true
    }

    async fn start(
        &self,
        runtime: &Runtime,
        agent: &str,
        mut request: StartRequest,
    ) -> Result<(), RpcError> {
        if request.session_id.is_none() {
            request.session_id = Some(SessionId::new(uuid::Uuid::now_v7().to_string()));
        }
        runtime.start(agent, request).await.map_err(refused)?;
        Ok(())
    }
}
