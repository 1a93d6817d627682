//! The generation thread of a loaded local model. It owns the llama.cpp
//! context, so the context (and its KV cache) outlives single generations:
//! no context is created per request, and a prompt that extends the previous
//! one (the next turn of the same run) evaluates only its new tokens. Jobs
//! arrive one at a time over a channel, which also makes generations on one
//! model take turns: on a CPU one generation already uses every core.

use std::num::NonZeroU32;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use weft_core::model::{ModelError, StopReason};

use super::backend::{backend, other};
use super::generation::{Constraint, Generate, Generated};
use super::output::{Piece, SplitError, Splitter};
use super::picker::picker;
use super::tokens;
use super::utf8::Utf8Stream;

/// Context size the thread starts with (or the model's, if smaller); a
/// request needing more gets a larger context.
const DEFAULT_CONTEXT: u32 = 4096;

/// One generation for the thread.
pub(super) struct Job {
    /// What to generate.
    pub req: Generate,
    /// Where pieces and the result go.
    pub out: Sender<Msg>,
    /// Set when the reader went away.
    pub cancel: Arc<AtomicBool>,
}

/// What the thread sends back.
pub(super) enum Msg {
    /// A released piece.
    Piece(Piece),
    /// The end of the generation.
    Done(Result<Generated, ModelError>),
}

/// The thread's body: serves jobs until the engine is dropped.
pub(super) fn run(model: Arc<LlamaModel>, threads: i32, jobs: Receiver<Job>) {
    let model: &LlamaModel = &model;
    let mut warm: Option<Warm<'_>> = None;
    for job in jobs {
        let mut sink =
            |p: Piece| !job.cancel.load(Ordering::Relaxed) && job.out.send(Msg::Piece(p)).is_ok();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            generate(model, threads, &mut warm, &job.req, &mut sink)
        }))
        .unwrap_or_else(|_| {
            Err(other(
                "the local model panicked while generating".to_owned(),
            ))
        });
        if result.is_err() {
            warm = None; // the cache's state is unknown after a failure
        }
        let _ = job.out.send(Msg::Done(result));
    }
}

/// A context kept between generations, with the tokens its KV cache holds.
struct Warm<'m> {
    ctx: LlamaContext<'m>,
    n_ctx: u32,
    tokens: Vec<LlamaToken>,
}

impl<'m> Warm<'m> {
    fn new(model: &'m LlamaModel, threads: i32, n_ctx: u32) -> Result<Self, ModelError> {
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_ctx)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model
            .new_context(backend()?, params)
            .map_err(|e| other(format!("cannot create a llama.cpp context: {e}")))?;
        Ok(Self {
            ctx,
            n_ctx,
            tokens: Vec::new(),
        })
    }
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Runs one generation on the kept context, handing each released piece to
/// `sink`; a sink returning `false` ends generation early.
fn generate<'m>(
    model: &'m LlamaModel,
    threads: i32,
    warm: &mut Option<Warm<'m>>,
    req: &Generate,
    sink: &mut dyn FnMut(Piece) -> bool,
) -> Result<Generated, ModelError> {
    let start = Instant::now();
    let vocab = model.vocab();
    let prompt = tokens::tokenize(model, &req.prompt);
    let prompt_tokens = u32::try_from(prompt.len()).unwrap_or(u32::MAX);
    let limit = model.n_ctx_train();
    if prompt_tokens >= limit {
        return Err(ModelError::Config {
            message: format!(
                "the prompt has {prompt_tokens} tokens; the model's context holds {limit}"
            ),
        });
    }
    let max_tokens = req.max_tokens.min(limit - prompt_tokens);
    let needed = prompt_tokens + max_tokens;
    let reuse = warm.take().filter(|w| w.n_ctx >= needed);
    let mut w = match reuse {
        Some(w) => w,
        None => Warm::new(model, threads, needed.max(DEFAULT_CONTEXT).min(limit))?,
    };
    // The KV cache keeps the longest prefix this prompt shares with what it
    // holds (at least the last prompt token is evaluated again, for its logits).
    let keep = if req.reuse_prefix {
        common_prefix(&w.tokens, &prompt).min(prompt.len().saturating_sub(1))
    } else {
        0
    };
    w.ctx
        .clear_kv_cache_seq(Some(0), Some(u32::try_from(keep).unwrap_or(u32::MAX)), None)
        .map_err(|e| other(format!("KV cache: {e}")))?;
    w.tokens.truncate(keep);
    let mut picker = picker(model, req)?;

    let fresh = &prompt[keep..];
    let mut batch = LlamaBatch::new(fresh.len().max(1), 1);
    let last = fresh.len().saturating_sub(1);
    for (i, token) in fresh.iter().enumerate() {
        batch
            .add(*token, pos(keep + i), &[0], i == last)
            .map_err(|e| other(format!("prompt batch: {e}")))?;
    }
    w.ctx
        .decode(&mut batch)
        .map_err(|e| other(format!("prompt evaluation failed: {e}")))?;
    w.tokens.extend_from_slice(fresh);
    let ctx = &mut w.ctx;

    let calls = !matches!(req.constraint, Constraint::None);
    let mut splitter = Splitter::new(&req.stop, calls);
    let mut text = Utf8Stream::default();
    let mut released = Vec::new();
    let mut produced = 0u32;
    let mut first_token = None;
    let mut any_call = false;
    let mut n_past = prompt.len();
    let stop = loop {
        if produced >= max_tokens {
            break StopReason::MaxTokens;
        }
        let token = picker.pick(ctx, batch.n_tokens() - 1)?;
        produced += 1;
        first_token.get_or_insert_with(|| start.elapsed());
        if !req.ignore_eog && vocab.is_eog(token) {
            break StopReason::EndTurn;
        }
        let bytes = vocab.token_to_piece(token, false, None);
        let piece = text.push(&bytes);
        splitter
            .push(&piece, &mut released)
            .map_err(|e| malformed(&e))?;
        for p in released.drain(..) {
            any_call |= matches!(p, Piece::Call { .. });
            if !sink(p) {
                *warm = Some(w);
                return Ok(finished(
                    prompt_tokens,
                    produced,
                    start,
                    first_token,
                    StopReason::EndTurn,
                ));
            }
        }
        if splitter.stopped() {
            break StopReason::StopSequence;
        }
        batch.clear();
        batch
            .add(token, pos(n_past), &[0], true)
            .map_err(|e| other(format!("token batch: {e}")))?;
        n_past += 1;
        ctx.decode(&mut batch)
            .map_err(|e| other(format!("decoding failed: {e}")))?;
        w.tokens.push(token);
    };
    *warm = Some(w);
    let tail = text.finish();
    let mut end = splitter.push(&tail, &mut released).and_then(|()| {
        if splitter.stopped() {
            Ok(())
        } else {
            splitter.finish(&mut released)
        }
    });
    if stop == StopReason::MaxTokens
        && let Err(super::output::SplitError::Unfinished { text }) = &end
    {
        // The budget ran out inside a call: the call is dropped, never
        // released half-written.
        tracing::debug!(partial = %text, "local model: max tokens inside a tool call");
        end = Ok(());
    }
    end.map_err(|e| malformed(&e))?;
    for p in released.drain(..) {
        any_call |= matches!(p, Piece::Call { .. });
        if !sink(p) {
            break;
        }
    }
    let stop = match stop {
        StopReason::EndTurn if any_call => StopReason::ToolUse,
        s => s,
    };
    Ok(finished(prompt_tokens, produced, start, first_token, stop))
}

fn finished(
    prompt_tokens: u32,
    output_tokens: u32,
    start: Instant,
    first_token: Option<Duration>,
    stop: StopReason,
) -> Generated {
    let total = start.elapsed();
    let first_token = first_token.unwrap_or(total);
    Generated {
        prompt_tokens,
        output_tokens,
        first_token,
        decode: total.saturating_sub(first_token),
        stop,
    }
}

fn pos(i: usize) -> i32 {
    i32::try_from(i).unwrap_or(i32::MAX)
}

fn malformed(e: &SplitError) -> ModelError {
    ModelError::Malformed {
        line: String::new(),
        message: e.to_string(),
    }
}
