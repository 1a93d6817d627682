//! One generation in progress on the model's thread ([`super::worker`]):
//! its sampler, the text it has produced and released, its counts, and why
//! it stopped. The worker decodes the tokens of many sequences in one batch;
//! each sequence then picks its next token from the logits at its own place
//! in that batch.

use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use weft_core::model::{ModelError, StopReason};

use super::generation::{Constraint, Generated};
use super::job::{Job, Msg};
use super::output::{Piece, SplitError, Splitter};
use super::picker::{Picker, picker};
use super::utf8::Utf8Stream;

/// What a sequence does after picking.
pub(super) enum Step {
    /// Decode this token next.
    Next(LlamaToken),
    /// The generation ended: its result, already sent to the caller.
    Done,
}

/// One generation being decoded.
pub(super) struct Sequence {
    job: Job,
    picker: Picker,
    splitter: Splitter,
    text: Utf8Stream,
    released: Vec<Piece>,
    start: Instant,
    first_token: Option<Duration>,
    prompt_tokens: u32,
    max_tokens: u32,
    produced: u32,
    any_call: bool,
}

impl Sequence {
    /// A sequence for `job`, whose prompt has `prompt_tokens` tokens and
    /// which may produce `max_tokens`; started (for its timings) at `start`.
    /// `None` when its sampler cannot be made: the job has failed then.
    pub(super) fn new(
        model: &LlamaModel,
        job: Job,
        prompt_tokens: u32,
        max_tokens: u32,
        start: Instant,
    ) -> Option<Self> {
        let picker = match picker(model, &job.req) {
            Ok(p) => p,
            Err(e) => {
                let _ = job.out.send(Msg::Done(Err(e)));
                return None;
            }
        };
        let calls = !matches!(job.req.constraint, Constraint::None);
        Some(Self {
            splitter: Splitter::new(&job.req.stop, calls),
            job,
            picker,
            text: Utf8Stream::default(),
            released: Vec::new(),
            start,
            first_token: None,
            prompt_tokens,
            max_tokens,
            produced: 0,
            any_call: false,
        })
    }

    /// Hands `piece` to the caller; false when the caller went away.
    fn send(&self, piece: Piece) -> bool {
        !self.job.cancel.load(std::sync::atomic::Ordering::Relaxed)
            && self.job.out.send(Msg::Piece(piece)).is_ok()
    }

    /// Ends the generation with `error`, sent to the caller.
    pub(super) fn fail(self, error: ModelError) {
        let _ = self.job.out.send(Msg::Done(Err(error)));
    }

    /// Picks the next token from the logits at `idx` of the batch just
    /// decoded, and releases what it completes.
    pub(super) fn step(&mut self, model: &LlamaModel, ctx: &LlamaContext<'_>, idx: i32) -> Step {
        match self.pick(model, ctx, idx) {
            Ok(Some(token)) => Step::Next(token),
            Ok(None) => Step::Done,
            Err(e) => {
                let _ = self.job.out.send(Msg::Done(Err(e)));
                Step::Done
            }
        }
    }

    fn pick(
        &mut self,
        model: &LlamaModel,
        ctx: &LlamaContext<'_>,
        idx: i32,
    ) -> Result<Option<LlamaToken>, ModelError> {
        if self.produced >= self.max_tokens {
            self.finish(StopReason::MaxTokens)?;
            return Ok(None);
        }
        let token = self.picker.pick(ctx, idx)?;
        self.produced += 1;
        let start = self.start;
        self.first_token.get_or_insert_with(|| start.elapsed());
        let vocab = model.vocab();
        if !self.job.req.ignore_eog && vocab.is_eog(token) {
            self.finish(StopReason::EndTurn)?;
            return Ok(None);
        }
        let bytes = vocab.token_to_piece(token, false, None);
        let piece = self.text.push(&bytes);
        self.splitter
            .push(&piece, &mut self.released)
            .map_err(|e| malformed(&e))?;
        let released = std::mem::take(&mut self.released);
        for p in released {
            self.any_call |= matches!(p, Piece::Call { .. });
            if !self.send(p) {
                // The caller went away: what it has is all it gets.
                self.done(StopReason::EndTurn);
                return Ok(None);
            }
        }
        if self.splitter.stopped() {
            self.finish(StopReason::StopSequence)?;
            return Ok(None);
        }
        Ok(Some(token))
    }

    /// Releases the text still held back and ends the generation.
    fn finish(&mut self, stop: StopReason) -> Result<(), ModelError> {
        let tail = self.text.finish();
        let splitter = &mut self.splitter;
        let released = &mut self.released;
        let mut end = splitter.push(&tail, released).and_then(|()| {
            if splitter.stopped() {
                Ok(())
            } else {
                splitter.finish(released)
            }
        });
        if stop == StopReason::MaxTokens
            && let Err(SplitError::Unfinished { text }) = &end
        {
            // The budget ran out inside a call: the call is dropped, never
            // released half-written.
            tracing::debug!(partial = %text, "local model: max tokens inside a tool call");
            end = Ok(());
        }
        end.map_err(|e| malformed(&e))?;
        for p in std::mem::take(&mut self.released) {
            self.any_call |= matches!(p, Piece::Call { .. });
            if !self.send(p) {
                break;
            }
        }
        let stop = match stop {
            StopReason::EndTurn if self.any_call => StopReason::ToolUse,
            s => s,
        };
        self.done(stop);
        Ok(())
    }

    /// Sends the generation's result.
    fn done(&self, stop: StopReason) {
        let total = self.start.elapsed();
        let first_token = self.first_token.unwrap_or(total);
        let generated = Generated {
            prompt_tokens: self.prompt_tokens,
            output_tokens: self.produced,
            first_token,
            decode: total.saturating_sub(first_token),
            stop,
        };
        let _ = self.job.out.send(Msg::Done(Ok(generated)));
    }
}

fn malformed(e: &SplitError) -> ModelError {
    ModelError::Malformed {
        line: String::new(),
        message: e.to_string(),
    }
}
