//! `weft run`: run an agent on a prompt and show the run as it happens.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use weft_core::event::EventKind;
use weft_core::run::Policy;
use weft_runtime::{Agent, StartRequest};

use crate::agent_file::{AgentFile, ModelSettings, model_planner};
use crate::builtin;
use crate::cli::ask;
use crate::render::{OutputFormat, Renderer};

/// What `weft run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunArgs {
    /// The agent file; without one, `model` must be given.
    pub agent: Option<PathBuf>,
    /// The user's prompt.
    pub prompt: String,
    /// A model id overriding the agent's planner.
    pub model: Option<String>,
    /// A durable store URL (SQLite path or `postgres://`); in memory when absent.
    pub db: Option<String>,
    /// How to show the run.
    pub output: OutputFormat,
}

const DEFAULT_INSTRUCTIONS: &str =
    "You are a helpful assistant. Use the tools when they help; answer briefly.";

fn agent(args: &RunArgs) -> anyhow::Result<Agent> {
    match (&args.agent, &args.model) {
        (Some(path), model) => {
            let file = AgentFile::load(path)?;
            let planner = file.planner(model.as_deref())?;
            Ok(file.agent(planner))
        }
        (None, Some(model)) => {
            let toolsets = vec![builtin::calc(), builtin::text()];
            let planner = model_planner(
                model,
                DEFAULT_INSTRUCTIONS.to_owned(),
                &toolsets,
                ModelSettings::default(),
            )?;
            let mut b = Agent::builder("assistant", planner).policy(Policy::default());
            for t in toolsets {
                b = b.toolset(t);
            }
            Ok(b.build())
        }
        (None, None) => anyhow::bail!("give an agent file, or a model with --model <id>"),
    }
}

/// Runs the command; the exit code is 0 for an answer, 1 for a failed or cancelled run.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let agent = agent(&args)?;
    let agent_id = agent.id().to_string();
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let builder = super::runtime_for(agent, args.db.as_deref()).await?;
        let runtime = builder.build();
        let handle = runtime
            .start(&agent_id, StartRequest::user(args.prompt.clone()))
            .await?;
        let mut events = handle.events().await?;
        let stdout = std::io::stdout();
        let mut renderer = Renderer::new(stdout.lock(), args.output);
        let interactive = std::io::stdin().is_terminal() && args.output == OutputFormat::Text;
        while let Some(e) = events.next().await {
            let e = e?;
            renderer.event(&e)?;
            if let EventKind::AwaitRequested { items } = &e.kind {
                if !interactive {
                    runtime
                        .cancel(
                            handle.run_id(),
                            "an answer was needed and there is no terminal to ask",
                        )
                        .await?;
                    continue;
                }
                for item in items.clone() {
                    let id = item.id().clone();
                    let answer = tokio::task::spawn_blocking(move || {
                        let stdin = std::io::stdin();
                        let mut input = stdin.lock();
                        let mut err = std::io::stderr();
                        ask::ask(&item, &mut input as &mut dyn BufRead, &mut err)
                    })
                    .await
                    .context("reading the answer")?;
                    match answer {
                        Ok(answer) => {
                            runtime.answer(handle.run_id(), &id, answer).await?;
                        }
                        Err(err) => {
                            runtime
                                .cancel(handle.run_id(), &format!("no answer: {err}"))
                                .await?;
                            break;
                        }
                    }
                }
            }
        }
        let outcome = handle.outcome().await?;
        if let Some(stored) = runtime.store().load_run(handle.run_id()).await? {
            renderer.set_turns(stored.snapshot.turn());
        }
        renderer.outcome(&outcome)?;
        Ok(if outcome.is_success() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}
