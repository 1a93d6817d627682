//! The local-model benchmark behind `weft bench local-model`: time to first
//! token and decode speed of a GGUF model on this machine's CPU.
//!
//! Each run renders the same chat with the model's template, evaluates the
//! prompt and decodes a fixed number of tokens greedily (end-of-turn tokens
//! are masked so every run decodes the same count). Time to first token runs
//! from the start of the generation (tokenising and prompt evaluation
//! included) to the first sampled token; decode speed counts the tokens after
//! the first over the time after it. The same runs are then made with the
//! answer constrained by the tool-call grammar (one call of a tool taking
//! free text, from the first token), so constrained decoding's cost shows
//! next to free decoding's. They are made twice: replacing a token the
//! grammar rejects by the next best it allows (the default), and by masking
//! the whole vocabulary (`constraint` `grammar_mask`); the summary says
//! whether both wrote the same answer, as they must. One JSON line per run,
//! then a summary line with the medians and their ratio; the summary carries
//! the rendered prompt so another engine can be timed on exactly the same
//! tokens. Several runs at once are measured by [`crate::local_concurrent`].

use std::time::Instant;

use serde_json::{Value, json};
use weft_core::model::ModelError;

use weft_local::LocalModel;
use weft_local::engine::Engine;
use weft_local::generation::{Constraint, Generate, Replace, Sampling};
use weft_local::grammar::{GrammarTool, tool_call_grammar};
use weft_local::output::Piece;
use weft_local::prompt::Turn;

/// What to measure.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Tokens decoded per run.
    pub tokens: u32,
    /// Measured runs (after one warm-up run).
    pub runs: u32,
    /// The user's message.
    pub prompt: String,
}

/// The system message of every benchmark prompt.
pub const SYSTEM: &str = "You are a concise assistant.";

/// Runs the benchmark; returns the JSON lines.
pub fn bench_local_model(
    model: &LocalModel,
    settings: &Settings,
) -> Result<Vec<Value>, ModelError> {
    let load_start = Instant::now();
    let engine = model.engine()?;
    let load_ms = load_start.elapsed().as_secs_f64() * 1e3;
    let free = free_generation(&engine, settings)?;
    let prompt = free.prompt.clone();
    // The same prompt, the answer one call of a tool whose argument is free
    // text, decoded under the tool-call grammar from the first token.
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    });
    let constrained = Generate {
        constraint: Constraint::Strict(tool_call_grammar(&[GrammarTool {
            name: "note",
            schema: &schema,
        }])),
        ignore_eog: false,
        ..free.clone()
    };
    let masked = Generate {
        replace: Replace::Mask,
        ..constrained.clone()
    };
    let mut lines = Vec::new();
    let free_runs = timed(&engine, &free, settings.runs, "none", &mut lines)?;
    let constrained_runs = timed(&engine, &constrained, settings.runs, "grammar", &mut lines)?;
    let masked_runs = timed(&engine, &masked, settings.runs, "grammar_mask", &mut lines)?;
    let (mut ttft, mut speed): (Vec<f64>, Vec<f64>) = free_runs.runs.into_iter().unzip();
    let mut constrained_speed: Vec<f64> = constrained_runs.runs.into_iter().map(|r| r.1).collect();
    let mut masked_speed: Vec<f64> = masked_runs.runs.into_iter().map(|r| r.1).collect();
    let free_tok_s = median(&mut speed);
    let constrained_tok_s = median(&mut constrained_speed);
    let masked_tok_s = median(&mut masked_speed);
    lines.push(json!({
        "bench": "local-model",
        "engine": "weft",
        "summary": true,
        "model": model.path().file_name().map(|f| f.to_string_lossy().into_owned()),
        "threads": model.threads(),
        "load_ms": round(load_ms),
        "runs": settings.runs,
        "prompt_tokens": free_runs.prompt_tokens,
        "decoded_tokens": settings.tokens,
        "ttft_ms_median": round(median(&mut ttft)),
        "decode_tok_s_median": round(free_tok_s),
        "constrained_decode_tok_s_median": round(constrained_tok_s),
        "constrained_to_free_ratio": round(constrained_tok_s / free_tok_s.max(1e-9)),
        "constrained_mask_decode_tok_s_median": round(masked_tok_s),
        "constrained_same_as_mask": constrained_runs.answer == masked_runs.answer,
        "constrained_answer": constrained_runs.answer,
        "prompt": prompt.text,
    }));
    Ok(lines)
}

/// The benchmark's free generation: the prompt rendered with the model's
/// template, `settings.tokens` tokens decoded greedily, end-of-turn masked.
pub fn free_generation(engine: &Engine, settings: &Settings) -> Result<Generate, ModelError> {
    let prompt = engine.render(&[
        Turn {
            role: "system",
            content: SYSTEM.to_owned(),
            literal: false,
        },
        Turn {
            role: "user",
            content: settings.prompt.clone(),
            literal: true,
        },
    ])?;
    Ok(Generate {
        prompt,
        max_tokens: settings.tokens,
        sampling: Sampling {
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            seed: 0,
        },
        constraint: Constraint::None,
        replace: Replace::NextBest,
        stop: Vec::new(),
        ignore_eog: true,
        reuse_prefix: false,
    })
}

/// The measured runs of one kind of generation.
struct Timed {
    prompt_tokens: u32,
    /// What the last run wrote: its text, and its calls' names and
    /// arguments.
    answer: String,
    /// Time to first token (ms) and decode speed (tokens/s) of each run.
    runs: Vec<(f64, f64)>,
}

/// One warm-up run, then `runs` measured ones, each printed as a line.
fn timed(
    engine: &weft_local::engine::Engine,
    generate: &Generate,
    runs: u32,
    constraint: &str,
    lines: &mut Vec<Value>,
) -> Result<Timed, ModelError> {
    let mut out = Timed {
        prompt_tokens: 0,
        answer: String::new(),
        runs: Vec::new(),
    };
    for run in 0..=runs {
        let mut answer = String::new();
        let g = engine.generate(generate, &mut |piece| {
            match piece {
                Piece::Text(text) => answer.push_str(&text),
                Piece::Call { name, arguments } => {
                    answer.push_str(&format!("<call {name}>{arguments}</call>"));
                }
            }
            true
        })?;
        out.answer = answer;
        out.prompt_tokens = g.prompt_tokens;
        if run == 0 {
            continue; // warm-up: page in the weights, settle the threads
        }
        let ttft_ms = g.first_token.as_secs_f64() * 1e3;
        let decoded = g.output_tokens.saturating_sub(1);
        let tok_s = f64::from(decoded) / g.decode.as_secs_f64().max(1e-9);
        lines.push(json!({
            "bench": "local-model",
            "engine": "weft",
            "constraint": constraint,
            "run": run,
            "prompt_tokens": g.prompt_tokens,
            "decoded_tokens": g.output_tokens,
            "ttft_ms": round(ttft_ms),
            "decode_tok_s": round(tok_s),
        }));
        out.runs.push((ttft_ms, tok_s));
    }
    Ok(out)
}

fn median(xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    }
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
