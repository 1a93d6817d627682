//! [`WeftServer`]: an MCP server handler exposing a weft agent as one tool
//! (a prompt in, the final answer out, the run's events as progress
//! notifications and log messages, its questions asked of the client as
//! elicitation, the client's cancellation cancelling the run) and,
//! optionally, weft toolsets' tools under their full `toolset.tool` names. It names itself `weft` (titled with the agent's
//! name) at weft's version, accepts `logging/setLevel`, and answers a call
//! of a tool it does not have, or a request whose params do not parse, with
//! JSON-RPC's invalid params.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, Implementation, JsonObject, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use weft_core::ids::{RunId, SessionId, ToolCallId, TurnId};
use weft_core::tool::{ToolIdent, ToolRequest, ToolSpec};
use weft_tools::{ArgsValidator, ToolSet};

use super::ask::Asker;
use super::content::{body_result, mcp_tool};
use super::logging::LogLevel;
use super::progress::Progress;

/// Runs the agent behind the agent tool (implemented where the runtime is known).
#[async_trait]
pub trait AgentRunner: Send + Sync + 'static {
    /// Runs the agent on `prompt`, reporting progress and putting the run's
    /// questions to the client through `asker`, until it answers or
    /// `cancel` fires.
    async fn run(
        &self,
        prompt: String,
        progress: Progress,
        asker: Asker,
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

/// The MCP server handler.
#[derive(Clone)]
pub struct WeftServer {
    agent: Option<AgentTool>,
    toolsets: Vec<Arc<dyn ToolSet>>,
    /// The session's log level (clones share it; [`WeftServer::session`] does not).
    log: LogLevel,
}

impl WeftServer {
    /// A server exposing `agent` (if any) and `toolsets`' tools.
    pub fn new(agent: Option<AgentTool>, toolsets: Vec<Arc<dyn ToolSet>>) -> Self {
        Self {
            agent,
            toolsets,
            log: LogLevel::default(),
        }
    }

    /// The same server for a new MCP session: its own log level, unset.
    pub fn session(&self) -> Self {
        Self {
            agent: self.agent.clone(),
            toolsets: self.toolsets.clone(),
            log: LogLevel::default(),
        }
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
        let progress = Progress::new(
            context.peer.clone(),
            context.meta.get_progress_token(),
            self.log.clone(),
        );
        match agent
            .runner
            .run(
                prompt.to_owned(),
                progress,
                Asker::new(context.peer.clone()),
                context.ct.clone(),
            )
            .await
        {
            Ok(answer) => CallToolResult::success(vec![ContentBlock::text(answer)]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e)]),
        }
    }

    async fn call_toolset(
        &self,
        name: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let ident = ToolIdent::new(name);
        let unknown = || ErrorData::invalid_params(format!("unknown tool: {name}"), None);
        let set = self
            .toolsets
            .iter()
            .find(|s| s.name() == ident.toolset())
            .ok_or_else(unknown)?;
        let specs = set.list_tools().await.unwrap_or_default();
        let spec = specs.iter().find(|s| s.name == ident).ok_or_else(unknown)?;
        Ok(self.call_spec(set, spec, ident, args).await)
    }

    async fn call_spec(
        &self,
        set: &Arc<dyn ToolSet>,
        spec: &ToolSpec,
        ident: ToolIdent,
        args: JsonObject,
    ) -> CallToolResult {
        let name = ident.as_str();
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
            _ => self.call_toolset(&request.name, args).await?,
        };
        Ok(result.into())
    }

    #[allow(deprecated)] // MCP logging: see the `logging` module.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log.set(request.level);
        Ok(())
    }

    /// A request of a method this server has whose params did not parse
    /// (rmcp hands those over as custom requests) is invalid params.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        const KNOWN: [&str; 4] = ["logging/setLevel", "tools/call", "tools/list", "ping"];
        if KNOWN.contains(&request.method.as_str()) {
            return Err(ErrorData::invalid_params(
                format!("invalid params for {}", request.method),
                None,
            ));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }

    #[allow(deprecated)] // MCP logging: see the `logging` module.
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        let mut info = Implementation::new("weft", env!("CARGO_PKG_VERSION"));
        if let Some(agent) = &self.agent {
            info = info.with_title(agent.name.clone());
        }
        ServerConfig::new(capabilities).with_server_info(info)
    }
}
