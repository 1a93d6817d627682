//! `weft run`: run an agent on a prompt and show the run as it happens,
//! asking its questions at the terminal, or else on standard error with the
//! answers read from standard input ([`ask::piped`]); `weft runs answer`
//! ([`answer`]) answers a run left awaiting in a store. A toolset that
//! cannot start stops it before the first turn ([`toolsets`]).

pub mod answer;
mod settled;
mod toolsets;

use std::io::{BufRead, IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use weft_core::RunId;
use weft_core::awaiting::AwaitItem;
use weft_core::event::EventKind;
use weft_core::run::Policy;
use weft_core::store::RunStatus;
use weft_runtime::{Agent, Runtime, StartRequest};

use crate::agent_file::{ModelSettings, model_planner};
use crate::builtin;
use crate::cli::ask::later::{self, Resume, UNANSWERED};
use crate::cli::ask::lines::Lines;
use crate::cli::ask::{self, AskError, OnQuestion, piped};
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
    /// What to do when the run asks a question.
    pub on_question: OnQuestion,
}

/// `weft run`'s command line.
#[derive(Debug, Clone, clap::Args)]
pub struct RunCommand {
    /// The agent file (optional with --model), then the prompt.
    #[arg(num_args = 1..=2, required = true, value_name = "ARGS")]
    pub args: Vec<String>,
    /// A model id (`anthropic/<m>`, `openai/<m>`, `openai-responses/<m>`, `gemini/<m>`,
    /// `vertex/<m>`, `bedrock/<m>`, `compat/<m>`, `local/<name>` or `local/<path>.gguf`).
    #[arg(long)]
    pub model: Option<String>,
    /// A durable store: a SQLite file path or a `postgres://` URL.
    #[arg(long)]
    pub db: Option<String>,
    /// The session to run in (with --db): the run starts from the
    /// session's earlier runs and memory. A new session when absent.
    #[arg(long, requires = "db")]
    pub session: Option<String>,
    /// What a commit survives (with --db): `sync` (power loss; the
    /// default) or `process` (a crash of this process; no sync per commit).
    #[arg(long, requires = "db")]
    pub durability: Option<weft_store::Durability>,
    /// How to show the run.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Every run event as one JSON line, then the outcome (`--output jsonl`).
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
    /// When the run asks a question: `ask` it at the terminal, or, without
    /// one (stdin or stdout not a terminal, or --json), print it on stderr
    /// and read the answer from stdin, one line per question; `fail` asks
    /// nothing. A question left unanswered (`fail`, stdin ended, or a line
    /// that does not answer it) exits with code 3 and leaves the run
    /// awaiting in the --db store, to answer with `weft runs answer`.
    #[arg(long, value_enum, default_value_t = OnQuestion::Ask)]
    pub on_question: OnQuestion,
}

impl RunCommand {
    /// The arguments of [`run`].
    pub fn into_args(self) -> RunArgs {
        let (agent, prompt) = match <[String; 2]>::try_from(self.args) {
            Ok([agent, prompt]) => (Some(PathBuf::from(agent)), prompt),
            Err(mut one) => (None, one.pop().unwrap_or_default()),
        };
        RunArgs {
            agent,
            prompt,
            model: self.model,
            db: self.db,
            session: self.session,
            durability: self.durability,
            output: if self.json {
                OutputFormat::Jsonl
            } else {
                self.output
            },
            on_question: self.on_question,
        }
    }
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
        (None, None) if looks_like_agent_file(&args.prompt) => anyhow::bail!(
            "`{}` is an agent file: give the prompt after it (weft run {} \"<prompt>\")",
            args.prompt,
            args.prompt
        ),
        (agent, model) => agents_of(agent.as_deref(), model.as_deref()),
    }
}

/// The agents of an agent file (the first, then its team), or the default
/// assistant on a model.
pub(crate) fn agents_of(agent: Option<&Path>, model: Option<&str>) -> anyhow::Result<Vec<Agent>> {
    match (agent, model) {
        (Some(path), model) => crate::agent_file::load_team(path, model),
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
        (None, None) => {
            anyhow::bail!("give an agent file before the prompt, or a model with --model <id>")
        }
    }
}

/// How long `weft run` waits, after its run ends, for the cancellation of
/// the run's children.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// A question of the run that got no answer, and why.
struct Unanswered {
    /// The items still awaiting, the unanswered one first.
    pending: Vec<AwaitItem>,
    why: AskError,
}

/// How `weft run` gets its answers.
#[derive(Debug, Clone, Copy)]
struct Asking {
    on_question: OnQuestion,
    /// Standard input is a terminal: ask there, re-asking on nonsense.
    terminal: bool,
    /// Stdout is not a terminal, or is JSON: the question's id is shown too.
    headless: bool,
}

/// Answers `items` of run `run_id` one by one; the first that gets no
/// answer ends the asking.
async fn answer_items(
    runtime: &Runtime,
    run_id: &RunId,
    items: &[AwaitItem],
    asking: Asking,
) -> anyhow::Result<Option<Unanswered>> {
    for (i, item) in items.iter().enumerate() {
        let fail = asking.on_question == OnQuestion::Fail;
        if fail || !asking.terminal {
            let mut err = std::io::stderr().lock();
            piped::describe(item, &mut err)?;
            let reading = if fail {
                ""
            } else {
                "; reading the answer from standard input"
            };
            writeln!(err, "  item {} of run {run_id}{reading}", item.id())?;
        } else if asking.headless {
            eprintln!("  item {} of run {run_id}:", item.id());
        }
        let answer = if fail {
            Err(AskError::NotAsked)
        } else {
            let asked = item.clone();
            let mut input = Lines::stdin().reader();
            let stop = input.stopper();
            let reading = tokio::task::spawn_blocking(move || {
                if asking.terminal {
                    let mut err = std::io::stderr();
                    ask::ask(&asked, &mut input as &mut dyn BufRead, &mut err)
                } else {
                    piped::read(&asked, &mut input)
                }
            });
            tokio::select! {
                read = reading => read.context("reading the answer")?,
                // The reader lets go; the next line goes to the next question.
                () = settled::settled(runtime, run_id, item.id()) => {
                    stop.store(true, std::sync::atomic::Ordering::Release);
                    eprintln!("  item {} of run {run_id} is no longer asked", item.id());
                    continue;
                }
            }
        };
        match answer {
            Ok(answer) => {
                runtime.answer(run_id, item.id(), answer).await?;
            }
            Err(why) => {
                return Ok(Some(Unanswered {
                    pending: items[i..].to_vec(),
                    why,
                }));
            }
        }
    }
    Ok(None)
}

/// Waits until the store has the run awaiting (its driver commits the
/// await before it lets the run go).
async fn stored_awaiting(runtime: &Runtime, run_id: &RunId) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let stored = runtime.store().load_run(run_id).await?;
        if stored.is_some_and(|s| s.record.status == RunStatus::Awaiting) {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            anyhow::bail!("run {run_id} was not stored as awaiting");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Runs the command; the exit code is 0 for an answer, 1 for a failed or
/// cancelled run, 3 for a question left unanswered; an error (such as a
/// toolset that could not start) is returned, and exits 2.
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
        toolsets::check(&runtime, &agent_id, args.agent.as_deref(), args.output).await?;
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
        let run_id = handle.run_id().clone();
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
        let asking = Asking {
            on_question: args.on_question,
            terminal: std::io::stdin().is_terminal(),
            headless: !stdout.is_terminal() || args.output != OutputFormat::Text,
        };
        let mut unanswered = None;
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
            let EventKind::AwaitRequested { items } = &e.kind else {
                continue;
            };
            if unanswered.is_some() {
                continue;
            }
            unanswered = answer_items(&runtime, &run_id, items, asking).await?;
            let Some(left) = &unanswered else { continue };
            if left.pending.iter().any(later::asked_by_a_running_tool) {
                let reason = format!("a running tool's question got no answer: {}", left.why);
                runtime.cancel(&run_id, &reason).await?;
                continue;
            }
            // The run waits in the store for its answer: leave it there.
            stored_awaiting(&runtime, &run_id).await?;
            renderer.awaiting(run_id.as_str(), &left.pending)?;
            let how = Resume {
                db: args.db.clone(),
                agent: args.agent.clone(),
                model: args.model.clone(),
            };
            let why = left.why.to_string();
            let mut err = std::io::stderr().lock();
            later::left_awaiting(&mut err, run_id.as_str(), &left.pending, &why, &how)?;
            return Ok(ExitCode::from(UNANSWERED));
        }
        let outcome = handle.outcome().await?;
        // A run that ended early cancels the child runs it was waiting on
        // in the background: let that finish before the process exits.
        if !runtime.settle(SETTLE).await {
            tracing::warn!("child runs were still being cancelled at exit");
        }
        if let Some(stored) = runtime.store().load_run(&run_id).await? {
            renderer.set_turns(stored.snapshot.turn());
        }
        renderer.outcome(&outcome)?;
        if let Some(Unanswered { pending, why }) = &unanswered
            && let Some(item) = pending.iter().find(|i| later::asked_by_a_running_tool(i))
        {
            let mut err = std::io::stderr().lock();
            later::cancelled_for(&mut err, run_id.as_str(), item, &why.to_string())?;
            return Ok(ExitCode::from(UNANSWERED));
        }
        Ok(if outcome.is_success() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })
}
