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
use super::generation::{Constraint, Generate};
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
    })
}

/// Picks each token: the sampler chain draws, the grammar (if any) checks.
pub(super) struct Picker {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
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
