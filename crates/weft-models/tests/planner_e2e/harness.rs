//! What the planner tests share: an event log, a planner context, a tool
//! catalog, the sans-IO driver loop that stands in for the runtime, and
//! models over a local replay server.

use crate::common::{Reply, Server, fixture, split};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::message::{Message, Thinking};
use weft_core::model::{ModelClient, ModelSummary, Usage};
use weft_core::planner::{
    EmptyMemory, MemoryView, PlanInput, PlanResumeInput, Planner, PlannerContext, PlannerError,
    PlannerEvents, Reminder, RunContext,
};
use weft_core::run::{
    PlanKind, PlanOutcome, Resolution, RunConfig, RunMachine, RunOutcome, Step, ToolCatalog,
};
use weft_core::tool::{FieldIssue, Labels, ToolAnnotations, ToolIdent, ToolOutput, ToolSpec};
use weft_core::{AgentId, RunId, Timestamp, ToolCallId, TurnId};
use weft_models::{ApiKey, HttpConfig, ModelConfig, ModelPlanner, ModelPlannerConfig, build_model};

/// Records every planner event and tool execution, in order, and the
/// usage of each `usage` event and of each call's whole answer.
#[derive(Default)]
pub(crate) struct Log {
    entries: Mutex<Vec<String>>,
    usages: Mutex<Vec<Usage>>,
    answered: Mutex<Vec<Usage>>,
}

impl Log {
    fn push(&self, s: String) {
        self.entries.lock().unwrap().push(s);
    }
    pub(crate) fn entries(&self) -> Vec<String> {
        self.entries.lock().unwrap().clone()
    }
}

impl PlannerEvents for Log {
    fn assistant_chunk(&self, text: &str) {
        self.push(format!("text:{text}"));
    }
    fn tool_call_args_delta(&self, id: &ToolCallId, tool: &str, delta: &str) {
        self.push(format!("args:{id}:{tool}:{delta}"));
    }
    fn thinking_block(&self, thinking: &Thinking) {
        let kind = match thinking {
            Thinking::Text {
                signature: Some(_), ..
            } => "signed",
            Thinking::Text { .. } => "unsigned",
            Thinking::Redacted { .. } => "redacted",
            Thinking::OpenAiReasoning { .. } => "openai-reasoning",
        };
        self.push(format!("thinking:{kind}"));
    }
    fn planner_thought(&self, text: &str, _: &Labels) {
        self.push(format!("thought:{text}"));
    }
    fn usage_delta(&self, usage: &Usage) {
        self.push(format!(
            "usage:{}/{}",
            usage.input_tokens, usage.output_tokens
        ));
        self.usages.lock().unwrap().push(*usage);
    }
    fn model_output(&self, _: &str, output: &ModelSummary) {
        self.answered.lock().unwrap().push(output.usage);
    }
}

pub(crate) struct Ctx;

impl PlannerContext for Ctx {
    fn agent_id(&self) -> &AgentId {
        unimplemented!()
    }
    fn run_id(&self) -> &RunId {
        unimplemented!()
    }
    fn state_get(&self, _: &str) -> Option<Value> {
        None
    }
    fn state_set(&self, _: &str, _: Value) {}
    fn memory(&self) -> &dyn MemoryView {
        &EmptyMemory
    }
    fn model(&self, _: &str) -> Option<Arc<dyn ModelClient>> {
        None
    }
    fn render_prompt(&self, name: &str, _: &Value) -> Result<String, PlannerError> {
        Err(PlannerError::new(name))
    }
    fn add_reminder(&self, _: Reminder) {}
    fn remove_reminder(&self, _: &str) {}
}

pub(crate) struct Catalog(Vec<ToolSpec>);

impl ToolCatalog for Catalog {
    fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.0.iter().find(|s| s.name.as_str() == name)
    }
    fn names(&self) -> Vec<ToolIdent> {
        self.0.iter().map(|s| s.name.clone()).collect()
    }
    fn validate(&self, _: &ToolSpec, arguments: &Value) -> Result<(), Vec<FieldIssue>> {
        if arguments.is_object() {
            Ok(())
        } else {
            Err(vec![FieldIssue {
                field: String::new(),
                kind: weft_core::tool::FieldIssueKind::WrongType,
                message: "expected an object".into(),
            }])
        }
    }
}

pub(crate) fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: ToolAnnotations::default(),
        tags: Vec::new(),
    }
}

/// The context of the run every planner call here belongs to.
pub(crate) fn run_context() -> RunContext {
    RunContext {
        agent_id: "agent".into(),
        run_id: "run".into(),
        session_id: "session".into(),
        turn_id: TurnId::new("turn"),
        labels: Arc::new(Labels::new()),
    }
}

/// Runs the machine to its outcome, executing tools with canned results.
async fn drive(
    planner: &ModelPlanner,
    tools: &[&str],
    prompt: &str,
    log: &Log,
) -> (RunOutcome, RunMachine) {
    let catalog = Catalog(tools.iter().map(|t| spec(t)).collect());
    let now = Timestamp::from_millis(1_000);
    let mut machine = RunMachine::new(
        RunConfig::new("agent", "session", vec![Message::user(prompt)]),
        now,
    );
    let run = run_context();
    loop {
        let step = machine.next_step(now);
        match step {
            Step::Plan { kind, finalize } => {
                let finalize = finalize.cloned();
                let transcript = machine.transcript().clone();
                let reminders = vec![Reminder::new("r", "Reminder: be brief.")];
                let outputs = machine.tool_outputs().clone();
                let base = PlanInput {
                    messages: &transcript,
                    run: &run,
                    context: &Ctx,
                    events: log,
                    reminders: &reminders,
                    tools: &catalog.0,
                };
                let result = match kind {
                    PlanKind::Start => planner.plan_start(base).await,
                    PlanKind::Resume => {
                        planner
                            .plan_resume(PlanResumeInput {
                                base,
                                tool_outputs: &outputs,
                                finalize: finalize.as_ref(),
                            })
                            .await
                    }
                }
                .unwrap();
                if let PlanOutcome::NeedsResolution(ctx) =
                    machine.plan_result(result, now, &catalog).unwrap()
                {
                    log.push(format!("invalid:{}", ctx.tool_name));
                    let feedback = ctx.reason.describe(&ctx.tool_name);
                    machine
                        .resolve(Resolution::Retry { feedback }, now, &catalog)
                        .unwrap();
                }
            }
            Step::Resolve { context } => {
                let feedback = context.reason.describe(&context.tool_name);
                machine
                    .resolve(Resolution::Retry { feedback }, now, &catalog)
                    .unwrap();
            }
            Step::ExecuteTools { calls } => {
                let calls: Vec<_> = calls.iter().cloned().collect();
                for call in calls {
                    log.push(format!("tool_start:{}", call.name));
                    let out = ToolOutput::ok(
                        call.id,
                        call.name.clone(),
                        call.payload,
                        json!(format!("{} ok", call.name)),
                    );
                    machine.tool_result(out, now).unwrap();
                    log.push(format!("tool_end:{}", call.name));
                }
            }
            // The user answers every question "Oslo", and picks the first
            // option of every multiple-choice question.
            Step::Await { items, .. } => {
                let asked: Vec<_> = items.to_vec();
                for item in asked {
                    let answer = match &item {
                        AwaitItem::Clarification(c) => {
                            log.push(format!("asked:{}", c.question));
                            AwaitAnswer::Clarification {
                                text: "Oslo".into(),
                            }
                        }
                        AwaitItem::Questions(q) => AwaitAnswer::Questions {
                            answers: q
                                .questions
                                .iter()
                                .map(|q| {
                                    log.push(format!("chose:{}", q.prompt));
                                    (q.id.clone(), vec![q.options[0].id.clone()])
                                })
                                .collect(),
                        },
                        _ => panic!("only questions in these runs: {item:?}"),
                    };
                    machine.answer(item.id(), answer, now).unwrap();
                }
            }
            Step::Finish { outcome } => {
                let outcome = outcome.clone();
                return (outcome, machine);
            }
        }
    }
}

/// A run driven to its answer.
pub(crate) struct Answered {
    /// The answer's text.
    pub(crate) text: String,
    /// The machine at the end.
    pub(crate) machine: RunMachine,
    /// The log's entries.
    pub(crate) entries: Vec<String>,
    /// The usage of each `usage` event, in order.
    pub(crate) usages: Vec<Usage>,
    /// The usage of each model call's whole answer, in order.
    pub(crate) answered: Vec<Usage>,
}

/// Whether the log `entries` hold `entry`.
pub(crate) fn logged(entries: &[String], entry: &str) -> bool {
    entries.iter().any(|e| e == entry)
}

/// Drives `planner` over `tools` from `prompt` to its answer.
pub(crate) async fn answer(planner: &ModelPlanner, tools: &[&str], prompt: &str) -> Answered {
    let log = Log::default();
    let (outcome, machine) = drive(planner, tools, prompt, &log).await;
    Answered {
        text: final_text(&outcome),
        machine,
        entries: log.entries(),
        usages: log.usages.lock().unwrap().clone(),
        answered: log.answered.lock().unwrap().clone(),
    }
}

fn final_text(outcome: &RunOutcome) -> String {
    match outcome {
        RunOutcome::Response { message, .. } => message.joined_text(),
        other => panic!("run did not answer: {other:?}"),
    }
}

pub(crate) fn planner(model: Arc<dyn ModelClient>) -> ModelPlanner {
    ModelPlanner::new(
        model,
        ModelPlannerConfig {
            instruction: "You are a test agent.".into(),
            toolset_instructions: vec!["Use calc for arithmetic.".into()],
            ..ModelPlannerConfig::default()
        },
    )
}

pub(crate) fn http_model(id: &str, server: &Server) -> Arc<dyn ModelClient> {
    let mut config = ModelConfig::new(id);
    config.api_key = Some(ApiKey::new("sk-test"));
    config.base_url = Some(if id.starts_with("anthropic/") {
        server.url()
    } else {
        format!("{}/v1", server.url())
    });
    config.http = HttpConfig::default();
    config.http.retry.initial_backoff = Duration::from_millis(5);
    build_model(&config).unwrap()
}

const SPLITS: &[usize] = &[3, 17, 1, 40];

/// A server streaming the SSE fixtures `names`, one per request, split at [`SPLITS`].
pub(crate) async fn streaming_server(names: &[&str]) -> Server {
    let replies = names
        .iter()
        .map(|name| Reply::sse(split(&fixture(name), SPLITS)))
        .collect();
    Server::start(replies).await
}

/// Drives a planner over the HTTP model `id`, whose server streams the SSE
/// fixtures `names` in turn, to its answer; the server keeps what it saw.
pub(crate) async fn answer_over_http(
    id: &str,
    names: &[&str],
    tools: &[&str],
    prompt: &str,
) -> (Answered, Server) {
    let server = streaming_server(names).await;
    let run = answer(&planner(http_model(id, &server)), tools, prompt).await;
    (run, server)
}
