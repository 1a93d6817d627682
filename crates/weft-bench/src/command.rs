//! `weft bench`: the benchmark subcommands and what each one prints.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use super::{
    agent_loop, durable_loop, mcp as mcp_bench, registry as registry_bench, serve as serve_bench,
    stream as stream_bench,
};

/// The benchmarks `weft bench` runs.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Every benchmark below with its defaults, each in its own process.
    All,
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
    /// `weft serve` under concurrent clients, each following its run over
    /// SSE: runs/s and p50/p99 start-to-first-event.
    Serve {
        /// Clients at once, each with its run's event stream open.
        #[arg(long, default_value_t = 1000)]
        clients: usize,
        /// Seconds of measurement.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// The store: a fresh SQLite file when absent, or a `postgres://` URL.
        #[arg(long)]
        db: Option<String>,
    },
    /// One long streamed answer delivered over SSE to many clients:
    /// deltas and events delivered per second.
    Stream {
        /// SSE clients following the run.
        #[arg(long, default_value_t = 100)]
        clients: usize,
        /// Text deltas in the answer.
        #[arg(long, default_value_t = 10_000)]
        tokens: usize,
        /// The store: a fresh SQLite file when absent, or a `postgres://` URL.
        #[arg(long)]
        db: Option<String>,
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

impl BenchCommand {
    /// Runs the benchmark and prints its JSON lines.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            BenchCommand::All => return super::all::run(),
            BenchCommand::AgentLoop {
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
            BenchCommand::DurableLoop {
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
            BenchCommand::Mcp { calls, warmup } => {
                for line in mcp_bench::run(mcp_bench::Settings { calls, warmup })? {
                    println!("{line}");
                }
            }
            BenchCommand::Registry {
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
            BenchCommand::Serve {
                clients,
                seconds,
                db,
            } => {
                let s = serve_bench::Settings {
                    clients: clients.max(1),
                    seconds,
                    db,
                };
                println!("{}", serve_bench::run(&s)?);
            }
            BenchCommand::Stream {
                clients,
                tokens,
                db,
            } => {
                let s = stream_bench::Settings {
                    clients: clients.max(1),
                    tokens: tokens.max(1),
                    db,
                };
                println!("{}", stream_bench::run(&s)?);
            }
            BenchCommand::SseDecode { fixtures, bytes } => {
                let dir = fixtures.unwrap_or_else(crate::sse_decode::default_fixtures_dir);
                for line in crate::sse_decode::bench_sse_decode(&dir, bytes)? {
                    println!("{line}");
                }
            }
            #[cfg(feature = "local")]
            BenchCommand::LocalModel {
                model,
                tokens,
                runs,
                prompt,
                threads,
            } => {
                use crate::local_model as bench;
                use weft_local::LocalModel;
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
                // Its engine goes before the next are loaded (see the module).
                let (path, threads) = (local.path().to_owned(), local.threads());
                drop(local);
                let concurrent =
                    crate::local_concurrent::bench_concurrent(&path, threads, &settings)?;
                for line in concurrent {
                    println!("{line}");
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
