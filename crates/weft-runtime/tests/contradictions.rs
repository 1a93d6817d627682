//! The five behaviours that once contradicted the planner contract, each
//! checked on the durable stores (SQLite and PostgreSQL, see `stores`) and
//! read back through a new connection, as a restarted process would:
//!
//! - an oversized tool result reaches the model as omitted, with its reason;
//! - usage reported as running totals (as Anthropic does) is counted once;
//! - malformed arguments cannot be repaired, so resolution cannot loop;
//! - a clarification's question is in the transcript, and its
//!   `restrict_to_tool` still holds after a restart of the runtime;
//! - a final answer is delivered once, whether the planner streamed it or
//!   not (the response hook is suppressed exactly when it streamed).
//!
//! Each test says what it guards: it fails if that fix is reverted.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use weft_core::awaiting::{AwaitAnswer, AwaitItem, Clarification};
use weft_core::event::{EventKind, RunEvent};
use weft_core::message::{Message, Part, Role};
use weft_core::model::{StopReason, StreamChunk, Usage};
use weft_core::planner::{
    PlanInput, PlanResult, PlanResumeInput, Planner, PlannerError, ToolCallRequest,
};
use weft_core::run::{InvalidToolCallContext, Resolution, RunOutcome};
use weft_core::session::FullStore;
use weft_core::store::RunStatus;
use weft_core::tool::{Omission, ToolError, ToolIdent, ToolResultBody};
use weft_core::{AwaitItemId, RunId};
use weft_models::anthropic::AnthropicDecoder;
use weft_models::decode::EventDecoder;
use weft_models::sse::SseEvent;
use weft_models::{ModelPlanner, ModelPlannerConfig, ScriptCall, ScriptTurn, ScriptedModel};
use weft_runtime::{Agent, InvalidCallPolicy, Runtime, ScriptedPlanner, StartRequest};
use weft_tools::{FnToolSet, ToolSet};

#[macro_use]
mod stores;
use stores::Db;

on_both_stores!(
    an_oversized_result_reaches_the_model_omitted_with_its_reason,
    usage_reported_as_running_totals_is_counted_once,
    malformed_arguments_cannot_be_repaired_so_resolution_cannot_loop,
    a_clarification_is_asked_and_restricts_the_next_turn_across_a_restart,
    a_final_answer_is_delivered_once_streamed_or_not,
);

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct SizeArgs {
    bytes: usize,
}

/// Executions of `t.add` and `t.echo`.
#[derive(Default)]
struct Counts {
    add: AtomicUsize,
    echo: AtomicUsize,
}

/// `t.add`, `t.echo` and `t.big` (a string of `bytes` bytes).
fn tools(counts: Arc<Counts>) -> Arc<dyn ToolSet> {
    let (adds, echoes) = (counts.clone(), counts);
    Arc::new(
        FnToolSet::new("t")
            .tool("add", "Adds two integers", move |args: AddArgs| {
                adds.add.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ToolError>(args.a + args.b) }
            })
            .tool("echo", "Echoes a size", move |args: SizeArgs| {
                echoes.echo.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ToolError>(args.bytes) }
            })
            .tool("big", "Returns a big string", |args: SizeArgs| async move {
                Ok::<_, ToolError>("x".repeat(args.bytes))
            }),
    )
}

fn runtime(store: Arc<dyn FullStore>, agents: Vec<Agent>) -> Runtime {
    let mut builder = Runtime::builder().session_store(store).payload_budget(1024);
    for agent in agents {
        builder = builder.agent(agent);
    }
    builder.build()
}

fn model_planner(model: &Arc<ScriptedModel>) -> Arc<ModelPlanner> {
    Arc::new(ModelPlanner::new(
        model.clone(),
        ModelPlannerConfig::default(),
    ))
}

async fn events(store: &dyn FullStore, run: &RunId) -> Vec<RunEvent> {
    store.read_events(run, 0, None).await.unwrap()
}

/// Guards: the runtime once rewrote an omitted result's bounds, so the model
/// saw "(returned 0)" instead of why the result is missing.
async fn an_oversized_result_reaches_the_model_omitted_with_its_reason(db: &Db) {
    let model = Arc::new(ScriptedModel::new(
        "m",
        vec![
            ScriptTurn {
                tool_calls: vec![ScriptCall {
                    id: Some("c1".into()),
                    name: "t.big".into(),
                    arguments: json!({"bytes": 5000}),
                }],
                ..ScriptTurn::default()
            },
            ScriptTurn {
                text: Some("ok".into()),
                ..ScriptTurn::default()
            },
        ],
    ));
    let agent = Agent::builder("a", model_planner(&model))
        .toolset(tools(Arc::default()))
        .build();
    let rt = runtime(db.open().await, vec![agent]);
    let handle = rt.start("a", StartRequest::user("big")).await.unwrap();
    assert!(matches!(
        handle.outcome().await.unwrap(),
        RunOutcome::Response { .. }
    ));
    let marker = "[result omitted: 5002 bytes exceeds the 1024-byte budget; narrow the request]";
    // What the model was sent on its second turn.
    let requests = model.requests();
    let sent: Vec<&Part> = requests[1]
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { content, .. } => Some(content),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        sent,
        [&Part::Text {
            text: marker.into()
        }]
    );
    // What a restarted process reads back.
    let stored = db.open().await.load_run(handle.run_id()).await.unwrap();
    let stored = stored.unwrap();
    let out = &stored.snapshot.tool_outputs()[0];
    let too_large = Omission::TooLarge {
        bytes: 5002,
        limit: 1024,
    };
    assert_eq!(out.result, ToolResultBody::Omitted(too_large));
    assert_eq!(out.bounds, None, "the tool reported no bounds");
    let text = format!("{:?}", stored.snapshot.transcript().get(2).unwrap());
    assert!(text.contains(marker), "{text}");
    assert!(!text.contains("returned 0"), "{text}");
}

/// The chunks Anthropic's decoder makes of a streamed answer whose usage
/// says 10 tokens in and 1 out at the start and 7 out at the end: totals,
/// not increments.
fn anthropic_chunks() -> Vec<StreamChunk> {
    let events = [
        (
            "message_start",
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","usage":{"input_tokens":10,"output_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ];
    let mut decoder = AnthropicDecoder::default();
    let mut chunks = Vec::new();
    for (event, data) in events {
        decoder
            .event(SseEvent { event, data }, &mut chunks)
            .unwrap();
    }
    assert!(decoder.is_done());
    chunks
}

/// Guards: usage chunks carry running totals and were once forwarded as
/// `usage` events as they came, so a consumer summing them counted the
/// input twice (20 in, 8 out for an answer of 10 in, 7 out).
async fn usage_reported_as_running_totals_is_counted_once(db: &Db) {
    let chunks = anthropic_chunks();
    let usages = chunks
        .iter()
        .filter(|c| matches!(c, StreamChunk::Usage { .. }))
        .count();
    assert_eq!(usages, 2, "{chunks:?}");
    let model = Arc::new(ScriptedModel::new(
        "m",
        vec![ScriptTurn {
            chunks: Some(chunks),
            ..ScriptTurn::default()
        }],
    ));
    let agent = Agent::builder("a", model_planner(&model)).build();
    let rt = runtime(db.open().await, vec![agent]);
    let handle = rt.start("a", StartRequest::user("hi")).await.unwrap();
    handle.outcome().await.unwrap();
    let log = events(&*db.open().await, handle.run_id()).await;
    let mut sum = Usage::default();
    for e in &log {
        if let EventKind::Usage { usage } = &e.kind {
            sum.input_tokens += usage.input_tokens;
            sum.output_tokens += usage.output_tokens;
        }
    }
    assert_eq!((sum.input_tokens, sum.output_tokens), (10, 7), "{log:?}");
    let recorded: Vec<(u64, u64)> = log
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ModelOutput { output, .. } => {
                Some((output.usage.input_tokens, output.usage.output_tokens))
            }
            _ => None,
        })
        .collect();
    assert_eq!(recorded, [(10, 7)]);
}

/// Answers every invalid call with "call `t.add` instead", five times at
/// most (then fails the run, so a loop ends the test instead of hanging it).
#[derive(Default)]
struct AlwaysRepair {
    asked: AtomicUsize,
}

impl InvalidCallPolicy for AlwaysRepair {
    fn resolve(&self, _context: &InvalidToolCallContext) -> Resolution {
        if self.asked.fetch_add(1, Ordering::SeqCst) >= 5 {
            return Resolution::Fail;
        }
        Resolution::Repair {
            tool: ToolIdent::new("t.add"),
        }
    }
}

/// Guards: `Repair` was once accepted for malformed arguments; the repaired
/// call carried the same broken arguments, was invalid again, and the
/// driver asked its policy again, forever.
async fn malformed_arguments_cannot_be_repaired_so_resolution_cannot_loop(db: &Db) {
    let planner = ScriptedPlanner::new(vec![
        PlanResult::tool_calls(vec![ToolCallRequest::raw("m1", "t.add", "{\"a\":")]),
        PlanResult::final_text("unreached"),
    ]);
    let counts = Arc::new(Counts::default());
    let policy = Arc::new(AlwaysRepair::default());
    let agent = Agent::builder("a", Arc::new(planner))
        .toolset(tools(counts.clone()))
        .invalid_calls(policy.clone())
        .build();
    let rt = runtime(db.open().await, vec![agent]);
    let handle = rt.start("a", StartRequest::user("add")).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), handle.outcome())
        .await
        .expect("the run ends")
        .unwrap();
    assert!(matches!(outcome, RunOutcome::Failed { .. }), "{outcome:?}");
    assert_eq!(policy.asked.load(Ordering::SeqCst), 1, "asked once");
    assert_eq!(counts.add.load(Ordering::SeqCst), 0);
    let store = db.open().await;
    let log = events(&*store, handle.run_id()).await;
    let resolutions = log
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::PlannerThought { labels, .. }
                if labels.get("kind").map(String::as_str) == Some("invalid_tool_call"))
        })
        .count();
    assert_eq!(resolutions, 1);
    let stored = store.load_run(handle.run_id()).await.unwrap().unwrap();
    assert_eq!(stored.record.status, RunStatus::Failed);
}

/// A planner playing fixed turns (or hanging, as a process that dies while
/// it plans), recording the tools each call offered.
#[derive(Default)]
struct Script {
    turns: Mutex<VecDeque<Option<PlanResult>>>,
    offered: Mutex<Vec<Vec<String>>>,
    entered: tokio::sync::Notify,
}

impl Script {
    /// Plays `turns`; `None` hangs.
    fn new(turns: Vec<Option<PlanResult>>) -> Arc<Self> {
        Arc::new(Self {
            turns: Mutex::new(turns.into()),
            ..Self::default()
        })
    }
}

#[async_trait]
impl Planner for Script {
    async fn plan_start(&self, input: PlanInput<'_>) -> Result<PlanResult, PlannerError> {
        let names = input
            .tools
            .iter()
            .map(|t| t.name.as_str().to_owned())
            .collect();
        self.offered.lock().unwrap().push(names);
        self.entered.notify_one();
        let turn = self.turns.lock().unwrap().pop_front();
        match turn {
            Some(Some(result)) => Ok(result),
            Some(None) => std::future::pending().await,
            None => Err(PlannerError::new("the script has no more turns")),
        }
    }

    async fn plan_resume(&self, input: PlanResumeInput<'_>) -> Result<PlanResult, PlannerError> {
        self.plan_start(input.base).await
    }
}

fn call(name: &str, args: serde_json::Value) -> Option<PlanResult> {
    Some(PlanResult::tool_calls(vec![ToolCallRequest::new(
        name, args,
    )]))
}

/// Guards: a clarification's question never reached the transcript (the
/// model saw an answer to nothing), and `restrict_to_tool` was ignored
/// when the run went on. Here the answer is committed by a second runtime,
/// which dies while planning; a third recovers the run from the store, so
/// the restriction must come from the stored run.
async fn a_clarification_is_asked_and_restricts_the_next_turn_across_a_restart(db: &Db) {
    let counts = Arc::new(Counts::default());
    let agent = |planner: &Arc<Script>| {
        Agent::builder("a", planner.clone())
            .toolset(tools(counts.clone()))
            .build()
    };
    let ask = Script::new(vec![Some(PlanResult::await_items(vec![
        AwaitItem::Clarification(Clarification {
            id: AwaitItemId::new("which"),
            question: "Which numbers?".into(),
            missing_fields: vec!["a".into(), "b".into()],
            restrict_to_tool: Some(ToolIdent::new("t.add")),
            example_input: None,
            clarifying_prompt: None,
        }),
    ]))]);
    let first = runtime(db.open().await, vec![agent(&ask)]);
    let handle = first.start("a", StartRequest::user("add")).await.unwrap();
    let run = handle.run_id().clone();
    let store = db.open().await;
    for _ in 0..1000 {
        let status = store.load_run(&run).await.unwrap().unwrap().record.status;
        if status == RunStatus::Awaiting {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.shutdown().await;
    // A second process answers, then dies while it plans.
    let hang = Script::new(vec![None]);
    let second = runtime(db.open().await, vec![agent(&hang)]);
    let answer = AwaitAnswer::Clarification {
        text: "1 and 2".into(),
    };
    second
        .answer(&run, &AwaitItemId::new("which"), answer)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), hang.entered.notified())
        .await
        .expect("the second runtime plans");
    second.shutdown().await;
    // A third recovers the run: its first turn may call only `t.add`.
    let go_on = Script::new(vec![
        call("t.echo", json!({"bytes": 1})),
        call("t.add", json!({"a": 1, "b": 2})),
        Some(PlanResult::final_text("3")),
    ]);
    let third = runtime(db.open().await, vec![agent(&go_on)]);
    assert!(third.recover(&run).await.unwrap());
    let outcome = tokio::time::timeout(Duration::from_secs(10), third.outcome(&run))
        .await
        .expect("the run ends")
        .unwrap();
    assert!(
        matches!(&outcome, RunOutcome::Response { message, .. } if message.joined_text() == "3"),
        "{outcome:?}"
    );
    assert_eq!(go_on.offered.lock().unwrap()[0], ["t.add"]);
    assert_eq!(counts.echo.load(Ordering::SeqCst), 0, "t.echo was refused");
    assert_eq!(counts.add.load(Ordering::SeqCst), 1);
    // The question, then its answer: the model sees what it answered.
    let stored = db.open().await.load_run(&run).await.unwrap().unwrap();
    let transcript: Vec<&Message> = stored.snapshot.transcript().iter().collect();
    let asked = transcript
        .iter()
        .position(|m| m.role == Role::Assistant && m.joined_text() == "Which numbers?")
        .expect("the question is in the transcript");
    assert_eq!(transcript[asked + 1], &Message::user("1 and 2"));
}

/// The text of a run's `assistant_chunk` events, joined.
fn delivered(log: &[RunEvent]) -> String {
    log.iter()
        .filter_map(|e| match &e.kind {
            EventKind::AssistantChunk { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Guards: the response hook is suppressed exactly when the planner
/// streamed its answer. Inverted, a streamed answer is delivered twice (its
/// chunks, then the whole) and an answer that was not streamed never.
async fn a_final_answer_is_delivered_once_streamed_or_not(db: &Db) {
    let answer = "Hello, world";
    let model = Arc::new(ScriptedModel::new(
        "m",
        vec![ScriptTurn {
            chunks: Some(vec![
                StreamChunk::TextDelta {
                    text: "Hello, ".into(),
                },
                StreamChunk::TextDelta {
                    text: "world".into(),
                },
                StreamChunk::Stop {
                    reason: StopReason::EndTurn,
                },
            ]),
            ..ScriptTurn::default()
        }],
    ));
    let streamed = Agent::builder("streamed", model_planner(&model)).build();
    let whole = ScriptedPlanner::new(vec![PlanResult::final_text(answer)]);
    let whole = Agent::builder("whole", Arc::new(whole)).build();
    let rt = runtime(db.open().await, vec![streamed, whole]);
    for agent in ["streamed", "whole"] {
        let handle = rt.start(agent, StartRequest::user("hi")).await.unwrap();
        let outcome = handle.outcome().await.unwrap();
        assert!(
            matches!(&outcome, RunOutcome::Response { message, .. } if message.joined_text() == answer),
            "{agent}: {outcome:?}"
        );
        let log = events(&*db.open().await, handle.run_id()).await;
        assert_eq!(delivered(&log), answer, "{agent}");
        // The answer comes before the run's end.
        let chunk = log
            .iter()
            .rposition(|e| matches!(e.kind, EventKind::AssistantChunk { .. }));
        let end = log.iter().position(|e| e.kind.is_terminal());
        assert!(chunk < end, "{agent}: {log:?}");
    }
}
