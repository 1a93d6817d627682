//! The token picker: llama.cpp's sampler chain (logit bias, greedy or
//! top-k/top-p/temperature/seeded draw) and the tool-call grammar that
//! checks each drawn token.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use weft_core::model::ModelError;

use super::backend::other;
use super::generation::{Constraint, Generate, Replace};
use super::grammar::CALL_OPEN;

pub(super) fn picker(model: &LlamaModel, req: &Generate) -> Result<Picker, ModelError> {
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
        next_best: s.temperature <= 0.0 && req.replace == Replace::NextBest,
    })
}

/// How many of the next most likely tokens a greedy pick checks, one by
/// one, after the grammar rejected its first choice, before it masks the
/// whole vocabulary.
const NEXT_BEST: usize = 64;

/// Picks each token: the sampler chain draws, the grammar (if any) checks.
///
/// A token the grammar rejects is replaced by the grammar's choice. With a
/// greedy chain that is the most likely token the grammar allows, found by
/// checking the next most likely tokens one at a time ([`NEXT_BEST`]): the
/// same token a mask of the whole vocabulary would give (which costs
/// milliseconds per token on a small model), at a fraction of the cost.
/// A drawing chain, or a greedy pick none of whose next best is allowed,
/// masks the whole vocabulary and draws again.
pub(super) struct Picker {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
    /// Whether a rejected token is replaced by [`next_best`].
    next_best: bool,
}

impl Picker {
    pub(super) fn pick(
        &mut self,
        ctx: &LlamaContext<'_>,
        idx: i32,
    ) -> Result<LlamaToken, ModelError> {
        let none = || other("the sampler chose no token".to_owned());
        let mut cur = ctx.token_data_array_ith(idx);
        cur.apply_sampler(&mut self.chain);
        let mut token = cur.selected_token().ok_or_else(none)?;
        if let Some(grammar) = &mut self.grammar {
            if !allows(grammar, token) {
                let next = if self.next_best {
                    next_best(grammar, &cur, token)
                } else {
                    None
                };
                token = match next {
                    Some(next) => next,
                    None => {
                        let mut cur = ctx.token_data_array_ith(idx);
                        cur.apply_sampler(grammar);
                        cur.apply_sampler(&mut self.chain);
                        cur.selected_token().ok_or_else(none)?
                    }
                };
            }
            grammar.accept(token);
        }
        self.chain.accept(token);
        Ok(token)
    }
}

/// Whether the grammar allows `token` next.
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    one.apply_sampler(grammar);
    one.data
        .first()
        .is_some_and(|t| t.logit() != f32::NEG_INFINITY)
}

/// The most likely token of `cur` the grammar allows, among the
/// [`NEXT_BEST`] most likely after `rejected`; ties go to the lower id, as
/// llama.cpp's greedy sampler breaks them.
fn next_best(
    grammar: &mut LlamaSampler,
    cur: &LlamaTokenDataArray,
    rejected: LlamaToken,
) -> Option<LlamaToken> {
    let mut candidates: Vec<(f32, i32)> = cur
        .data
        .iter()
        .filter(|t| t.id() != rejected && t.logit() != f32::NEG_INFINITY)
        .map(|t| (t.logit(), t.id().0))
        .collect();
    let order = |a: &(f32, i32), b: &(f32, i32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let n = NEXT_BEST.min(candidates.len());
    if n < candidates.len() {
        candidates.select_nth_unstable_by(n, order);
        candidates.truncate(n);
    }
    candidates.sort_unstable_by(order);
    candidates
        .into_iter()
        .map(|(_, id)| LlamaToken::new(id))
        .find(|&t| allows(grammar, t))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trigger_pattern_escapes_the_tag() {
        assert_eq!(regex_escape("<tool_call>"), "<tool_call>");
        assert_eq!(regex_escape("a.b(c)"), r"a\.b\(c\)");
    }
}
