//! The SSE decode benchmark behind `weft bench sse-decode`: each provider's
//! recorded streams, repeated to a target size, timed through SSE framing
//! alone and through full decoding into stream chunks.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};

use weft_models::anthropic::AnthropicDecoder;
use weft_models::decode::{EventDecoder, StreamDecoder};
use weft_models::openai_chat::ChatDecoder;
use weft_models::openai_responses::ResponsesDecoder;
use weft_models::sse::{SseDecoder, SseError, SseEvent};

/// Bytes handed to the decoder per call, like a network read.
const READ_SIZE: usize = 16 * 1024;

/// Timed passes per measurement; the fastest is reported.
const PASSES: usize = 3;

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A fixture could not be read.
    #[error("cannot read fixture {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// A fixture did not decode.
    #[error("fixture {name} does not decode: {message}")]
    Decode {
        /// The fixture.
        name: String,
        /// What failed.
        message: String,
    },
}

/// The fixtures directory of this source checkout
/// (`crates/weft-models/fixtures/providers`).
pub fn default_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../weft-models/fixtures/providers")
}

/// The streams benchmarked per provider: every recorded stream that completes.
const STREAMS: &[(&str, &[&str])] = &[
    (
        "anthropic",
        &[
            "anthropic/a1_text_basic.sse",
            "anthropic/a2_tool_use_sdk.sse",
            "anthropic/a3_tool_use_docs.sse",
            "anthropic/a4_thinking_tool_use_captured.sse",
            "anthropic/a5_thinking_docs.sse",
            "anthropic/a6_tool_use_truncated_max_tokens.sse",
        ],
    ),
    (
        "openai_chat",
        &[
            "openai_chat/c1_text_include_usage.sse",
            "openai_chat/c2_parallel_tool_calls.sse",
        ],
    ),
    (
        "openai_responses",
        &[
            "openai_responses/r1_text.sse",
            "openai_responses/r2_function_call.sse",
            "openai_responses/r3_reasoning_summary_function_call.sse",
        ],
    ),
];

/// Runs the benchmark over at least `target_bytes` per provider (50 MB is
/// the documented setting) and returns one JSON record per provider:
/// `{"bench":"sse-decode","provider":..,"mb_per_s":..,"full_decode_mb_per_s":..,..}`,
/// where `mb_per_s` is SSE framing alone and `full_decode_mb_per_s` includes
/// the provider's JSON decoding into stream chunks (MB = 10^6 bytes; the
/// fastest of three passes).
pub fn bench_sse_decode(fixtures: &Path, target_bytes: usize) -> Result<Vec<Value>, BenchError> {
    let mut records = Vec::new();
    for (provider, files) in STREAMS {
        let mut streams = Vec::new();
        for f in *files {
            let path = fixtures.join(f);
            let mut bytes =
                std::fs::read(&path).map_err(|source| BenchError::Io { path, source })?;
            // SDK fixtures lack the final blank line; terminate them so that
            // repeated copies stay separate streams.
            while !bytes.ends_with(b"\n\n") {
                bytes.push(b'\n');
            }
            streams.push(((*f).to_owned(), bytes));
        }
        let one_round: usize = streams.iter().map(|(_, b)| b.len()).sum();
        let rounds = target_bytes.div_ceil(one_round.max(1)).max(1);
        let mut all = Vec::with_capacity(one_round * rounds);
        for _ in 0..rounds {
            for (_, b) in &streams {
                all.extend_from_slice(b);
            }
        }

        // Best of several passes: the figure is the decoder's, not the machine's noise.
        let mut sse_secs = f64::INFINITY;
        let mut full_secs = f64::INFINITY;
        let mut events = 0;
        let mut chunks = 0usize;
        for _ in 0..PASSES {
            let start = Stopwatch::now();
            events = frame_only(&all);
            sse_secs = sse_secs.min(start.elapsed());

            let start = Stopwatch::now();
            chunks = 0;
            for _ in 0..rounds {
                for (name, b) in &streams {
                    chunks += match *provider {
                        "anthropic" => full(AnthropicDecoder::default(), b),
                        "openai_chat" => full(ChatDecoder::new(false), b),
                        _ => full(ResponsesDecoder::default(), b),
                    }
                    .map_err(|message| BenchError::Decode {
                        name: name.clone(),
                        message,
                    })?;
                }
            }
            full_secs = full_secs.min(start.elapsed());
        }
        let mb = all.len() as f64 / 1e6;
        records.push(json!({
            "bench": "sse-decode",
            "provider": provider,
            "bytes": all.len(),
            "events": events,
            "chunks": chunks,
            "mb_per_s": round1(mb / sse_secs),
            "clock": Stopwatch::now().name(),
            "full_decode_mb_per_s": round1(mb / full_secs),
        }));
    }
    Ok(records)
}

/// What a measurement is timed with: this thread's CPU time where the OS
/// tells it (Linux `schedstat`, nanoseconds), so that other processes on a
/// busy machine do not skew the figure; wall time elsewhere.
enum Stopwatch {
    ThreadCpu(u64),
    Wall(Instant),
}

impl Stopwatch {
    fn now() -> Self {
        match thread_cpu_ns() {
            Some(ns) => Stopwatch::ThreadCpu(ns),
            None => Stopwatch::Wall(Instant::now()),
        }
    }

    fn elapsed(&self) -> f64 {
        match self {
            Stopwatch::ThreadCpu(start) => thread_cpu_ns().map_or(f64::INFINITY, |now| {
                (now.saturating_sub(*start)) as f64 / 1e9
            }),
            Stopwatch::Wall(start) => start.elapsed().as_secs_f64(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Stopwatch::ThreadCpu(_) => "thread_cpu",
            Stopwatch::Wall(_) => "wall",
        }
    }
}

fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn frame_only(all: &[u8]) -> usize {
    let mut dec = SseDecoder::new();
    let mut events = 0usize;
    let mut count = |e: SseEvent<'_>| -> Result<(), SseError> {
        black_box(e.data.len());
        events += 1;
        Ok(())
    };
    for piece in all.chunks(READ_SIZE) {
        // The input was decoded once already: it is valid UTF-8.
        if dec.feed(piece, &mut count).is_err() {
            return 0;
        }
    }
    let _ = dec.finish(&mut count);
    events
}

fn full<D: EventDecoder>(provider: D, bytes: &[u8]) -> Result<usize, String> {
    let mut dec = StreamDecoder::new(provider);
    let mut out = Vec::new();
    for piece in bytes.chunks(READ_SIZE) {
        dec.feed(piece, &mut out).map_err(|e| e.to_string())?;
    }
    dec.finish(&mut out).map_err(|e| e.to_string())?;
    Ok(black_box(out).len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_runs_on_a_small_target_and_reports_every_provider() {
        let records = bench_sse_decode(&default_fixtures_dir(), 100_000).unwrap();
        let providers: Vec<&str> = records
            .iter()
            .map(|r| r["provider"].as_str().unwrap())
            .collect();
        assert_eq!(providers, ["anthropic", "openai_chat", "openai_responses"]);
        for r in &records {
            assert_eq!(r["bench"], "sse-decode");
            assert!(r["bytes"].as_u64().unwrap() >= 100_000);
            assert!(r["events"].as_u64().unwrap() > 0);
            assert!(r["chunks"].as_u64().unwrap() > 0);
        }
    }
}
