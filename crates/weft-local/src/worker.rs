//! The generation thread of a loaded local model: continuous batching over
//! one llama.cpp context. The context has a number of sequences (slots,
//! [`DEFAULT_SEQUENCES`] unless the model says otherwise); each generation
//! takes a free slot, and every step decodes the next token of every slot in
//! one batch, so eight runs on one model decode together instead of taking
//! turns (on a CPU, decoding is bound by reading the weights, which one
//! batch reads once for all its sequences).
//!
//! - **Prompts** are evaluated in the same batches, in chunks of at most
//!   512 tokens per step, so a long prompt does not stall the
//!   slots already generating.
//! - **The KV cache outlives generations.** Each slot keeps the tokens its
//!   part of the cache holds; a generation takes the free slot whose tokens
//!   share the longest prefix with its prompt (the next turn of the same
//!   run finds its own slot) and evaluates only the rest.
//! - **Room.** Each slot holds up to the context's size per sequence. A
//!   generation needing more waits until no slot is busy; the context is
//!   then made again, larger (the caches are lost). Generations wait in the
//!   order they arrived.
//! - **Failures.** A decode that fails, or a panic, fails every generation
//!   in flight and drops the context (its state is unknown); the next
//!   generation makes a new one.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use weft_core::model::ModelError;

use super::backend::{backend, other};
use super::feed::{Busy, Slot, common_prefix, fill, to_u32};
use super::job::{Job, Msg};
use super::sequence::{Sequence, Step};
use super::tokens;

/// Tokens per sequence the context starts with (or the model's, if
/// smaller); a request needing more gets a larger context.
const DEFAULT_CONTEXT: u32 = 4096;

/// Generations one model decodes at once unless told otherwise (as
/// llama.cpp's server's default slots).
pub const DEFAULT_SEQUENCES: usize = 4;

/// A job whose prompt is tokenized, waiting for a slot.
struct Waiting {
    job: Job,
    prompt: Vec<LlamaToken>,
    max_tokens: u32,
}

impl Waiting {
    /// Tokens of cache the generation may fill.
    fn needed(&self) -> u32 {
        u32::try_from(self.prompt.len())
            .unwrap_or(u32::MAX)
            .saturating_add(self.max_tokens)
    }
}

/// The thread's body: serves jobs until the engine is dropped.
pub(super) fn run(model: Arc<LlamaModel>, threads: i32, sequences: usize, jobs: Receiver<Job>) {
    let model: &LlamaModel = &model;
    let mut batcher = Batcher::new(model, threads, sequences);
    let mut waiting = VecDeque::new();
    let mut open = true;
    loop {
        if batcher.idle() && waiting.is_empty() {
            if !open {
                return;
            }
            match jobs.recv() {
                Ok(job) => batcher.prepare(job, &mut waiting),
                Err(_) => return,
            }
        }
        while open {
            match jobs.try_recv() {
                Ok(job) => batcher.prepare(job, &mut waiting),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => open = false,
            }
        }
        let stepped = std::panic::catch_unwind(AssertUnwindSafe(|| {
            batcher.admit(&mut waiting);
            batcher.step();
        }));
        if stepped.is_err() {
            batcher.fail_all("the local model panicked while generating");
        }
    }
}

/// The slots of one context and the generations in them.
struct Batcher<'m> {
    model: &'m LlamaModel,
    threads: i32,
    ctx: Option<Context<'m>>,
    slots: Vec<Slot>,
}

/// The context and how many tokens each of its sequences holds.
struct Context<'m> {
    ctx: LlamaContext<'m>,
    per_sequence: u32,
}

impl<'m> Batcher<'m> {
    fn new(model: &'m LlamaModel, threads: i32, sequences: usize) -> Self {
        Self {
            model,
            threads,
            ctx: None,
            slots: (0..sequences.max(1)).map(|_| Slot::default()).collect(),
        }
    }

    fn idle(&self) -> bool {
        self.slots.iter().all(|s| s.busy.is_none())
    }

    /// Tokenizes `job`'s prompt and queues it, or fails it at once when the
    /// prompt does not fit the model.
    fn prepare(&self, job: Job, waiting: &mut VecDeque<Waiting>) {
        let prompt = tokens::tokenize(self.model, &job.req.prompt);
        let prompt_tokens = u32::try_from(prompt.len()).unwrap_or(u32::MAX);
        let limit = self.model.n_ctx_train();
        if prompt.is_empty() {
            let message = "the prompt has no tokens".to_owned();
            let _ = job.out.send(Msg::Done(Err(ModelError::Config { message })));
            return;
        }
        if prompt_tokens >= limit {
            let message =
                format!("the prompt has {prompt_tokens} tokens; the model's context holds {limit}");
            let _ = job.out.send(Msg::Done(Err(ModelError::Config { message })));
            return;
        }
        let max_tokens = job.req.max_tokens.min(limit - prompt_tokens);
        waiting.push_back(Waiting {
            job,
            prompt,
            max_tokens,
        });
    }

    /// Puts waiting generations in free slots, oldest first.
    fn admit(&mut self, waiting: &mut VecDeque<Waiting>) {
        while let Some(next) = waiting.front() {
            let needed = next.needed();
            if self.ctx.as_ref().is_none_or(|c| c.per_sequence < needed) {
                if !self.idle() {
                    return; // a larger context once the slots are free
                }
                let per_sequence = needed.max(DEFAULT_CONTEXT).min(self.model.n_ctx_train());
                if let Err(e) = self.make_context(per_sequence) {
                    if let Some(w) = waiting.pop_front() {
                        let _ = w.job.out.send(Msg::Done(Err(e)));
                    }
                    continue;
                }
            }
            let Some(at) = self.free_slot(next) else {
                return;
            };
            let Some(w) = waiting.pop_front() else {
                return;
            };
            if let Err(e) = self.start(at, w) {
                tracing::debug!(error = %e, "local model: a generation could not start");
            }
        }
    }

    /// Makes the context anew with room for `per_sequence` tokens in each slot.
    fn make_context(&mut self, per_sequence: u32) -> Result<(), ModelError> {
        self.ctx = None;
        for slot in &mut self.slots {
            slot.tokens.clear();
        }
        let sequences = u32::try_from(self.slots.len()).unwrap_or(1);
        let n_ctx = per_sequence.saturating_mul(sequences);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_ctx)
            .with_n_seq_max(sequences)
            .with_kv_unified(false)
            .with_n_threads(self.threads)
            .with_n_threads_batch(self.threads);
        let ctx = self
            .model
            .new_context(backend()?, params)
            .map_err(|e| other(format!("cannot create a llama.cpp context: {e}")))?;
        self.ctx = Some(Context { ctx, per_sequence });
        Ok(())
    }

    /// The free slot for `w`: the one whose cache shares the longest prefix
    /// with its prompt (when it may reuse one), else the first free.
    fn free_slot(&self, w: &Waiting) -> Option<usize> {
        let free = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.busy.is_none());
        if !w.job.req.reuse_prefix {
            return free.map(|(i, _)| i).next();
        }
        free.max_by_key(|(i, s)| (common_prefix(&s.tokens, &w.prompt), usize::MAX - i))
            .map(|(i, _)| i)
    }

    /// Starts `w` in slot `at`: keeps the cache's prefix it can reuse (at
    /// least its last prompt token is evaluated again, for its logits).
    fn start(&mut self, at: usize, w: Waiting) -> Result<(), ModelError> {
        let Waiting {
            job,
            prompt,
            max_tokens,
        } = w;
        let Some(ctx) = self.ctx.as_mut() else {
            let e = other("no llama.cpp context".to_owned());
            let _ = job.out.send(Msg::Done(Err(e.clone())));
            return Err(e);
        };
        let slot = &mut self.slots[at];
        let mut keep = if job.req.reuse_prefix {
            common_prefix(&slot.tokens, &prompt).min(prompt.len().saturating_sub(1))
        } else {
            0
        };
        let seq = Some(to_u32(at));
        let mut cleared = ctx.ctx.clear_kv_cache_seq(seq, Some(to_u32(keep)), None);
        if matches!(cleared, Ok(false)) {
            // The cache could not drop only the tail: drop the whole sequence.
            keep = 0;
            cleared = ctx.ctx.clear_kv_cache_seq(seq, None, None);
        }
        if let Err(e) = cleared {
            slot.tokens.clear();
            let e = other(format!("KV cache: {e}"));
            let _ = job.out.send(Msg::Done(Err(e.clone())));
            return Err(e);
        }
        slot.tokens.truncate(keep);
        let prompt_tokens = to_u32(prompt.len());
        let seq = Sequence::new(self.model, job, prompt_tokens, max_tokens, Instant::now())
            .ok_or_else(|| other("its sampler could not be made".to_owned()))?;
        slot.busy = Some(Busy {
            seq,
            feed: prompt[keep..].to_vec(),
            logits: None,
        });
        Ok(())
    }

    /// Decodes one batch: the token each generating slot picked, then
    /// prompt tokens (see [`fill`]); each slot whose feed is all
    /// in picks its next token.
    fn step(&mut self) {
        let Some(ctx) = self.ctx.as_mut() else {
            return;
        };
        let mut batch = match fill(&mut self.slots) {
            Ok(Some(batch)) => batch,
            Ok(None) => return,
            Err(e) => return self.fail_all(&e.to_string()),
        };
        if let Err(e) = ctx.ctx.decode(&mut batch) {
            return self.fail_all(&format!("decoding failed: {e}"));
        }
        for slot in &mut self.slots {
            let Some(busy) = slot.busy.as_mut() else {
                continue;
            };
            let Some(idx) = busy.logits.take() else {
                continue;
            };
            match busy.seq.step(self.model, &ctx.ctx, idx) {
                Step::Next(token) => busy.feed.push(token),
                Step::Done => slot.busy = None,
            }
        }
    }

    /// Fails every generation in flight with `message` and drops the
    /// context, whose state is unknown now.
    fn fail_all(&mut self, message: &str) {
        self.ctx = None;
        for slot in &mut self.slots {
            slot.tokens.clear();
            if let Some(busy) = slot.busy.take() {
                busy.seq.fail(other(message.to_owned()));
            }
        }
    }
}
