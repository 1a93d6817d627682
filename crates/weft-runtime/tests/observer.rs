//! The runtime's observer sees every tool call and commit of a run, timed
//! when it wants durations; one that does not gets zero durations (the
//! runtime reads no clock for them) and the same observations otherwise.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use weft_core::run::RunOutcome;
use weft_core::tool::ToolError;
use weft_models::{ModelPlanner, ModelPlannerConfig, ScriptedModel};
use weft_runtime::{Agent, Observation, Observer, Runtime, StartRequest};
use weft_tools::FnToolSet;

/// How long `slow.wait` takes.
const TOOL_TIME: Duration = Duration::from_millis(20);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Records the durations of tool calls and commits.
struct Recorder {
    durations: bool,
    tool_calls: Mutex<Vec<Duration>>,
    commits: Mutex<Vec<Duration>>,
}

impl Observer for Recorder {
    fn observe(&self, observation: &Observation<'_>) {
        match observation {
            Observation::ToolCall { elapsed, .. } => self.tool_calls.lock().unwrap().push(*elapsed),
            Observation::Commit { elapsed, .. } => self.commits.lock().unwrap().push(*elapsed),
            _ => {}
        }
    }

    fn wants_durations(&self) -> bool {
        self.durations
    }
}

/// Runs an agent whose model calls `slow.wait` once, then answers.
async fn observed(durations: bool) -> Arc<Recorder> {
    let script = r#"[
        {"tool_calls": [{"id": "c1", "name": "slow.wait", "arguments": {}}]},
        {"text": "done"}
    ]"#;
    let model = Arc::new(ScriptedModel::from_json("m", script).unwrap());
    let planner = ModelPlanner::new(model, ModelPlannerConfig::default());
    let slow = FnToolSet::new("slow").tool("wait", "Waits", |_: NoArgs| async move {
        tokio::time::sleep(TOOL_TIME).await;
        Ok::<_, ToolError>("ok")
    });
    let agent = Agent::builder("a", Arc::new(planner))
        .toolset(Arc::new(slow))
        .build();
    let recorder = Arc::new(Recorder {
        durations,
        tool_calls: Mutex::default(),
        commits: Mutex::default(),
    });
    let rt = Runtime::builder()
        .agent(agent)
        .observer(recorder.clone())
        .build();
    let handle = rt.start("a", StartRequest::user("go")).await.unwrap();
    let outcome = handle.outcome().await.unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    recorder
}

#[tokio::test]
async fn an_observer_that_wants_durations_gets_them() {
    let r = observed(true).await;
    let calls = r.tool_calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert!(calls[0] >= TOOL_TIME, "{calls:?}");
    assert!(!r.commits.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_observer_that_does_not_gets_the_same_observations_untimed() {
    let r = observed(false).await;
    assert_eq!(*r.tool_calls.lock().unwrap(), [Duration::ZERO]);
    let commits = r.commits.lock().unwrap().clone();
    assert!(!commits.is_empty());
    assert!(commits.iter().all(|d| d.is_zero()), "{commits:?}");
}
