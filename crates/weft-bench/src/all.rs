//! `weft bench all`: every benchmark with its default settings, one after
//! another, each in a process of its own (so one's heap never shows in
//! another's memory figures). Their JSON lines go to stdout as they come; a
//! benchmark that cannot run here (no Redis, no PostgreSQL, no local model)
//! prints `{"bench": ..., "error": ...}` and the others still run.

use std::io::{BufRead, BufReader};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::Context;
use serde_json::json;

/// The benchmarks `all` runs, in order: `weft bench <name>`.
pub const BENCHES: &[&str] = &[
    "agent-loop",
    "durable-loop",
    "serve",
    "stream",
    "sse-decode",
    "registry",
    "mcp",
    #[cfg(feature = "local")]
    "local-model",
];

/// Runs every benchmark in [`BENCHES`]; fails only when this executable
/// cannot be started again.
pub fn run() -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("finding the weft executable")?;
    for name in BENCHES {
        let started = Instant::now();
        let mut child = Command::new(&exe)
            .args(["bench", name])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting `weft bench {name}`"))?;
        let stdout = child.stdout.take().context("the benchmark's stdout")?;
        // Drain stderr alongside, so a chatty benchmark never blocks on it.
        let mut stderr = child.stderr.take().context("the benchmark's stderr")?;
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        for line in BufReader::new(stdout).lines() {
            println!("{}", line.context("reading the benchmark's output")?);
        }
        let status = child.wait().context("waiting for the benchmark")?;
        let errors = errors.join().unwrap_or_default();
        if !status.success() {
            let last = errors.lines().rev().find(|l| !l.trim().is_empty());
            println!(
                "{}",
                json!({
                    "bench": name,
                    "error": last.unwrap_or("exited without saying why"),
                    "exit": status.code(),
                })
            );
        }
        eprintln!(
            "weft bench {name}: {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::{Parser, Subcommand};

    use super::BENCHES;
    use crate::BenchCommand;

    #[derive(Parser)]
    struct Bench {
        #[command(subcommand)]
        bench: BenchCommand,
    }

    #[test]
    fn all_runs_every_benchmark_and_only_those() {
        let mut listed: Vec<String> = BenchCommand::augment_subcommands(clap::Command::new("b"))
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .filter(|n| n != "all")
            .collect();
        listed.sort();
        let mut run: Vec<String> = BENCHES.iter().map(|b| (*b).to_owned()).collect();
        run.sort();
        assert_eq!(run, listed);
        // Each parses with its defaults alone, as `all` starts it.
        for name in BENCHES {
            assert!(Bench::try_parse_from(["bench", name]).is_ok(), "{name}");
        }
    }
}
