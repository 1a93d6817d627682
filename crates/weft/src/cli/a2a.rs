//! `weft a2a serve --agent FILE`: the agent as an A2A server over HTTP
//! (see `crate::a2a`). Prints the base URL once it listens; stops on
//! ctrl-c or SIGTERM, letting open requests finish.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use crate::a2a::{self, AgentCard, App, Service, Skill};
use crate::agent_file::AgentFile;

/// What `weft a2a serve` was asked.
#[derive(Debug, Clone, clap::Args)]
pub struct A2aServeArgs {
    /// The agent file.
    #[arg(long)]
    pub agent: PathBuf,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub addr: String,
    /// The base URL clients reach the server at, for the Agent Card
    /// (default: `http://ADDR` as bound).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// A model id replacing the file's planner.
    #[arg(long)]
    pub model: Option<String>,
    /// A durable store: a SQLite file path or a `postgres://` URL (tasks
    /// then outlive the process).
    #[arg(long)]
    pub db: Option<String>,
}

/// How long listing a toolset's tools for the card may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the agent until the process is asked to stop.
pub fn serve(args: A2aServeArgs) -> anyhow::Result<ExitCode> {
    let file = AgentFile::load(&args.agent)?;
    let planner = file.planner(args.model.as_deref())?;
    let agent = file.agent(planner)?;
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let builder = super::runtime_for(agent, args.db.as_deref(), None).await?;
        let runtime = builder.build();
        if args.db.is_some() {
            runtime.recover_unfinished().await?;
        }
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .with_context(|| format!("listening on {}", args.addr))?;
        let local = listener.local_addr()?;
        let base = args
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{local}"));
        let base = base.trim_end_matches('/').to_owned();
        let description = file
            .instructions
            .clone()
            .unwrap_or_else(|| format!("The weft agent `{}`", file.id));
        let card = AgentCard::new(
            &file.id,
            &description,
            &base,
            skills(&runtime, &file.id, &description).await,
        );
        let service = Service::open(runtime.clone(), file.id.clone());
        let app = a2a::router(App::new(service, &card));
        println!("{base}");
        a2a::listen::serve(listener, app, super::stop_requested())
            .await
            .context("serving A2A")?;
        runtime.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// The card's skills: the agent itself, then each tool its runs are
/// offered (the runtime's own toolsets, started once; a toolset that
/// cannot list its tools in time is left out).
async fn skills(runtime: &weft_runtime::Runtime, id: &str, description: &str) -> Vec<Skill> {
    let mut skills = vec![Skill::new(id, id, description, &["agent"])];
    let Some(agent) = runtime.agent(id) else {
        return skills;
    };
    if let Ok(Ok(tools)) = tokio::time::timeout(LIST_TIMEOUT, agent.tools()).await {
        for tool in tools {
            let name = tool.name.to_string();
            let tags = ["tool", tool.name.toolset()];
            skills.push(Skill::new(&name, &name, &tool.description, &tags));
        }
    }
    skills
}
