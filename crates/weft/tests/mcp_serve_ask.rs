//! `weft mcp serve`: a run that asks a question puts it to the MCP client
//! as elicitation when the client supports it, and goes on with the
//! answer; a client that declines, or cannot be asked, gets a cancelled run
//! that says why. Driven by rmcp's client over stdio against the real
//! binary.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, Implementation, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value, json};

/// A client that answers every elicitation with `action` and `content`
/// (and says it can only when `elicits`), keeping what it was asked and
/// the progress messages (run events) it got.
#[derive(Clone)]
struct Client {
    elicits: bool,
    action: ElicitationAction,
    content: Option<Value>,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
    progress: Arc<Mutex<Vec<String>>>,
}

impl Client {
    fn new(elicits: bool, action: ElicitationAction, content: Option<Value>) -> Self {
        Self {
            elicits,
            action,
            content,
            asked: Arc::default(),
            progress: Arc::default(),
        }
    }
}

impl ClientHandler for Client {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        {
            let schema = serde_json::to_value(requested_schema).unwrap_or_default();
            self.asked.lock().unwrap().push((message, schema));
        }
        let result = ElicitResult::new(self.action.clone());
        Ok(match &self.content {
            Some(c) => result.with_content(c.clone()),
            None => result,
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(m) = params.message {
            self.progress.lock().unwrap().push(m);
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicits {
            capabilities.elicitation = Some(ElicitationCapability::new());
        }
        ClientConfig::new(capabilities, Implementation::new("ask-test", "1.0.0"))
    }
}

const ASKER: &str = r#"id = "asker"

[planner]
kind = "scripted"

[[planner.turns]]
ask = "What is your name?"

[[planner.turns]]
text = "greeted"
"#;

/// Calls the agent once with `client`; the result's text and whether it is an error.
async fn call(client: Client) -> (String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("asker.toml");
    std::fs::write(&agent, ASKER).unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(["mcp", "serve"]).arg(&agent);
    let service = client
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let result = service
        .call_tool(
            CallToolRequestParams::new("asker")
                .with_arguments(json!({"prompt": "hi"}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    service.cancel().await.unwrap();
    (text, result.is_error == Some(true))
}

#[tokio::test]
async fn a_question_goes_to_the_client_and_the_run_goes_on_with_the_answer() {
    let client = Client::new(
        true,
        ElicitationAction::Accept,
        Some(json!({"answer": "Ada"})),
    );
    let (asked, progress) = (client.asked.clone(), client.progress.clone());
    let (text, is_error) = call(client).await;
    assert_eq!((text.as_str(), is_error), ("greeted", false));
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "What is your name?");
    assert_eq!(asked[0].1["required"], json!(["answer"]));
    assert_eq!(asked[0].1["properties"]["answer"]["type"], "string");
    // The run recorded the client's answer (events reach the client as
    // progress, which may trail the result a little).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let seen = progress.lock().unwrap().clone();
        if seen
            .iter()
            .any(|m| m.contains("\"await_satisfied\"") && m.contains("Ada"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no await_satisfied: {seen:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_declined_question_cancels_the_run_and_says_so() {
    let client = Client::new(true, ElicitationAction::Decline, None);
    let asked = client.asked.clone();
    let (text, is_error) = call(client).await;
    assert!(is_error, "{text}");
    assert!(text.contains("cancelled"), "{text}");
    assert!(text.contains("declined"), "{text}");
    assert_eq!(asked.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_client_without_elicitation_gets_a_cancelled_run() {
    let client = Client::new(false, ElicitationAction::Accept, None);
    let asked = client.asked.clone();
    let (text, is_error) = call(client).await;
    assert!(is_error, "{text}");
    assert!(text.contains("cannot answer elicitation"), "{text}");
    assert!(asked.lock().unwrap().is_empty());
}
