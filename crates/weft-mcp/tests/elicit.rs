//! MCP elicitation through the client toolset: the test server's eliciting
//! tools, called with an elicitor that accepts, declines, cancels, refuses,
//! or is detached; the toolset's fallback handler; and a form whose
//! answer leaves with its defaults, and only if it fits the schema.

mod common;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::{request, stdio_config, text};
use serde_json::{Value, json};
use weft_core::elicitation::{
    ElicitFuture, ElicitationError, ElicitationMode, ElicitationRequest, ElicitationResponse,
    Elicitor,
};
use weft_core::tool::ToolError;
use weft_mcp::McpToolSet;
use weft_mcp::error::TOOL_FAILED;
use weft_tools::{ElicitationHandler, ToolReply, ToolSet, find_elicitation};

/// An elicitor that answers `response` and remembers what it was asked.
fn answering(
    response: Result<ElicitationResponse, ElicitationError>,
) -> (Elicitor, Arc<Mutex<Vec<ElicitationRequest>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let elicitor = Elicitor::new(move |r| {
        seen.lock().unwrap().push(r);
        Box::pin(std::future::ready(response.clone())) as ElicitFuture
    });
    (elicitor, asked)
}

async fn call(set: &McpToolSet, tool: &str, elicitor: Elicitor) -> ToolReply {
    let mut req = request(tool, json!({}));
    req.elicit = elicitor;
    set.call_tool(req).await.unwrap()
}

#[tokio::test]
async fn a_form_is_accepted_declined_or_cancelled() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    let (accept, asked) = answering(Ok(ElicitationResponse::accept(Some(
        json!({"name": "Ada"}),
    ))));
    assert_eq!(text(&call(&set, "t.ask_name", accept).await), "hello Ada");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].message, "What is your name?");
    let ElicitationMode::Form { requested_schema } = &asked[0].mode else {
        panic!("expected a form, got {:?}", asked[0].mode);
    };
    assert_eq!(requested_schema["type"], "object");
    assert_eq!(requested_schema["required"], json!(["name"]));
    assert_eq!(requested_schema["properties"]["name"]["type"], "string");

    let (decline, _) = answering(Ok(ElicitationResponse::decline()));
    assert_eq!(text(&call(&set, "t.ask_name", decline).await), "declined");
    let (cancel, _) = answering(Ok(ElicitationResponse::cancel()));
    assert_eq!(text(&call(&set, "t.ask_name", cancel).await), "cancelled");
}

#[tokio::test]
async fn a_url_comes_with_its_id_and_detached_or_refused_calls_get_no_answer() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    let (accept, asked) = answering(Ok(ElicitationResponse::accept(None)));
    assert_eq!(text(&call(&set, "t.open_url", accept).await), "accepted");
    assert_eq!(
        asked.lock().unwrap()[0].mode,
        ElicitationMode::Url {
            url: "https://example.test/consent".into(),
            elicitation_id: "consent-1".into()
        }
    );
    // No one to ask: the server hears `decline`.
    let reply = call(&set, "t.ask_name", Elicitor::detached()).await;
    assert_eq!(text(&reply), "declined");
    // The run refused the question: the server gets an error.
    let (refuse, _) = answering(Err(ElicitationError::Refused("too many".into())));
    let mut req = request("t.ask_name", json!({}));
    req.elicit = refuse;
    let failure = set.call_tool(req).await.unwrap_err();
    assert_eq!(failure.error.code, TOOL_FAILED);
    assert!(
        failure.error.message.contains("elicitation failed"),
        "{}",
        failure.error.message
    );
}

struct Fixed(Value);

#[async_trait]
impl ElicitationHandler for Fixed {
    async fn elicit(&self, _request: ElicitationRequest) -> Result<ElicitationResponse, ToolError> {
        Ok(ElicitationResponse::accept(Some(self.0.clone())))
    }
}

#[tokio::test]
async fn the_toolset_handler_answers_calls_without_an_elicitor() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    find_elicitation(&set)
        .unwrap()
        .set_elicitation_handler(Some(Arc::new(Fixed(json!({"name": "Bo"})))));
    let reply = call(&set, "t.ask_name", Elicitor::detached()).await;
    assert_eq!(text(&reply), "hello Bo");
}

#[tokio::test]
async fn a_form_answer_leaves_with_its_defaults_and_only_if_it_fits() {
    let set = McpToolSet::new(stdio_config("t", &[]));
    // The question carries the form's constraints and defaults as sent.
    let (seven, asked) = answering(Ok(ElicitationResponse::accept(Some(
        json!({"quantity": 7}),
    ))));
    let got: Value = serde_json::from_str(&text(&call(&set, "t.order", seven).await)).unwrap();
    assert_eq!(got, json!({"quantity": 7, "size": "m", "gift": false}));
    let first = asked.lock().unwrap()[0].clone();
    let ElicitationMode::Form { requested_schema } = &first.mode else {
        panic!("expected a form");
    };
    assert_eq!(requested_schema["properties"]["quantity"]["maximum"], 100);
    assert_eq!(requested_schema["properties"]["size"]["default"], "m");

    // An answer out of range (here from an elicitor that skips the run's
    // check) never reaches the server: the call fails instead.
    let (over, _) = answering(Ok(ElicitationResponse::accept(Some(
        json!({"quantity": 500}),
    ))));
    let mut req = request("t.order", json!({}));
    req.elicit = over;
    let failure = set.call_tool(req).await.unwrap_err();
    assert!(
        failure.error.message.contains("quantity") && failure.error.message.contains("100"),
        "{}",
        failure.error.message
    );

    // So does a toolset handler's.
    find_elicitation(&set)
        .unwrap()
        .set_elicitation_handler(Some(Arc::new(Fixed(json!({"quantity": 0})))));
    let mut req = request("t.order", json!({}));
    req.elicit = Elicitor::detached();
    let failure = set.call_tool(req).await.unwrap_err();
    assert!(
        failure.error.message.contains("quantity"),
        "{}",
        failure.error.message
    );
}
