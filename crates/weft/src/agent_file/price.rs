//! The agent file's `[planner.price]` table: what the model's tokens cost,
//! in US dollars per million tokens. It overrides weft's built-in list
//! prices (`weft_models::price`) and prices models they do not know.
//!
//! ```toml
//! [planner.price]
//! input = 3.0          # prompt tokens
//! output = 15.0        # generated tokens
//! cached_input = 0.30  # optional: prompt tokens read from the cache
//! cache_write = 3.75   # optional: prompt tokens written to the cache
//! ```

use serde::Deserialize;
use weft_models::ModelPrice;

/// The `[planner.price]` table as written: its values are checked by
/// [`PriceSpec::price`], so a wrong one is a [`PriceError`] naming it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceSpec {
    /// USD per million prompt tokens.
    #[serde(default)]
    input: Option<toml::Value>,
    /// USD per million generated tokens.
    #[serde(default)]
    output: Option<toml::Value>,
    /// USD per million prompt tokens read from the provider's cache
    /// (default: the input price).
    #[serde(default)]
    cached_input: Option<toml::Value>,
    /// USD per million prompt tokens written to the provider's cache
    /// (default: the input price).
    #[serde(default)]
    cache_write: Option<toml::Value>,
}

/// Why a `[planner.price]` table cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PriceError {
    /// A required price is not given.
    #[error("`{field}` is missing: give it in USD per million tokens")]
    Missing {
        /// The price's key.
        field: &'static str,
    },
    /// A price is not a finite number.
    #[error("`{field}` must be a number of USD per million tokens, not {found}")]
    NotANumber {
        /// The price's key.
        field: &'static str,
        /// What the file gives, as TOML.
        found: String,
    },
    /// A price is below zero.
    #[error("`{field}` must not be negative, not {value}")]
    Negative {
        /// The price's key.
        field: &'static str,
        /// The value the file gives.
        value: f64,
    },
}

impl PriceSpec {
    /// The price the table describes; `input` and `output` are required.
    pub fn price(&self) -> Result<ModelPrice, PriceError> {
        let required = |field, value: &Option<toml::Value>| {
            usd(field, value)?.ok_or(PriceError::Missing { field })
        };
        Ok(ModelPrice {
            input: required("input", &self.input)?,
            output: required("output", &self.output)?,
            cached_input: usd("cached_input", &self.cached_input)?,
            cache_write: usd("cache_write", &self.cache_write)?,
        })
    }
}

/// One price: a finite, non-negative integer or float, if given.
fn usd(field: &'static str, value: &Option<toml::Value>) -> Result<Option<f64>, PriceError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let number = match value {
        toml::Value::Float(f) if f.is_finite() => *f,
        toml::Value::Integer(i) => *i as f64,
        other => {
            return Err(PriceError::NotANumber {
                field,
                found: other.to_string(),
            });
        }
    };
    if number < 0.0 {
        return Err(PriceError::Negative {
            field,
            value: number,
        });
    }
    Ok(Some(number))
}
