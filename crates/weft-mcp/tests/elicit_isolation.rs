//! Elicitations of concurrent calls of two runs (two tenants' runs) on one
//! connection reach only the run whose call asked: over streamable HTTP by
//! the request each elicitation is marked with, over stdio (where an
//! elicitation names no call) by declining one that could be either run's.
//!
//! Call A starts first and asks late; call B starts after it and holds its
//! own question open while A asks, so "the latest call in flight" is B's
//! when A's question comes.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{HttpChild, no_backoff, request, stdio_config, text};
use serde_json::json;
use weft_core::elicitation::{ElicitFuture, ElicitationResponse, Elicitor};
use weft_core::ids::RunId;
use weft_mcp::{McpConfig, McpToolSet, Transport};
use weft_tools::ToolSet;

/// An elicitor that answers the name `name` after `delay`, counting the
/// questions it was asked.
fn answering(name: &'static str, delay: Duration) -> (Elicitor, Arc<Mutex<u32>>) {
    let asked = Arc::new(Mutex::new(0));
    let seen = asked.clone();
    let elicitor = Elicitor::new(move |_| {
        *seen.lock().unwrap() += 1;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            Ok(ElicitationResponse::accept(Some(json!({"name": name}))))
        }) as ElicitFuture
    });
    (elicitor, asked)
}

/// Calls `ask_later` as run `run`, asking after `ms` milliseconds.
async fn ask(set: &McpToolSet, run: &str, ms: u64, elicitor: Elicitor) -> String {
    let mut req = request("t.ask_later", json!({"ms": ms}));
    req.run_id = RunId::new(run);
    req.elicit = elicitor;
    text(&set.call_tool(req).await.unwrap())
}

#[tokio::test]
async fn over_http_each_run_gets_only_its_own_question() {
    let server = HttpChild::start("127.0.0.1:0").await;
    let set = Arc::new(McpToolSet::new(
        McpConfig::new("t", Transport::http(&server.url)).with_restart_backoff(no_backoff()),
    ));
    set.list_tools().await.unwrap();
    let (elicit_a, asked_a) = answering("Ada", Duration::ZERO);
    let (elicit_b, asked_b) = answering("Bob", Duration::from_millis(1500));
    let a = tokio::spawn({
        let set = set.clone();
        async move { ask(&set, "tenant-a-run", 500, elicit_a).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let b = ask(&set, "tenant-b-run", 0, elicit_b).await;
    let a = a.await.unwrap();
    assert_eq!(a, "hello Ada");
    assert_eq!(b, "hello Bob");
    assert_eq!(
        *asked_a.lock().unwrap(),
        1,
        "run A is asked its own question"
    );
    assert_eq!(*asked_b.lock().unwrap(), 1, "run B never sees A's question");
}

#[tokio::test]
async fn over_stdio_a_question_that_could_be_either_runs_is_declined() {
    let set = Arc::new(McpToolSet::new(stdio_config("t", &[])));
    set.list_tools().await.unwrap();
    let (elicit_a, asked_a) = answering("Ada", Duration::ZERO);
    let (elicit_b, asked_b) = answering("Bob", Duration::ZERO);
    let a = tokio::spawn({
        let set = set.clone();
        async move { ask(&set, "tenant-a-run", 2000, elicit_a).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // B asks while A's call (another run's) is in flight: nobody can tell
    // whose question it is.
    let b = ask(&set, "tenant-b-run", 0, elicit_b).await;
    assert_eq!(b, "declined");
    assert_eq!(*asked_b.lock().unwrap(), 0);
    assert_eq!(*asked_a.lock().unwrap(), 0, "A never sees B's question");
    // A asks once B's call has ended: A's is the only run in flight.
    assert_eq!(a.await.unwrap(), "hello Ada");
    assert_eq!(*asked_a.lock().unwrap(), 1);
}

#[tokio::test]
async fn over_stdio_calls_of_one_run_still_get_their_questions() {
    let set = Arc::new(McpToolSet::new(stdio_config("t", &[])));
    let (elicit_a, asked_a) = answering("Ada", Duration::ZERO);
    let (elicit_b, asked_b) = answering("Bob", Duration::ZERO);
    let a = tokio::spawn({
        let set = set.clone();
        async move { ask(&set, "one-run", 1000, elicit_a).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(ask(&set, "one-run", 0, elicit_b).await, "hello Bob");
    assert_eq!(*asked_b.lock().unwrap(), 1);
    assert_eq!(a.await.unwrap(), "hello Ada");
    assert_eq!(*asked_a.lock().unwrap(), 1);
}
