//! The `weft` command: run agents, benchmark the runtime.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use weft::agent_file::AgentFile;
use weft::bench::agent_loop;
use weft::render::{OutputFormat, Renderer};
use weft_core::planner::Planner;
use weft_runtime::{Runtime, StartRequest};

#[derive(Parser)]
#[command(name = "weft", version, about = "weft: a durable agent runtime")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs an agent file on a prompt, streaming the run's events.
    Run {
        /// The agent file (TOML).
        agent: PathBuf,
        /// The user's prompt.
        prompt: String,
        /// How to show the run.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
    /// Benchmarks; each prints JSON lines.
    Bench {
        #[command(subcommand)]
        bench: Bench,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// Workload W(k): runtime overhead per step and memory per concurrent run.
    AgentLoop {
        /// Tool-calling turns per run.
        #[arg(long, default_value_t = 10)]
        k: u32,
        /// Minimum seconds of sequential runs.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Runs started at once.
        #[arg(long, default_value_t = 1000)]
        concurrent: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            agent,
            prompt,
            output,
        } => run_agent(agent, prompt, output),
        Command::Bench { bench } => run_bench(bench),
    };
    match result {
        Ok(code) => code,
        // A closed pipe (`weft run ... | head`) is the reader's choice, not an error.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weft: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run_bench(bench: Bench) -> anyhow::Result<ExitCode> {
    match bench {
        Bench::AgentLoop {
            k,
            seconds,
            concurrent,
        } => {
            let s = agent_loop::Settings {
                k,
                seconds,
                concurrent,
            };
            // Concurrent first, so the memory figure is not inflated by the
            // sequential part's runs.
            println!("{}", agent_loop::concurrent(s)?);
            println!("{}", agent_loop::sequential(s)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_agent(path: PathBuf, prompt: String, output: OutputFormat) -> anyhow::Result<ExitCode> {
    let file = AgentFile::load(&path)?;
    let planner: Arc<dyn Planner> = match file.scripted_planner() {
        Some(p) => Arc::new(p),
        None => anyhow::bail!("model planners are not available in this build"),
    };
    let agent = file.agent(planner);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(async move {
        let runtime = Runtime::builder().agent(agent).build();
        let handle = runtime.start(&file.id, StartRequest::user(prompt)).await?;
        let mut events = handle.events().await?;
        let stdout = std::io::stdout();
        let mut renderer = Renderer::new(stdout.lock(), output);
        while let Some(e) = events.next().await {
            renderer.event(&e?)?;
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
