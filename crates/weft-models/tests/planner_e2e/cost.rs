//! What a run's model calls cost: each `usage` event and each call's whole
//! answer carry their cost at the model's price (configured, or a known
//! model's list price), and none at all for a model without a price.

use crate::harness::{answer, answer_over_http, planner};
use std::sync::Arc;
use weft_core::model::Usage;
use weft_models::{ModelPlanner, ModelPlannerConfig, ModelPrice, Pricing, ScriptedModel};

const SCRIPT: &str = r#"
- tool_calls:
    - { id: c1, name: calc.add, arguments: { a: 2, b: 3 } }
  usage: { input_tokens: 30, output_tokens: 8 }
- text: "5."
  usage: { input_tokens: 90, output_tokens: 13 }
"#;

fn total(usages: &[Usage]) -> Usage {
    let mut total = Usage::default();
    for u in usages {
        total.add(u);
    }
    total
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[tokio::test]
async fn usage_events_carry_their_cost_at_the_configured_price() {
    let model = Arc::new(ScriptedModel::from_yaml("priced", SCRIPT).unwrap());
    let planner = ModelPlanner::new(
        model,
        ModelPlannerConfig {
            price: Some(ModelPrice::new(100.0, 1000.0)),
            ..ModelPlannerConfig::default()
        },
    );
    let run = answer(&planner, &["calc.add"], "2+3?").await;
    assert_eq!(run.usages.len(), 2);
    assert!(run.usages.iter().all(|u| u.cost_usd.is_some()));
    let sum = total(&run.usages);
    assert_eq!((sum.input_tokens, sum.output_tokens), (120, 21));
    // 120 input tokens at $100 and 21 output tokens at $1000 per million.
    let cost = sum.cost_usd.unwrap();
    assert!(close(cost, 0.033), "{cost}");
    // The answers recorded for replay carry the same costs.
    let answered = total(&run.answered).cost_usd.unwrap();
    assert!(close(answered, cost), "{answered}");
}

#[tokio::test]
async fn a_model_without_a_price_reports_usage_without_a_cost() {
    let model = Arc::new(ScriptedModel::from_yaml("unpriced", SCRIPT).unwrap());
    let planner = planner(model);
    assert!(planner.pricing().is_none());
    let run = answer(&planner, &["calc.add"], "2+3?").await;
    assert_eq!(run.usages.len(), 2);
    assert!(run.usages.iter().all(|u| u.cost_usd.is_none()));
    assert!(run.answered.iter().all(|u| u.cost_usd.is_none()));
    assert_eq!(total(&run.usages).cost_usd, None);
}

#[tokio::test]
async fn a_known_model_is_costed_at_its_list_price() {
    let id = "anthropic/claude-sonnet-4";
    let (run, _server) = answer_over_http(
        id,
        &[
            "anthropic/a4_thinking_tool_use_captured.sse",
            "anthropic/a1_text_basic.sse",
        ],
        &["weather", "calc.add"],
        "Weather in Florence?",
    )
    .await;
    let sum = total(&run.usages);
    let list = Pricing::for_model(id, None).unwrap();
    let cost = sum.cost_usd.unwrap();
    assert!(cost > 0.0);
    assert!(close(cost, list.cost(&sum)), "{cost}");
}
