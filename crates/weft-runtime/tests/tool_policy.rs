//! The tool policy shapes what the model is offered: a tool denied by name
//! or by tag (or left out by an allow list) never reaches a model request,
//! on the first turn or after tool results, and a call of it the model
//! makes anyway is refused without running.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use weft_core::run::{Policy, RunOutcome};
use weft_core::tool::{ToolAnnotations, ToolError, ToolRequest, ToolSpec};
use weft_models::{ModelPlanner, ModelPlannerConfig, ScriptCall, ScriptTurn, ScriptedModel};
use weft_runtime::{Agent, Runtime, StartRequest};
use weft_tools::{ToolFailure, ToolReply, ToolSet};

/// `t.read` (tag `safe`), `t.write` (tags `safe`, `destructive`),
/// `t.delete` (tag `destructive`) and `t.list` (no tag); records the calls
/// it runs.
#[derive(Default)]
struct Tagged {
    ran: Mutex<Vec<String>>,
}

#[async_trait]
impl ToolSet for Tagged {
    fn name(&self) -> &str {
        "t"
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        let spec = |name: &str, tags: &[&str]| ToolSpec {
            name: name.into(),
            description: format!("The {name} tool"),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        };
        Ok(vec![
            spec("t.read", &["safe"]),
            spec("t.write", &["safe", "destructive"]),
            spec("t.delete", &["destructive"]),
            spec("t.list", &[]),
        ])
    }

    async fn call_tool(&self, request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        let name = request.name.as_str().to_owned();
        self.ran.lock().unwrap().push(name);
        Ok(ToolReply::json(json!("ok")))
    }
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs an agent under `policy` whose model calls `t.delete` and `t.read`
/// in one turn, then answers; returns the tool names (as sent to the
/// provider) of each model request, and the calls that ran.
async fn offered(policy: Policy) -> (Vec<Vec<String>>, Vec<String>) {
    let model = Arc::new(ScriptedModel::new(
        "m",
        vec![
            ScriptTurn {
                tool_calls: vec![
                    ScriptCall {
                        id: Some("c1".into()),
                        name: "t.delete".into(),
                        arguments: json!({}),
                    },
                    ScriptCall {
                        id: Some("c2".into()),
                        name: "t.read".into(),
                        arguments: json!({}),
                    },
                ],
                ..ScriptTurn::default()
            },
            ScriptTurn {
                text: Some("done".into()),
                ..ScriptTurn::default()
            },
            ScriptTurn {
                text: Some("done".into()),
                ..ScriptTurn::default()
            },
        ],
    ));
    let planner = ModelPlanner::new(model.clone(), ModelPlannerConfig::default());
    let tools = Arc::new(Tagged::default());
    let agent = Agent::builder("a", Arc::new(planner))
        .toolset(tools.clone())
        .policy(policy)
        .build();
    let rt = Runtime::builder().agent(agent).build();
    let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
    let outcome = handle.outcome().await.unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    let requests = model
        .requests()
        .iter()
        .map(|r| r.tools.iter().map(|t| t.name.as_str().to_owned()).collect())
        .collect();
    let ran = tools.ran.lock().unwrap().clone();
    (requests, ran)
}

#[tokio::test]
async fn a_tool_denied_by_name_is_never_offered_to_the_model() {
    let (requests, ran) = offered(Policy {
        denied_tools: ["t.delete".into()].into_iter().collect(),
        ..Policy::default()
    })
    .await;
    assert!(requests.len() >= 2, "{requests:?}");
    for tools in &requests {
        assert_eq!(tools, &["t__read", "t__write", "t__list"]);
    }
    assert!(!ran.contains(&"t.delete".to_owned()), "{ran:?}");
}

#[tokio::test]
async fn a_tool_denied_by_tag_is_never_offered_to_the_model() {
    let (requests, ran) = offered(Policy {
        denied_tags: set(&["destructive"]),
        ..Policy::default()
    })
    .await;
    assert!(requests.len() >= 2, "{requests:?}");
    for tools in &requests {
        assert_eq!(tools, &["t__read", "t__list"]);
    }
    assert!(!ran.contains(&"t.delete".to_owned()), "{ran:?}");
}

#[tokio::test]
async fn an_allow_list_narrows_the_offer_and_a_denial_wins_over_it() {
    let (requests, ran) = offered(Policy {
        allowed_tags: Some(set(&["safe"])),
        allowed_tools: Some(
            ["t.read".into(), "t.write".into(), "t.delete".into()]
                .into_iter()
                .collect(),
        ),
        denied_tags: set(&["destructive"]),
        ..Policy::default()
    })
    .await;
    assert!(requests.len() >= 2, "{requests:?}");
    for tools in &requests {
        assert_eq!(tools, &["t__read"]);
    }
    assert!(!ran.contains(&"t.delete".to_owned()), "{ran:?}");
}
