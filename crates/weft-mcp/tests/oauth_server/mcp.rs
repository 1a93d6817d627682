//! The test server's MCP endpoint: one `echo` tool over streamable HTTP,
//! behind a bearer check when the server is protected.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

use super::AuthState;

#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema: JsonObject =
            json!({"type": "object", "properties": {"text": {"type": "string"}}})
                .as_object()
                .cloned()
                .unwrap();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Returns its text",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

pub fn router(state: Arc<AuthState>) -> axum::Router {
    let service = StreamableHttpService::new(
        || Ok(Echo),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(state, bearer_check))
}

/// Records the `Authorization` header; on a protected server lets only valid tokens through.
async fn bearer_check(State(s): State<Arc<AuthState>>, request: Request, next: Next) -> Response {
    if !request.uri().path().starts_with("/mcp") {
        return next.run(request).await;
    }
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    s.seen.lock().unwrap().push(authorization.clone());
    if !s.protected {
        return next.run(request).await;
    }
    let valid = authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
        .is_some_and(|t| s.access.lock().unwrap().contains(t));
    if valid {
        return next.run(request).await;
    }
    let challenge = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"tools\"",
        s.base
    );
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        "unauthorized",
    )
        .into_response()
}
