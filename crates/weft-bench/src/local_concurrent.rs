//! The concurrent part of `weft bench local-model`: aggregate decode speed
//! of one model serving several runs at once. For each count of runs, that
//! many generations of the benchmark's prompt start together (each on its
//! own thread, as the runs of `weft serve` each block a thread), every one
//! decoding the same number of tokens; the figure is the tokens they
//! produced over the wall time from the first start to the last end,
//! prompt evaluation included. It is measured twice: with the model
//! decoding up to 8 generations in one batch (weft's continuous batching),
//! and with one sequence, where generations take turns (how weft decoded
//! before). One JSON line per measurement, then a summary line.
//!
//! Only one engine is loaded at a time, and none may be loaded beside this
//! benchmark in its process: llama.cpp's threads spin between tokens, so an
//! idle engine's threads halve the speed of another's.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use weft_core::model::ModelError;
use weft_local::LocalModel;
use weft_local::engine::Engine;
use weft_local::generation::Generate;

use crate::local_model::{Settings, free_generation};

/// Generations at once measured, as the issue asks: 1, 4 and 8 runs.
pub const CONCURRENCY: [usize; 3] = [1, 4, 8];

/// Sequences of the batching engine: the most runs measured at once.
const SEQUENCES: usize = 8;

/// Measures the free generation of `settings` at each of [`CONCURRENCY`]
/// on the GGUF file at `path` (on `threads` threads), loaded with
/// [`SEQUENCES`] sequences, then with one; returns the JSON lines.
pub fn bench_concurrent(
    path: &Path,
    threads: usize,
    settings: &Settings,
) -> Result<Vec<Value>, ModelError> {
    let mut lines = Vec::new();
    let mut by_sequences = Vec::new();
    for sequences in [SEQUENCES, 1] {
        let model = LocalModel::from_path("local/bench", path, threads).with_sequences(sequences);
        let engine = model.engine()?;
        let generate = free_generation(&engine, settings)?;
        round(&engine, &generate, 1)?; // warm-up
        let mut rates = Vec::new();
        for runs in CONCURRENCY {
            let (tokens, seconds) = round(&engine, &generate, runs)?;
            let rate = tokens as f64 / seconds.max(1e-9);
            lines.push(json!({
                "bench": "local-model",
                "engine": "weft",
                "sequences": sequences,
                "concurrent_runs": runs,
                "tokens": tokens,
                "wall_ms": (seconds * 1e5).round() / 100.0,
                "aggregate_tok_s": (rate * 100.0).round() / 100.0,
            }));
            rates.push(rate);
        }
        by_sequences.push(rates);
    }
    let ratio = |a: f64, b: f64| (a / b.max(1e-9) * 1000.0).round() / 1000.0;
    let (batched, turns) = (&by_sequences[0], &by_sequences[1]);
    lines.push(json!({
        "bench": "local-model",
        "engine": "weft",
        "summary": "concurrent",
        "concurrent_runs": CONCURRENCY,
        "aggregate_tok_s_batched": batched.iter().map(|r| (r * 100.0).round() / 100.0).collect::<Vec<_>>(),
        "aggregate_tok_s_one_at_a_time": turns.iter().map(|r| (r * 100.0).round() / 100.0).collect::<Vec<_>>(),
        "batched_8_over_1_run": ratio(batched[2], batched[0]),
        "batched_over_one_at_a_time_at_8": ratio(batched[2], turns[2]),
    }));
    Ok(lines)
}

/// Starts `runs` generations together; the tokens they produced and the
/// seconds until the last ended.
fn round(engine: &Engine, generate: &Generate, runs: usize) -> Result<(u64, f64), ModelError> {
    let start = Instant::now();
    let results: Vec<Result<u32, ModelError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..runs)
            .map(|_| {
                s.spawn(|| {
                    engine
                        .generate(generate, &mut |_| true)
                        .map(|g| g.output_tokens)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ModelError::Config {
                        message: "a benchmark thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let mut tokens = 0u64;
    for r in results {
        tokens += u64::from(r?);
    }
    Ok((tokens, seconds))
}
