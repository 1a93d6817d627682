//! What one step of the model's thread ([`super::worker`]) decodes: the
//! slots of the context, the tokens each busy one has to evaluate (what is
//! left of its prompt, or the token it just picked), and the batch made of
//! them, prompt tokens limited to [`PREFILL_CHUNK`] per step.

use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;
use weft_core::model::ModelError;

use super::backend::other;
use super::sequence::Sequence;

/// Most prompt tokens evaluated in one step, over all slots.
const PREFILL_CHUNK: usize = 512;

/// One sequence of the context.
#[derive(Default)]
pub(super) struct Slot {
    /// The tokens its part of the KV cache holds, in order.
    pub(super) tokens: Vec<LlamaToken>,
    /// The generation in it.
    pub(super) busy: Option<Busy>,
}

/// A generation in a slot.
pub(super) struct Busy {
    pub(super) seq: Sequence,
    /// Tokens to evaluate: what is left of the prompt, or the token just
    /// picked.
    pub(super) feed: Vec<LlamaToken>,
    /// Where its logits are in the batch being decoded.
    pub(super) logits: Option<i32>,
}

/// The batch of one step, or `None` when no slot has tokens to evaluate.
/// Tokens put in the batch move from each slot's feed to its cache tokens.
pub(super) fn fill(slots: &mut [Slot]) -> Result<Option<LlamaBatch<'static>>, ModelError> {
    let mut prefill = PREFILL_CHUNK;
    let mut plan = Vec::with_capacity(slots.len());
    for slot in slots.iter() {
        let take = match &slot.busy {
            Some(b) if b.feed.len() == 1 => 1,
            Some(b) => {
                let take = b.feed.len().min(prefill);
                prefill -= take;
                take
            }
            None => 0,
        };
        plan.push(take);
    }
    let total: usize = plan.iter().sum();
    if total == 0 {
        return Ok(None);
    }
    let mut batch = LlamaBatch::new(total, 1);
    for (at, (slot, take)) in slots.iter_mut().zip(plan).enumerate() {
        let Some(busy) = slot.busy.as_mut() else {
            continue;
        };
        if take == 0 {
            continue;
        }
        let whole = take == busy.feed.len();
        for (i, token) in busy.feed.drain(..take).enumerate() {
            let last = whole && i + 1 == take;
            batch
                .add(token, pos(slot.tokens.len()), &[seq_id(at)], last)
                .map_err(|e| other(format!("batch: {e}")))?;
            slot.tokens.push(token);
        }
        if whole {
            busy.logits = Some(batch.n_tokens() - 1);
        }
    }
    Ok(Some(batch))
}

pub(super) fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn seq_id(slot: usize) -> i32 {
    i32::try_from(slot).unwrap_or(i32::MAX)
}

pub(super) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn pos(i: usize) -> i32 {
    i32::try_from(i).unwrap_or(i32::MAX)
}
