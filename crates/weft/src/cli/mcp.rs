//! `weft mcp serve <agent-file>`: the agent as an MCP server over stdio or
//! streamable HTTP. The agent is one tool (a prompt in, its final answer
//! out, each run event sent as a progress notification and, once the client
//! sets a log level, as a log message; a question the run asks goes to the
//! client as elicitation when it supports it, and cancels the run
//! otherwise; the client's cancellation cancels the run); `--expose-toolsets` adds the agent's own tools.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use weft_core::awaiting::AwaitItem;
use weft_core::event::EventKind;
use weft_core::ids::RunId;
use weft_core::run::RunOutcome;
use weft_mcp::serve::{
    AgentRunner, AgentTool, Asker, HttpServer, Progress, WeftServer, serve_stdio,
};
use weft_runtime::{Runtime, StartRequest};

use crate::agent_file::AgentFile;

/// What `weft mcp serve` was asked.
#[derive(Debug, Clone)]
pub struct McpServeArgs {
    /// The agent file.
    pub agent: PathBuf,
    /// Serve streamable HTTP on this address instead of stdio.
    pub http: Option<String>,
    /// Also expose the agent's toolsets' tools.
    pub expose_toolsets: bool,
    /// A model replacing the file's.
    pub model: Option<String>,
    /// A durable store.
    pub db: Option<String>,
}

/// Runs the agent for MCP calls.
struct Runner {
    runtime: Runtime,
    agent_id: String,
}

#[async_trait]
impl AgentRunner for Runner {
    async fn run(
        &self,
        prompt: String,
        mut progress: Progress,
        asker: Asker,
        cancel: CancellationToken,
    ) -> Result<String, String> {
        let handle = self
            .runtime
            .start(&self.agent_id, StartRequest::user(prompt))
            .await
            .map_err(|e| e.to_string())?;
        let mut events = handle.events().await.map_err(|e| e.to_string())?;
        loop {
            let event = tokio::select! {
                e = events.next() => e,
                () = cancel.cancelled() => {
                    let _ = self.runtime.cancel(handle.run_id(), "cancelled by the MCP client").await;
                    return Err("cancelled by the MCP client".to_owned());
                }
            };
            let Some(Ok(event)) = event else { break };
            progress.event(&event).await;
            if let EventKind::AwaitRequested { items } = &event.kind {
                let asked = tokio::select! {
                    asked = self.ask(handle.run_id(), items, &asker) => asked,
                    () = cancel.cancelled() => Err("cancelled by the MCP client".to_owned()),
                };
                if let Err(reason) = asked {
                    let _ = self.runtime.cancel(handle.run_id(), &reason).await;
                }
            }
        }
        match handle.outcome().await.map_err(|e| e.to_string())? {
            RunOutcome::Response { message, .. } => Ok(message.joined_text()),
            RunOutcome::ToolResult { result, .. } => Ok(result.to_string()),
            RunOutcome::Failed { failure } => Err(format!("the run failed: {failure:?}")),
            RunOutcome::Cancelled { reason } => Err(format!("the run was cancelled: {reason}")),
        }
    }
}

impl Runner {
    /// Asks the client each of the run's `items` and gives the run the
    /// answers; why not, when one cannot be asked or answered.
    async fn ask(&self, run_id: &RunId, items: &[AwaitItem], asker: &Asker) -> Result<(), String> {
        for item in items {
            let answer = asker
                .ask(item)
                .await
                .map_err(|why| format!("the agent asked for input: {why}"))?;
            self.runtime
                .answer(run_id, item.id(), answer)
                .await
                .map_err(|e| format!("the MCP client's answer was refused: {e}"))?;
        }
        Ok(())
    }
}

/// Serves the agent until the client leaves (stdio) or the process is stopped (HTTP).
pub fn serve(args: McpServeArgs) -> anyhow::Result<ExitCode> {
    let file = AgentFile::load(&args.agent)?;
    let planner = file.planner(args.model.as_deref())?;
    let toolsets = if args.expose_toolsets {
        file.toolsets()
    } else {
        Vec::new()
    };
    let agent = file.agent(planner)?;
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let builder = super::runtime_for(agent, args.db.as_deref(), None).await?;
        let tool = AgentTool {
            name: file.id.clone(),
            description: file
                .instructions
                .clone()
                .unwrap_or_else(|| format!("Asks the agent `{}`", file.id)),
            runner: Arc::new(Runner {
                runtime: builder.build(),
                agent_id: file.id.clone(),
            }),
        };
        let server = WeftServer::new(Some(tool), toolsets);
        match &args.http {
            None => serve_stdio(server).await?,
            Some(addr) => {
                let http = HttpServer::bind(addr).await?;
                println!("{}", http.url());
                let stop = CancellationToken::new();
                let on_signal = stop.clone();
                tokio::spawn(async move {
                    let _ = tokio::signal::ctrl_c().await;
                    on_signal.cancel();
                });
                http.serve(move || server.session(), stop).await?;
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}
