//! Price lookup and cost arithmetic.

use weft_core::model::Usage;

use super::*;

fn usage(input: u64, output: u64, read: u64, written: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_creation_tokens: written,
        cost_usd: None,
        estimated: false,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn known_models_have_list_prices_with_or_without_a_date() {
    let sonnet = builtin_price("anthropic/claude-sonnet-4-5").unwrap();
    assert_eq!((sonnet.input, sonnet.output), (3.0, 15.0));
    assert_eq!(
        builtin_price("anthropic/claude-sonnet-4-5-20250929"),
        Some(sonnet)
    );
    assert_eq!(
        builtin_price("anthropic/claude-3-5-haiku-latest"),
        builtin_price("anthropic/claude-3-5-haiku")
    );
    let mini = builtin_price("openai/gpt-4o-mini").unwrap();
    assert_eq!((mini.input, mini.output), (0.15, 0.60));
    assert_eq!(builtin_price("openai/gpt-4o-mini-2024-07-18"), Some(mini));
    assert_eq!(builtin_price("openai-responses/gpt-4o-mini"), Some(mini));
    // A longer name is another model, not its prefix's.
    assert_ne!(builtin_price("openai/gpt-4o"), Some(mini));
}

#[test]
fn gemini_models_have_list_prices_and_count_cached_tokens_in_the_input() {
    let flash = builtin_price("gemini/gemini-2.5-flash").unwrap();
    assert_eq!((flash.input, flash.output), (0.30, 2.50));
    assert_ne!(builtin_price("gemini/gemini-2.5-flash-lite"), Some(flash));
    assert!(builtin_price("gemini/gemini-2.5-pro").is_some());
    assert!(builtin_price("gemini/gemini-2.0-flash").is_some());
    assert_eq!(builtin_price("gemini/gemini-fake"), None);
    // Vertex AI's list prices are the Gemini API's.
    assert_eq!(builtin_price("vertex/gemini-2.5-flash"), Some(flash));
    assert_eq!(
        CacheAccounting::of("vertex/gemini-2.5-flash"),
        CacheAccounting::InInput
    );
    let pricing = Pricing::for_model("gemini/gemini-2.5-flash", None).unwrap();
    assert_eq!(pricing.cache, CacheAccounting::InInput);
    // 1M prompt tokens of which 400k cached, 100k output.
    let cost = pricing.cost(&usage(1_000_000, 100_000, 400_000, 0));
    assert!(close(cost, 0.6 * 0.30 + 0.4 * 0.03 + 0.1 * 2.50), "{cost}");
}

#[test]
fn bedrock_models_are_priced_by_id_without_profile_geography_version_or_date() {
    let sonnet = builtin_price("bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0").unwrap();
    assert_eq!((sonnet.input, sonnet.output), (3.0, 15.0));
    assert_eq!(
        builtin_price("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        Some(sonnet)
    );
    let nova = builtin_price("bedrock/amazon.nova-lite-v1:0").unwrap();
    assert_eq!((nova.input, nova.output), (0.06, 0.24));
    assert!(builtin_price("bedrock/meta.llama3-3-70b-instruct-v1:0").is_some());
    assert_eq!(builtin_price("bedrock/anthropic.claude-fake-v1:0"), None);
    let pricing =
        Pricing::for_model("bedrock/eu.anthropic.claude-3-7-sonnet-20250219-v1:0", None).unwrap();
    assert_eq!(pricing.cache, CacheAccounting::Separate);
}

#[test]
fn an_unknown_model_without_a_price_has_no_cost() {
    for id in [
        "openai/gpt-unknown",
        "anthropic/claude-next",
        "compat/gpt-4o",
        "local/smollm2-135m",
        "scripted/script.yaml",
        "no-provider",
        "openai/é-20250101",
    ] {
        assert_eq!(builtin_price(id), None, "{id}");
        assert_eq!(Pricing::for_model(id, None), None, "{id}");
    }
}

#[test]
fn a_configured_price_wins_over_the_builtin_table() {
    let mine = ModelPrice::new(1.0, 2.0);
    let pricing = Pricing::for_model("openai/gpt-4o", Some(mine)).unwrap();
    assert_eq!(pricing.price, mine);
    // And prices a model the table does not know.
    let pricing = Pricing::for_model("compat/llama3.2", Some(mine)).unwrap();
    assert_eq!(pricing.cache, CacheAccounting::InInput);
    assert!(close(pricing.cost(&usage(1_000_000, 500_000, 0, 0)), 2.0));
}

#[test]
fn cost_charges_input_and_output_per_million_tokens() {
    let price = ModelPrice::new(100.0, 1000.0);
    let cost = price.cost(&usage(120, 21, 0, 0), CacheAccounting::InInput);
    assert!(close(cost, 0.033), "{cost}");
    assert_eq!(
        price.cost(&Usage::default(), CacheAccounting::Separate),
        0.0
    );
}

#[test]
fn anthropic_cache_reads_and_writes_are_apart_from_the_input() {
    let pricing = Pricing::for_model("anthropic/claude-sonnet-4-5", None).unwrap();
    assert_eq!(pricing.cache, CacheAccounting::Separate);
    // 1M plain input at $3, 2M cache reads at $0.30, 1M cache writes at
    // $3.75, 1M output at $15.
    let cost = pricing.cost(&usage(1_000_000, 1_000_000, 2_000_000, 1_000_000));
    assert!(close(cost, 3.0 + 0.6 + 3.75 + 15.0), "{cost}");
}

#[test]
fn openai_cached_tokens_are_part_of_the_input() {
    let pricing = Pricing::for_model("openai/gpt-4o", None).unwrap();
    assert_eq!(pricing.cache, CacheAccounting::InInput);
    // 2M input of which 1M cached: 1M at $2.50 and 1M at $1.25.
    let cost = pricing.cost(&usage(2_000_000, 0, 1_000_000, 0));
    assert!(close(cost, 2.5 + 1.25), "{cost}");
    // A report with more cached than input tokens charges no negative input.
    let cost = pricing.cost(&usage(0, 0, 1_000_000, 0));
    assert!(close(cost, 1.25), "{cost}");
}

#[test]
fn cached_tokens_without_a_cache_price_cost_the_input_price() {
    let price = ModelPrice::new(2.0, 0.0);
    let cost = price.cost(
        &usage(1_000_000, 0, 3_000_000, 1_000_000),
        CacheAccounting::Separate,
    );
    assert!(close(cost, 10.0), "{cost}");
}

#[test]
fn a_priced_usage_carries_its_cost() {
    let pricing =
        Pricing::for_model("scripted/s.yaml", Some(ModelPrice::new(100.0, 1000.0))).unwrap();
    let priced = pricing.priced(usage(40, 9, 0, 0));
    assert_eq!(priced.input_tokens, 40);
    assert!(close(priced.cost_usd.unwrap(), 0.013));
}
