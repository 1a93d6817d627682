//! Serving an MCP server handler over stdio or streamable HTTP (behind a
//! guard answering unparsable JSON bodies with JSON-RPC errors).

use std::net::SocketAddr;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP session could not be set up.
    #[error("MCP server: {0}")]
    Init(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The session's task ended abnormally (it panicked or was aborted).
    #[error("MCP server: the session ended abnormally: {0}")]
    Ended(#[from] tokio::task::JoinError),
    /// Listening or accepting failed.
    #[error("MCP server: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves `handler` on this process's stdin and stdout until the client leaves.
pub async fn serve_stdio<H: ServerHandler>(handler: H) -> Result<(), ServeError> {
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Init(Box::new(e)))?;
    running.waiting().await?;
    Ok(())
}

/// A bound streamable HTTP endpoint at `/mcp`, ready to serve.
pub struct HttpServer {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
}

impl HttpServer {
    /// Binds `addr` (port 0 picks a free port).
    pub async fn bind(addr: &str) -> Result<Self, ServeError> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        Ok(Self { listener, addr })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Serves a fresh handler from `make` per MCP session until `stop` is cancelled.
    pub async fn serve<H, F>(self, make: F, stop: CancellationToken) -> Result<(), ServeError>
    where
        H: ServerHandler,
        F: Fn() -> H + Send + Sync + 'static,
    {
        let service = StreamableHttpService::new(
            move || Ok(make()),
            LocalSessionManager::default().into(),
            StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
        );
        let router = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(super::http_guard::guard));
        axum::serve(self.listener, router)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await?;
        Ok(())
    }
}
