//! `Runtime::toolset_failures`: the toolsets of an agent that could not
//! start, whether their start failed (a lifecycle) or their listing did (a
//! toolset that connects when listed), named with their errors, in the
//! agent's order; none once they are back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::json;
use weft_core::planner::PlanResult;
use weft_core::tool::{ToolError, ToolIdent, ToolRequest, ToolSpec};
use weft_runtime::{Agent, Runtime, RuntimeError, ScriptedPlanner};
use weft_tools::{Lifecycle, ToolFailure, ToolReply, ToolSet};

/// A toolset that fails its start (`lifecycle`) or its listing while `up`
/// is false.
struct Down {
    name: &'static str,
    lifecycle: bool,
    up: Arc<AtomicBool>,
}

impl Down {
    fn check(&self) -> Result<(), ToolError> {
        if self.up.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(ToolError::new(
                ToolError::UNAVAILABLE,
                format!("{} cannot be reached", self.name),
            ))
        }
    }
}

#[async_trait]
impl ToolSet for Down {
    fn name(&self) -> &str {
        self.name
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, ToolError> {
        if !self.lifecycle {
            self.check()?;
        }
        Ok(vec![ToolSpec {
            name: ToolIdent::from_parts(self.name, "ping"),
            description: "Pings".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            tags: vec![],
        }])
    }

    async fn call_tool(&self, _request: ToolRequest) -> Result<ToolReply, ToolFailure> {
        Ok(ToolReply::json(json!("pong")))
    }

    fn lifecycle(&self) -> Option<&dyn Lifecycle> {
        self.lifecycle.then_some(self as &dyn Lifecycle)
    }
}

#[async_trait]
impl Lifecycle for Down {
    async fn start(&self) -> Result<(), ToolError> {
        self.check()
    }

    async fn stop(&self) -> Result<(), ToolError> {
        Ok(())
    }
}

#[tokio::test]
async fn failures_name_each_toolset_that_could_not_start_until_it_is_back() {
    let up = Arc::new(AtomicBool::new(false));
    let toolset = |name, lifecycle| {
        Arc::new(Down {
            name,
            lifecycle,
            up: up.clone(),
        }) as Arc<dyn ToolSet>
    };
    let planner = Arc::new(ScriptedPlanner::new(vec![PlanResult::final_text("done")]));
    let agent = Agent::builder("a", planner)
        .toolset(toolset("server", true))
        .toolset(toolset("gateway", false))
        .build();
    let rt = Runtime::builder().agent(agent).build();

    let failures = rt.toolset_failures("a").await.unwrap();
    let named: Vec<_> = failures.iter().map(|f| f.toolset.as_str()).collect();
    assert_eq!(named, ["server", "gateway"]);
    assert!(failures.iter().all(|f| f.agent.as_str() == "a"));
    assert!(
        failures[0]
            .error
            .message
            .contains("server cannot be reached"),
        "{:?}",
        failures[0].error
    );
    assert!(
        failures[1]
            .error
            .message
            .contains("gateway cannot be reached"),
        "{:?}",
        failures[1].error
    );

    up.store(true, Ordering::SeqCst);
    assert!(rt.toolset_failures("a").await.unwrap().is_empty());

    assert!(matches!(
        rt.toolset_failures("nobody").await,
        Err(RuntimeError::UnknownAgent(_))
    ));
}
