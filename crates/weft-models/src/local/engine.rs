//! The llama.cpp engine behind local models: loading a GGUF file, rendering
//! the chat with the template stored in it, and generating tokens on the CPU
//! under a sampler chain (top-k, top-p, temperature, seeded draw or greedy
//! choice) checked against the tool-call grammar. As in llama.cpp's own
//! sampler, the token is drawn first and only checked against the grammar;
//! only when the grammar rejects it is the whole vocabulary masked and the
//! token drawn again, which keeps constrained decoding nearly as fast as free
//! decoding. Generation is blocking; [`super::LocalModel`] runs it on a
//! blocking thread and streams what it releases.
//!
//! One generation runs at a time per loaded model: on a CPU the threads of
//! one generation already use every core, so a second one would only slow
//! both down.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use weft_core::model::{ModelError, StopReason};

use super::grammar::CALL_OPEN;
use super::output::{Piece, Splitter};
use super::prompt::Turn;

/// The process-wide llama.cpp backend, initialised once.
fn backend() -> Result<&'static LlamaBackend, ModelError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(
                llama_cpp_2::LogOptions::default().with_logs_enabled(false),
            );
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| other(format!("llama.cpp backend: {e}")))
}

fn other(message: String) -> ModelError {
    ModelError::Other { message }
}

/// How generation picks tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// 0 (or less) picks the likeliest token every time.
    pub temperature: f32,
    /// Nucleus mass; 1 disables it.
    pub top_p: f32,
    /// Candidates kept before top-p; 0 disables it.
    pub top_k: i32,
    /// Seed of the random draw.
    pub seed: u32,
}

/// How tool calls are constrained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constraint {
    /// Free text, no calls recognised.
    None,
    /// Free text; once the model opens a call, the grammar holds.
    Lazy(String),
    /// The whole answer is calls under the grammar.
    Strict(String),
}

/// One generation.
#[derive(Debug, Clone)]
pub struct Generate {
    /// The rendered prompt.
    pub prompt: String,
    /// Most tokens to produce.
    pub max_tokens: u32,
    /// Token choice.
    pub sampling: Sampling,
    /// Tool-call grammar.
    pub constraint: Constraint,
    /// Stop sequences (text only).
    pub stop: Vec<String>,
    /// Keep generating past end-of-turn tokens (benchmarks only).
    pub ignore_eog: bool,
}

/// What a generation did and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// Tokens in the prompt.
    pub prompt_tokens: u32,
    /// Tokens produced.
    pub output_tokens: u32,
    /// From the start to the first produced token (prompt evaluation included).
    pub first_token: Duration,
    /// From the first produced token to the last.
    pub decode: Duration,
    /// Why generation ended.
    pub stop: StopReason,
}

/// A loaded GGUF model.
pub struct Engine {
    path: PathBuf,
    model: LlamaModel,
    template: LlamaChatTemplate,
    threads: i32,
    gate: Mutex<()>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("path", &self.path)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Loads `path` (memory-mapped) for generation on `threads` threads.
    pub fn load(path: &Path, threads: usize) -> Result<Self, ModelError> {
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| ModelError::Config {
                message: format!("cannot load GGUF model {}: {e}", path.display()),
            })?;
        let template = model.chat_template(None).map_err(|e| ModelError::Config {
            message: format!(
                "GGUF model {} carries no usable chat template: {e}",
                path.display()
            ),
        })?;
        Ok(Self {
            path: path.to_owned(),
            model,
            template,
            threads: i32::try_from(threads.max(1)).unwrap_or(1),
            gate: Mutex::new(()),
        })
    }

    /// Renders `turns` with the model's own chat template, ready for the
    /// assistant's answer.
    pub fn render(&self, turns: &[Turn]) -> Result<String, ModelError> {
        let chat = turns
            .iter()
            .map(|t| LlamaChatMessage::new(t.role.to_owned(), t.content.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ModelError::Config {
                message: format!("a message cannot be passed to the chat template: {e}"),
            })?;
        self.model
            .apply_chat_template(&self.template, &chat, true)
            .map_err(|e| ModelError::Config {
                message: format!(
                    "the chat template of {} could not be applied: {e}",
                    self.path.display()
                ),
            })
    }

    /// Tokens the model was trained to attend over.
    pub fn context_length(&self) -> u32 {
        self.model.n_ctx_train()
    }

    /// Runs one generation, handing each released piece to `sink`; a sink
    /// returning `false` ends generation early (the reader went away).
    pub fn generate(
        &self,
        req: &Generate,
        sink: &mut dyn FnMut(Piece) -> bool,
    ) -> Result<Generated, ModelError> {
        let _one_at_a_time = self.gate.lock().unwrap_or_else(|p| p.into_inner());
        let start = Instant::now();
        let backend = backend()?;
        let vocab = self.model.vocab();
        let prompt = vocab.tokenize(req.prompt.as_bytes(), false, true);
        let prompt_tokens = u32::try_from(prompt.len()).unwrap_or(u32::MAX);
        let limit = self.context_length();
        if prompt_tokens >= limit {
            return Err(ModelError::Config {
                message: format!(
                    "the prompt has {prompt_tokens} tokens; the model's context holds {limit}"
                ),
            });
        }
        let max_tokens = req.max_tokens.min(limit - prompt_tokens);
        let n_ctx = (prompt_tokens + max_tokens).max(64);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_ctx)
            .with_n_threads(self.threads)
            .with_n_threads_batch(self.threads);
        let mut ctx = self
            .model
            .new_context(backend, params)
            .map_err(|e| other(format!("cannot create a llama.cpp context: {e}")))?;
        let mut picker = self.picker(req)?;

        let mut batch = LlamaBatch::new(prompt.len().max(1), 1);
        let last = prompt.len().saturating_sub(1);
        for (i, token) in prompt.iter().enumerate() {
            batch
                .add(*token, pos(i), &[0], i == last)
                .map_err(|e| other(format!("prompt batch: {e}")))?;
        }
        ctx.decode(&mut batch)
            .map_err(|e| other(format!("prompt evaluation failed: {e}")))?;

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
            let token = picker.pick(&ctx, batch.n_tokens() - 1)?;
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
                    return Ok(self.finished(prompt_tokens, produced, start, first_token, StopReason::EndTurn));
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
        };
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
        Ok(self.finished(prompt_tokens, produced, start, first_token, stop))
    }

    fn finished(
        &self,
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

    fn picker(&self, req: &Generate) -> Result<Picker, ModelError> {
        let rejected = |text: &str, e: &dyn std::fmt::Display| {
            other(format!("tool-call grammar rejected by llama.cpp: {e}\n{text}"))
        };
        let grammar = match &req.constraint {
            Constraint::None => None,
            Constraint::Lazy(g) => {
                // Triggered when the output opens a call; the grammar then
                // reads from the opening tag on.
                let pattern = format!(r"[\s\S]*?({})[\s\S]*", regex_escape(CALL_OPEN));
                Some(
                    LlamaSampler::grammar_lazy_patterns(&self.model, g, "root", &[pattern], &[])
                        .map_err(|e| rejected(g, &e))?,
                )
            }
            Constraint::Strict(g) => Some(
                LlamaSampler::grammar(&self.model, g, "root").map_err(|e| rejected(g, &e))?,
            ),
        };
        let mut chain = Vec::with_capacity(5);
        if req.ignore_eog {
            let vocab = self.model.vocab();
            let biases: Vec<LlamaLogitBias> = (0..vocab.n_tokens())
                .map(LlamaToken::new)
                .filter(|t| vocab.is_eog(*t))
                .map(|t| LlamaLogitBias::new(t, f32::NEG_INFINITY))
                .collect();
            chain.push(LlamaSampler::logit_bias(self.model.n_vocab(), &biases));
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
            let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            one.apply_sampler(grammar);
            if one.data.first().is_none_or(|t| t.logit() == f32::NEG_INFINITY) {
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

fn malformed(e: &super::output::SplitError) -> ModelError {
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
