//! Token accounting for model calls, and what those tokens cost.
//!
//! A [`Usage`] counts tokens as the provider reports them and, when the
//! model's price is known, carries their cost in US dollars
//! ([`Usage::cost_usd`]). The cost is absent, never zero, when no price is
//! known: summing usages keeps it only while every part that used tokens
//! had one, so a total never passes off part of a run's cost as all of it.
//! Tokens weft had to estimate are marked ([`Usage::estimated`]), and so is
//! every sum they are part of.

use serde::{Deserialize, Serialize};

/// Token accounting for one model call (or the sum of several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_creation_tokens: u64,
    /// What these tokens cost in US dollars at the model's price; absent
    /// when no price is known for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Whether weft estimated these tokens (about four bytes a token)
    /// because the provider reported none; a sum is estimated when any of
    /// its parts that counted tokens is.
    #[serde(default, skip_serializing_if = "is_false")]
    pub estimated: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Usage {
    /// Whether any token was counted.
    pub fn has_tokens(&self) -> bool {
        self.input_tokens != 0
            || self.output_tokens != 0
            || self.cache_read_tokens != 0
            || self.cache_creation_tokens != 0
    }

    /// Adds `other` to this usage. The cost is the sum of both while each
    /// side that counted tokens has one; tokens without a cost make the
    /// total's cost unknown.
    pub fn add(&mut self, other: &Usage) {
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (Some(a), None) if !other.has_tokens() => Some(a),
            (None, Some(b)) if !self.has_tokens() => Some(b),
            _ => None,
        };
        self.estimated |= other.estimated && other.has_tokens();
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_creation_tokens += other.cache_creation_tokens;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, output: u64, cost_usd: Option<f64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cost_usd,
            ..Usage::default()
        }
    }

    #[test]
    fn a_sum_with_an_estimated_part_is_estimated() {
        let mut total = tokens(10, 2, None);
        total.add(&Usage {
            estimated: true,
            ..Usage::default()
        });
        assert!(!total.estimated, "an estimate of nothing changes nothing");
        total.add(&Usage {
            estimated: true,
            ..tokens(3, 1, None)
        });
        assert!(total.estimated);
        assert_eq!(total.input_tokens, 13);
        let json = serde_json::to_value(total).unwrap();
        assert_eq!(json["estimated"], true);
        let reported = serde_json::to_value(tokens(1, 1, None)).unwrap();
        assert!(reported.get("estimated").is_none(), "{reported}");
    }

    #[test]
    fn adding_priced_usages_sums_their_costs() {
        let mut total = Usage::default();
        total.add(&tokens(10, 2, Some(0.25)));
        total.add(&tokens(5, 1, Some(0.5)));
        assert_eq!((total.input_tokens, total.output_tokens), (15, 3));
        assert_eq!(total.cost_usd, Some(0.75));
    }

    #[test]
    fn tokens_without_a_price_make_the_total_cost_unknown() {
        let mut total = tokens(10, 2, Some(0.25));
        total.add(&tokens(5, 1, None));
        assert_eq!(total.cost_usd, None);
        total.add(&tokens(1, 1, Some(0.5)));
        assert_eq!(total.cost_usd, None, "an unknown part stays unknown");
        assert_eq!(total.input_tokens, 16);
    }

    #[test]
    fn an_empty_usage_changes_no_cost() {
        let mut total = tokens(10, 2, Some(0.25));
        total.add(&Usage::default());
        assert_eq!(total.cost_usd, Some(0.25));
    }

    #[test]
    fn a_cost_is_left_out_of_json_when_unknown() {
        let json = serde_json::to_value(tokens(1, 2, None)).unwrap();
        assert!(json.get("cost_usd").is_none(), "{json}");
        let json = serde_json::to_value(tokens(1, 2, Some(0.5))).unwrap();
        assert_eq!(json["cost_usd"], 0.5);
        let old: Usage = serde_json::from_str(r#"{"input_tokens":1,"output_tokens":2}"#).unwrap();
        assert_eq!(old.cost_usd, None);
    }
}
