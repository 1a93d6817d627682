//! [`WeftServer`]: an MCP server handler exposing a weft agent as one tool
//! (a prompt in, the final answer out, the run's events as progress
//! notifications, the client's cancellation cancelling the run) and,
//! optionally, weft toolsets' tools under their full `toolset.tool` names.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use weft_core::ids::{RunId, SessionId, ToolCallId, TurnId};
use weft_core::message::{MediaSource, Part};
use weft_core::tool::{ToolIdent, ToolRequest, ToolResultBody, ToolSpec};
use weft_tools::{ArgsValidator, ToolSet};

/// Runs the agent behind the agent tool (implemented where the runtime is known).
#[async_trait]
pub trait AgentRunner: Send + Sync + 'static {
    /// Runs the agent on `prompt`, reporting progress, until it answers or `cancel` fires.
    async fn run(
        &self,
        prompt: String,
        progress: Progress,
        cancel: CancellationToken,
    ) -> Result<String, String>;
}

/// The agent exposed as a tool.
#[derive(Clone)]
pub struct AgentTool {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Who runs it.
    pub runner: Arc<dyn AgentRunner>,
}

/// Progress notifications for one call (nothing when the client asked for none).
pub struct Progress {
    target: Option<(Peer<RoleServer>, ProgressToken)>,
    count: u64,
}

impl Progress {
    /// Sends one progress notification carrying `message`.
    pub async fn report(&mut self, message: String) {
        self.count += 1;
        if let Some((peer, token)) = &self.target {
            let mut param = ProgressNotificationParam::new(token.clone(), self.count as f64);
            param.message = Some(message);
            let _ = peer.notify_progress(param).await;
        }
    }
}

/// The MCP server handler.
#[derive(Clone)]
pub struct WeftServer {
    agent: Option<AgentTool>,
    toolsets: Vec<Arc<dyn ToolSet>>,
}

impl WeftServer {
    /// A server exposing `agent` (if any) and `toolsets`' tools.
    pub fn new(agent: Option<AgentTool>, toolsets: Vec<Arc<dyn ToolSet>>) -> Self {
        Self { agent, toolsets }
    }

    async fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for set in &self.toolsets {
            match set.list_tools().await {
                Ok(listed) => specs.extend(listed),
                Err(e) => tracing::warn!(toolset = set.name(), error = %e, "toolset not exposed"),
            }
        }
        specs
    }

    async fn call_agent(
        &self,
        agent: &AgentTool,
        args: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(prompt) = args.get("prompt").and_then(Value::as_str) else {
            return CallToolResult::error(vec![ContentBlock::text(
                "`prompt` (a string) is required",
            )]);
        };
        let progress = Progress {
            target: context
                .meta
                .get_progress_token()
                .map(|t| (context.peer.clone(), t)),
            count: 0,
        };
        match agent
            .runner
            .run(prompt.to_owned(), progress, context.ct.clone())
            .await
        {
            Ok(answer) => CallToolResult::success(vec![ContentBlock::text(answer)]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        }
    }

    async fn call_toolset(&self, name: &str, args: JsonObject) -> CallToolResult {
        let ident = ToolIdent::new(name);
        let Some(set) = self.toolsets.iter().find(|s| s.name() == ident.toolset()) else {
            return CallToolResult::error(vec![ContentBlock::text(format!("no tool `{name}`"))]);
        };
        let specs = set.list_tools().await.unwrap_or_default();
        let Some(spec) = specs.iter().find(|s| s.name == ident) else {
            return CallToolResult::error(vec![ContentBlock::text(format!("no tool `{name}`"))]);
        };
        let payload = Value::Object(args);
        match ArgsValidator::compile(&spec.input_schema) {
            Ok(v) => {
                if let Err(issues) = v.validate(&payload) {
                    let text = issues
                        .iter()
                        .map(|i| format!("{}: {}", i.field, i.message))
                        .collect::<Vec<_>>()
                        .join("; ");
                    return CallToolResult::error(vec![ContentBlock::text(format!(
                        "invalid arguments for `{name}`: {text}"
                    ))]);
                }
            }
            Err(e) => return CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        }
        let request = ToolRequest {
            name: ident,
            payload: payload.into(),
            run_id: RunId::new("mcp"),
            session_id: SessionId::new("mcp"),
            turn_id: TurnId::new("mcp"),
            tool_call_id: ToolCallId::new("mcp"),
            parent_tool_call_id: None,
            labels: Default::default(),
            output: Default::default(),
            elicit: Default::default(),
            children: Default::default(),
        };
        match set.call_tool(request).await {
            Ok(reply) => body_result(reply.body),
            Err(failure) => {
                CallToolResult::error(vec![ContentBlock::text(failure.error.to_string())])
            }
        }
    }
}

/// A weft result body as an MCP result.
fn body_result(body: ToolResultBody) -> CallToolResult {
    match body {
        ToolResultBody::Json(v) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
            r.structured_content = Some(v);
            r
        }
        ToolResultBody::Content(c) => {
            let blocks = c
                .parts
                .into_iter()
                .filter_map(|p| match p {
                    Part::Text { text } => Some(ContentBlock::text(text)),
                    Part::Image(m) => Some(match m.source {
                        MediaSource::Base64(d) => ContentBlock::image(d, m.media_type),
                        MediaSource::Url(u) => ContentBlock::text(format!("[image] {u}")),
                    }),
                    Part::Audio(m) => Some(match m.source {
                        MediaSource::Base64(d) => ContentBlock::audio(d, m.media_type),
                        MediaSource::Url(u) => ContentBlock::text(format!("[audio] {u}")),
                    }),
                    _ => None,
                })
                .collect();
            let mut r = CallToolResult::success(blocks);
            r.structured_content = c.structured;
            r
        }
        ToolResultBody::Omitted(o) => CallToolResult::success(vec![ContentBlock::text(o.marker())]),
        ToolResultBody::Error(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
    }
}

fn mcp_tool(spec: &ToolSpec) -> Tool {
    let schema = spec.input_schema.as_object().cloned().unwrap_or_default();
    let a = &spec.annotations;
    Tool::new(
        spec.name.as_str().to_owned(),
        spec.description.clone(),
        Arc::new(schema),
    )
    .with_annotations(ToolAnnotations::from_raw(
        a.title.clone(),
        Some(a.read_only),
        Some(a.destructive),
        Some(a.idempotent),
        Some(a.open_world),
    ))
}

impl ServerHandler for WeftServer {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = Vec::new();
        if let Some(agent) = &self.agent {
            let schema = json!({
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "What to ask the agent"}},
                "required": ["prompt"]
            });
            tools.push(Tool::new(
                agent.name.clone(),
                agent.description.clone(),
                Arc::new(schema.as_object().cloned().unwrap_or_default()),
            ));
        }
        tools.extend(self.specs().await.iter().map(mcp_tool));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match &self.agent {
            Some(agent) if agent.name == request.name => {
                self.call_agent(agent, args, context).await
            }
            _ => self.call_toolset(&request.name, args).await,
        };
        Ok(result.into())
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}
