//! `weft run`: run an agent on a prompt and show the run as it happens.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use weft_core::event::EventKind;
use weft_core::run::Policy;
use weft_runtime::{Agent, StartRequest};

use crate::agent_file::{ModelSettings, model_planner};
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
    /// The session to run in (a new one when absent).
    pub session: Option<String>,
    /// What the store's commits survive (with `db`); `sync` when absent.
    pub durability: Option<weft_store::Durability>,
    /// How to show the run.
    pub output: OutputFormat,
}

const DEFAULT_INSTRUCTIONS: &str =
    "You are a helpful assistant. Use the tools when they help; answer briefly.";

/// Whether the lone argument of `weft run` names an agent file rather
/// than a prompt.
fn looks_like_agent_file(arg: &str) -> bool {
    arg.ends_with(".toml") || std::path::Path::new(arg).is_file()
}

/// The agent to run first, then the agents it calls as tools.
fn agents(args: &RunArgs) -> anyhow::Result<Vec<Agent>> {
    match (&args.agent, &args.model) {
        (Some(path), model) => crate::agent_file::load_team(path, model.as_deref()),
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
            Ok(vec![b.build()])
        }
        (None, None) if looks_like_agent_file(&args.prompt) => anyhow::bail!(
            "`{}` is an agent file: give the prompt after it (weft run {} \"<prompt>\")",
            args.prompt,
            args.prompt
        ),
        (None, None) => {
            anyhow::bail!("give an agent file before the prompt, or a model with --model <id>")
        }
    }
}

/// How long `weft run` waits, after its run ends, for the cancellation of
/// the run's children.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the command; the exit code is 0 for an answer, 1 for a failed or cancelled run.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let _telemetry = super::telemetry::install_traces_only()?;
    let mut agents = agents(&args)?.into_iter();
    let agent = agents.next().context("the agent file defines no agent")?;
    let agent_id = agent.id().to_string();
    let tokio = super::async_runtime()?;
    tokio.block_on(async move {
        let builder = agents.fold(
            super::runtime_for(agent, args.db.as_deref(), args.durability).await?,
            |b, a| b.agent(a),
        );
        let runtime = builder.build();
        let mut request = StartRequest::user(args.prompt.clone());
        // The file's own planner drives the run: name the file, so `weft
        // replay` finds it without `--agent`.
        if let (Some(path), None) = (&args.agent, &args.model)
            && let Some(file) = super::replay::agent_file_label(path)
        {
            let key = super::replay::AGENT_FILE_LABEL.to_owned();
            request.labels.insert(key, file);
        }
        if let Some(session) = &args.session {
            request = request.session(session.as_str());
        }
        let handle = runtime.start(&agent_id, request).await?;
        let mut events = handle.events().await?;
        // The stream is read by its own task, so the status line's ticks
        // never interrupt a read.
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            while let Some(e) = events.next().await {
                if tx.send(e).await.is_err() {
                    break;
                }
            }
        });
        let stdout = std::io::stdout();
        let live = stdout.is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
        let mut renderer = Renderer::new(stdout.lock(), args.output).live(live);
        let interactive = std::io::stdin().is_terminal() && args.output == OutputFormat::Text;
        let mut ticks = tokio::time::interval(std::time::Duration::from_millis(100));
        loop {
            let e = tokio::select! {
                e = rx.recv() => e,
                _ = ticks.tick(), if live => {
                    renderer.tick()?;
                    continue;
                }
            };
            let Some(e) = e else { break };
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
        // A run that ended early cancels the child runs it was waiting on
        // in the background: let that finish before the process exits.
        if !runtime.settle(SETTLE).await {
            tracing::warn!("child runs were still being cancelled at exit");
        }
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
