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
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use weft_core::model::{ModelError, StopReason};

use super::engine::{Constraint, Generate, Generated, backend, other};
use super::grammar::CALL_OPEN;
use super::output::{Piece, SplitError, Splitter};

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
    let prompt = vocab.tokenize(req.prompt.as_bytes(), false, true);
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

fn picker(model: &LlamaModel, req: &Generate) -> Result<Picker, ModelError> {
    let rejected = |text: &str, e: &dyn std::fmt::Display| {
        other(format!(
            "tool-call grammar rejected by llama.cpp: {e}\n{text}"
        ))
    };
    let grammar = match &req.constraint {
        Constraint::None => None,
        Constraint::Lazy(g) => {
            // Triggered when the output opens a call; the grammar then
            // reads from the opening tag on.
            let pattern = format!(r"[\s\S]*?({})[\s\S]*", regex_escape(CALL_OPEN));
            Some(
                LlamaSampler::grammar_lazy_patterns(model, g, "root", &[pattern], &[])
                    .map_err(|e| rejected(g, &e))?,
            )
        }
        Constraint::Strict(g) => {
            Some(LlamaSampler::grammar(model, g, "root").map_err(|e| rejected(g, &e))?)
        }
    };
    let mut chain = Vec::with_capacity(5);
    if req.ignore_eog {
        let vocab = model.vocab();
        let biases: Vec<LlamaLogitBias> = (0..vocab.n_tokens())
            .map(LlamaToken::new)
            .filter(|t| vocab.is_eog(*t))
            .map(|t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
            .collect();
        chain.push(LlamaSampler::logit_bias(model.n_vocab(), &biases));
    }
    let s = req.sampling;
    if s.temperature <= 0.0 {
        chain.push(LlamaSampler::greedy());
    } else {
        if s.top_k > 0 {
            chain.push(LlamaSampler::top_k(s.top_k));
        }
        if s.top_p < 1.0 {
            chain.push(LlamaSampler::top_p(s.top_p, 1));
        }
        chain.push(LlamaSampler::temp(s.temperature));
        chain.push(LlamaSampler::dist(s.seed));
    }
    Ok(Picker {
        grammar,
        chain: LlamaSampler::chain_simple(chain),
    })
}

/// Picks each token: the sampler chain draws, the grammar (if any) checks.
struct Picker {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
}

impl Picker {
    fn pick(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> Result<LlamaToken, ModelError> {
        let none = || other("the sampler chose no token".to_owned());
        let mut cur = ctx.token_data_array_ith(idx);
        cur.apply_sampler(&mut self.chain);
        let mut token = cur.selected_token().ok_or_else(none)?;
        if let Some(grammar) = &mut self.grammar {
            let mut one =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            one.apply_sampler(grammar);
            if one
                .data
                .first()
                .is_none_or(|t| t.logit() == f32::NEG_INFINITY)
            {
                let mut cur = ctx.token_data_array_ith(idx);
                cur.apply_sampler(grammar);
                cur.apply_sampler(&mut self.chain);
                token = cur.selected_token().ok_or_else(none)?;
            }
            grammar.accept(token);
        }
        self.chain.accept(token);
        Ok(token)
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

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.^$|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Token bytes to text: a token may end inside a UTF-8 sequence, which the
/// next token completes; bytes that can never be UTF-8 become U+FFFD.
#[derive(Debug, Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // Safe split: `valid` bytes are UTF-8 by the error's word.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                    }
                }
            }
        }
    }

    fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any byte string cut anywhere decodes as it does whole.
        #[test]
        fn utf8_stream_is_independent_of_cuts(s in "\\PC{0,40}", cut in 0usize..200) {
            let bytes = s.as_bytes();
            let cut = cut.min(bytes.len());
            let mut u = Utf8Stream::default();
            let mut out = u.push(&bytes[..cut]);
            out.push_str(&u.push(&bytes[cut..]));
            out.push_str(&u.finish());
            prop_assert_eq!(out, s);
        }
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut u = Utf8Stream::default();
        let mut out = u.push(b"a\xffb\xe2\x82");
        out.push_str(&u.finish());
        assert_eq!(out, "a\u{fffd}b\u{fffd}");
    }

    #[test]
    fn the_trigger_pattern_escapes_the_tag() {
        assert_eq!(regex_escape("<tool_call>"), "<tool_call>");
        assert_eq!(regex_escape("a.b(c)"), r"a\.b\(c\)");
    }
}
