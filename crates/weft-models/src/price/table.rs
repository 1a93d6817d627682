//! The built-in prices: public list prices (standard tier, US dollars per
//! million tokens) of a few well-known models, as their providers published
//! them in 2025. They are a convenience, not a bill: providers change
//! prices, discount batches and contracts, and add models, so this table
//! goes stale. An agent's own price (`[planner.price]` in an agent file)
//! always wins over it; a model missing here has no cost unless its agent
//! gives a price.
//!
//! Names are model names without the provider prefix and without a date
//! suffix (`claude-sonnet-4-5` also prices `claude-sonnet-4-5-20250929`).

use super::ModelPrice;

/// OpenAI models (`openai/...`, `openai-responses/...`): input, output, and
/// cached input (OpenAI does not charge cache writes).
pub const OPENAI: &[(&str, ModelPrice)] = &[
    ("gpt-5", ModelPrice::new(1.25, 10.0).cached_input(0.125)),
    ("gpt-5-mini", ModelPrice::new(0.25, 2.0).cached_input(0.025)),
    (
        "gpt-5-nano",
        ModelPrice::new(0.05, 0.40).cached_input(0.005),
    ),
    ("gpt-4.1", ModelPrice::new(2.0, 8.0).cached_input(0.50)),
    (
        "gpt-4.1-mini",
        ModelPrice::new(0.40, 1.60).cached_input(0.10),
    ),
    (
        "gpt-4.1-nano",
        ModelPrice::new(0.10, 0.40).cached_input(0.025),
    ),
    ("gpt-4o", ModelPrice::new(2.50, 10.0).cached_input(1.25)),
    (
        "gpt-4o-mini",
        ModelPrice::new(0.15, 0.60).cached_input(0.075),
    ),
    ("o3", ModelPrice::new(2.0, 8.0).cached_input(0.50)),
    ("o4-mini", ModelPrice::new(1.10, 4.40).cached_input(0.275)),
];

/// Anthropic models (`anthropic/...`): input, output, cache reads and
/// cache writes (the five-minute cache).
pub const ANTHROPIC: &[(&str, ModelPrice)] = &[
    ("claude-opus-4-5", anthropic(5.0, 25.0)),
    ("claude-opus-4-1", anthropic(15.0, 75.0)),
    ("claude-opus-4-0", anthropic(15.0, 75.0)),
    ("claude-opus-4", anthropic(15.0, 75.0)),
    ("claude-sonnet-4-5", anthropic(3.0, 15.0)),
    ("claude-sonnet-4-0", anthropic(3.0, 15.0)),
    ("claude-sonnet-4", anthropic(3.0, 15.0)),
    ("claude-3-7-sonnet", anthropic(3.0, 15.0)),
    ("claude-haiku-4-5", anthropic(1.0, 5.0)),
    ("claude-3-5-haiku", anthropic(0.80, 4.0)),
];

/// Gemini models (`gemini/...`): input, output (thinking tokens are billed
/// as output) and cached input, from Google's "Gemini Developer API
/// pricing" page (ai.google.dev/gemini-api/docs/pricing, standard paid
/// tier, text input). Gemini 2.5 Pro's prices are those of prompts up to
/// 200k tokens (longer prompts cost twice the input and 1.5 times the
/// output); cached input is 10% of the input price on the 2.5 models and
/// 25% on 2.0 Flash.
pub const GEMINI: &[(&str, ModelPrice)] = &[
    (
        "gemini-2.5-pro",
        ModelPrice::new(1.25, 10.0).cached_input(0.125),
    ),
    (
        "gemini-2.5-flash",
        ModelPrice::new(0.30, 2.50).cached_input(0.03),
    ),
    (
        "gemini-2.5-flash-lite",
        ModelPrice::new(0.10, 0.40).cached_input(0.01),
    ),
    (
        "gemini-2.0-flash",
        ModelPrice::new(0.10, 0.40).cached_input(0.025),
    ),
    ("gemini-2.0-flash-lite", ModelPrice::new(0.075, 0.30)),
];

/// Bedrock models (`bedrock/...`), by model id without the inference
/// profile's geography (`us.`, `eu.`, ...), the version (`-v1:0`) and the
/// date: on-demand prices in US East (N. Virginia) from the "Amazon Bedrock
/// pricing" page (aws.amazon.com/bedrock/pricing). Claude costs what it
/// costs from Anthropic, cache reads and writes included; Nova and Llama
/// cached input is priced as input.
pub const BEDROCK: &[(&str, ModelPrice)] = &[
    ("anthropic.claude-sonnet-4-5", anthropic(3.0, 15.0)),
    ("anthropic.claude-sonnet-4", anthropic(3.0, 15.0)),
    ("anthropic.claude-3-7-sonnet", anthropic(3.0, 15.0)),
    ("anthropic.claude-haiku-4-5", anthropic(1.0, 5.0)),
    ("anthropic.claude-3-5-haiku", anthropic(0.80, 4.0)),
    ("anthropic.claude-opus-4-1", anthropic(15.0, 75.0)),
    ("amazon.nova-micro", ModelPrice::new(0.035, 0.14)),
    ("amazon.nova-lite", ModelPrice::new(0.06, 0.24)),
    ("amazon.nova-pro", ModelPrice::new(0.80, 3.20)),
    ("meta.llama3-3-70b-instruct", ModelPrice::new(0.72, 0.72)),
    ("meta.llama3-1-70b-instruct", ModelPrice::new(0.72, 0.72)),
    ("meta.llama3-1-8b-instruct", ModelPrice::new(0.22, 0.22)),
];

/// Anthropic's cache prices follow from the input price: reads cost a
/// tenth of it, five-minute writes a quarter more.
const fn anthropic(input: f64, output: f64) -> ModelPrice {
    ModelPrice::new(input, output)
        .cached_input(input / 10.0)
        .cache_write(input * 1.25)
}
