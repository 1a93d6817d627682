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
struct Echo(Arc<AuthState>);

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
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get(header::AUTHORIZATION))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.0.calls.lock().unwrap().push(token);
        let args = request.arguments.unwrap_or_default();
        let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

pub fn router(state: Arc<AuthState>) -> axum::Router {
    let echo = Echo(state.clone());
    let service = StreamableHttpService::new(
        move || Ok(echo.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(state, bearer_check))
}

/// Records the `Authorization` header; on a protected server lets only
/// valid tokens through, and a `tools/call` only with the scopes calls need.
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
    let scopes = authorization
        .as_deref()
        .and_then(|a| a.strip_prefix("Bearer "))
        .and_then(|t| s.access.lock().unwrap().get(t).cloned());
    let Some(scopes) = scopes else {
        let challenge = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"tools\"",
            s.base
        );
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
            "unauthorized",
        )
            .into_response();
    };
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let method = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned));
    let needed = s.call_scopes.lock().unwrap().clone();
    let enough = needed.iter().all(|n| scopes.contains(n))
        && !s.never_enough.load(std::sync::atomic::Ordering::SeqCst);
    if method.as_deref() == Some("tools/call") && !enough {
        let needed = if needed.is_empty() {
            vec!["tools".to_owned()]
        } else {
            needed
        };
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            needed.join(" "),
            s.base
        );
        return (
            StatusCode::FORBIDDEN,
            [(header::WWW_AUTHENTICATE, challenge)],
            "insufficient_scope",
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}
