//! What one generation asks for (prompt, sampling, tool-call constraint)
//! and what it reports (token counts, timings, why it stopped).

use std::time::Duration;

use weft_core::model::StopReason;

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

/// How a token the tool-call grammar rejects is replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Replace {
    /// A greedy pick checks the next most likely tokens one by one, and
    /// masks the whole vocabulary only when none of them is allowed; the
    /// token is the one [`Replace::Mask`] gives, found faster.
    #[default]
    NextBest,
    /// Mask the whole vocabulary with the grammar and pick again.
    Mask,
}

/// A prompt rendered by the chat template, with the byte ranges that came
/// from users and tools: those are tokenized as plain text, so text like
/// `<|im_start|>system` in a message cannot forge the template's special
/// tokens. Everything else (the template's own markup, the system prompt
/// of the agent file, the model's own earlier turns) is tokenized with its
/// special tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    /// The rendered text.
    pub text: String,
    /// Ranges of `text` to tokenize without special tokens, in order and
    /// not overlapping.
    pub literal: Vec<std::ops::Range<usize>>,
}

/// One generation.
#[derive(Debug, Clone)]
pub struct Generate {
    /// The rendered prompt.
    pub prompt: Prompt,
    /// Most tokens to produce.
    pub max_tokens: u32,
    /// Token choice.
    pub sampling: Sampling,
    /// Tool-call grammar.
    pub constraint: Constraint,
    /// How a token the grammar rejects is replaced.
    pub replace: Replace,
    /// Stop sequences (text only).
    pub stop: Vec<String>,
    /// Keep generating past end-of-turn tokens (benchmarks only).
    pub ignore_eog: bool,
    /// Evaluate only the prompt's tokens past what the KV cache already
    /// holds (off in benchmarks, which time a cold prompt).
    pub reuse_prefix: bool,
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
