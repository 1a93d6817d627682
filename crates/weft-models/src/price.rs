//! Model prices: what a model's tokens cost in US dollars, and the cost of
//! a call's [`Usage`] at that price.
//!
//! A model's price is the one its agent gives
//! ([`crate::ModelPlannerConfig::price`], an agent file's `[planner.price]`),
//! else the one [`builtin_price`] knows: list prices of a few well-known
//! OpenAI and Anthropic models (see [`table`]), which go stale as providers
//! change them. A model with neither has no price, and its usage no cost:
//! absent, never a made-up zero.
//!
//! Providers count cached prompt tokens differently ([`CacheAccounting`]):
//! OpenAI's input tokens include those read from its cache, Anthropic's
//! (and Bedrock's) count cache reads and cache writes apart from them.

use weft_core::model::Usage;

use crate::config::{Provider, parse_model_id};

pub mod table;

/// A model's price in US dollars per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPrice {
    /// Prompt tokens.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens read from the provider's cache; the input price when
    /// absent.
    pub cached_input: Option<f64>,
    /// Prompt tokens written to the provider's cache; the input price when
    /// absent.
    pub cache_write: Option<f64>,
}

impl ModelPrice {
    /// A price for input and output tokens; cached tokens cost as input.
    pub const fn new(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cached_input: None,
            cache_write: None,
        }
    }

    /// This price with a price for prompt tokens read from the cache.
    pub const fn cached_input(mut self, usd_per_million: f64) -> Self {
        self.cached_input = Some(usd_per_million);
        self
    }

    /// This price with a price for prompt tokens written to the cache.
    pub const fn cache_write(mut self, usd_per_million: f64) -> Self {
        self.cache_write = Some(usd_per_million);
        self
    }

    /// What `usage` costs at this price, in US dollars, with its cached
    /// tokens counted as `cache` says.
    pub fn cost(&self, usage: &Usage, cache: CacheAccounting) -> f64 {
        let read = usage.cache_read_tokens;
        let written = usage.cache_creation_tokens;
        let plain_input = match cache {
            CacheAccounting::InInput => usage
                .input_tokens
                .saturating_sub(read)
                .saturating_sub(written),
            CacheAccounting::Separate => usage.input_tokens,
        };
        let at = |tokens: u64, usd_per_million: f64| tokens as f64 * usd_per_million / 1e6;
        at(plain_input, self.input)
            + at(read, self.cached_input.unwrap_or(self.input))
            + at(written, self.cache_write.unwrap_or(self.input))
            + at(usage.output_tokens, self.output)
    }
}

/// How a provider counts the prompt tokens it read from or wrote to its
/// cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheAccounting {
    /// The input tokens include the cached ones (OpenAI and the servers
    /// speaking its APIs).
    InInput,
    /// The input tokens exclude cache reads and writes (Anthropic, Bedrock).
    Separate,
}

impl CacheAccounting {
    /// How the provider of `model_id` counts cached tokens.
    pub fn of(model_id: &str) -> Self {
        match parse_model_id(model_id) {
            Ok((Provider::Anthropic | Provider::Bedrock, _)) => Self::Separate,
            _ => Self::InInput,
        }
    }
}

/// A model's price with its provider's way of counting cached tokens: what
/// the model planner prices each call's usage with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// The price.
    pub price: ModelPrice,
    /// How the provider counts cached tokens.
    pub cache: CacheAccounting,
}

impl Pricing {
    /// The pricing of `model_id`: `configured` when given, else the
    /// built-in list price; `None` when neither is known.
    pub fn for_model(model_id: &str, configured: Option<ModelPrice>) -> Option<Self> {
        let price = configured.or_else(|| builtin_price(model_id))?;
        Some(Self {
            price,
            cache: CacheAccounting::of(model_id),
        })
    }

    /// What `usage` costs, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        self.price.cost(usage, self.cache)
    }

    /// `usage` with its cost.
    pub fn priced(&self, usage: Usage) -> Usage {
        Usage {
            cost_usd: Some(self.cost(&usage)),
            ..usage
        }
    }
}

/// The built-in list price of `model_id` (`openai/...`,
/// `openai-responses/...`, `anthropic/...`, `gemini/...`, `vertex/...`, `bedrock/...`), with or without a date
/// suffix (`-20250929`, `-2024-08-06`) or `-latest`; `None` for a model
/// the table does not know and for every other provider.
pub fn builtin_price(model_id: &str) -> Option<ModelPrice> {
    let (provider, name) = parse_model_id(model_id).ok()?;
    let prices = match provider {
        Provider::OpenAi | Provider::OpenAiResponses => table::OPENAI,
        Provider::Anthropic => table::ANTHROPIC,
        // Vertex AI's list prices for Google's models are the Gemini API's.
        Provider::Gemini | Provider::Vertex => table::GEMINI,
        Provider::Bedrock => table::BEDROCK,
        Provider::Compat | Provider::Scripted | Provider::Local => return None,
    };
    let name = undated(match provider {
        Provider::Bedrock => bedrock_base(name),
        _ => name,
    });
    prices
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, price)| *price)
}

/// A Bedrock model id without its inference profile's geography prefix
/// (`us.anthropic.claude-...` → `anthropic.claude-...`) and its version
/// suffix (`-v1:0`, `-v2`).
fn bedrock_base(name: &str) -> &str {
    let name = match name.split_once('.') {
        Some((geo, rest))
            if rest.contains('.')
                && geo.len() <= 6
                && geo.bytes().all(|b| b.is_ascii_lowercase()) =>
        {
            rest
        }
        _ => name,
    };
    match name.rfind("-v") {
        Some(at)
            if name[at + 2..]
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b':')
                && name.len() > at + 2 =>
        {
            &name[..at]
        }
        _ => name,
    }
}

/// `name` without a trailing `-latest`, `-YYYYMMDD` or `-YYYY-MM-DD`.
fn undated(name: &str) -> &str {
    if let Some(base) = name.strip_suffix("-latest") {
        return base;
    }
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let b = name.as_bytes();
    let n = b.len();
    // The byte cut at is an ASCII `-`, so the cut is on a char boundary.
    if n > 9 && b[n - 9] == b'-' && digits(&b[n - 8..]) {
        return &name[..n - 9];
    }
    if n > 11
        && b[n - 11] == b'-'
        && b[n - 6] == b'-'
        && b[n - 3] == b'-'
        && digits(&b[n - 10..n - 6])
        && digits(&b[n - 5..n - 3])
        && digits(&b[n - 2..])
    {
        return &name[..n - 11];
    }
    name
}

#[cfg(test)]
mod tests;
