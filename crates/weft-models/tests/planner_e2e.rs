//! The model planner end to end: a two-tool agent driven by weft-core's run
//! machine (a small sans-IO driver loop stands in for the runtime) against
//! the scripted model and against each provider's local replay server.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Reply, Server, fixture, split};
use serde_json::{Value, json};
use weft_core::message::{Message, Part, Thinking};
use weft_core::model::{ModelClient, ModelError, ToolChoice, Usage};
use weft_core::planner::{
    EmptyMemory, MemoryView, PlanInput, PlanResumeInput, Planner, PlannerContext, PlannerError,
    PlannerEvents, Reminder, RunContext,
};
use weft_core::run::{
    PlanKind, PlanOutcome, Resolution, RunConfig, RunMachine, RunOutcome, Step, ToolCatalog,
};
use weft_core::tool::{FieldIssue, Labels, ToolAnnotations, ToolIdent, ToolOutput, ToolSpec};
use weft_core::{AgentId, RunId, Timestamp, ToolCallId, TurnId};
use weft_models::{
    ApiKey, HttpConfig, ModelConfig, ModelPlanner, ModelPlannerConfig, ScriptedModel, build_model,
};

/// Records every planner event and tool execution, in order.
#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl Log {
    fn push(&self, s: String) {
        self.0.lock().unwrap().push(s);
    }
    fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
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
    }
}

struct Ctx;

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

struct Catalog(Vec<ToolSpec>);

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

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: ToolAnnotations::default(),
        tags: Vec::new(),
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
        RunConfig {
            messages: vec![Message::user(prompt)],
            ..RunConfig::default()
        },
        now,
    );
    let run = RunContext {
        agent_id: "agent".into(),
        run_id: "run".into(),
        session_id: "session".into(),
        turn_id: TurnId::new("turn"),
        labels: Arc::new(Labels::new()),
    };
    loop {
        let step = machine.next_step(now);
        match step {
            Step::Plan { kind, finalize } => {
                let finalize = finalize.cloned();
                let transcript = machine.transcript().clone();
                let reminders = vec![Reminder {
                    id: "r".into(),
                    text: "Reminder: be brief.".into(),
                }];
                let outputs = machine.tool_outputs().to_vec();
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
            Step::Await { .. } => panic!("no awaits in these runs"),
            Step::Finish { outcome } => {
                let outcome = outcome.clone();
                return (outcome, machine);
            }
        }
    }
}

fn final_text(outcome: &RunOutcome) -> String {
    match outcome {
        RunOutcome::Response { message, .. } => message.joined_text(),
        other => panic!("run did not answer: {other:?}"),
    }
}

fn planner(model: Arc<dyn ModelClient>) -> ModelPlanner {
    ModelPlanner::new(
        model,
        ModelPlannerConfig {
            instruction: "You are a test agent.".into(),
            toolset_instructions: vec!["Use calc for arithmetic.".into()],
            ..ModelPlannerConfig::default()
        },
    )
}

#[tokio::test]
async fn scripted_two_tool_agent_runs_to_a_final_answer() {
    let model = Arc::new(
        ScriptedModel::from_yaml(
            "e2e",
            r#"
- text: "Checking both."
  tool_calls:
    - { id: c1, name: calc.add, arguments: { a: 2, b: 3 } }
    - { id: c2, name: weather.current, arguments: { city: Paris } }
- text: "5, and sunny."
"#,
        )
        .unwrap(),
    );
    let log = Log::default();
    let (outcome, machine) = drive(
        &planner(model.clone()),
        &["calc.add", "weather.current"],
        "2+3 and weather?",
        &log,
    )
    .await;
    assert_eq!(final_text(&outcome), "5, and sunny.");
    assert_eq!(
        log.entries(),
        vec![
            "text:Checking ",
            "text:both.",
            "args:c1:calc.add:{\"a\":2",
            "args:c1:calc.add:,\"b\":3}",
            "args:c2:weather.current:{\"city\":",
            "args:c2:weather.current:\"Paris\"}",
            "usage:10/5",
            "tool_start:calc.add",
            "tool_end:calc.add",
            "tool_start:weather.current",
            "tool_end:weather.current",
            "text:5, ",
            "text:and ",
            "text:sunny.",
            "usage:10/5",
        ]
    );
    let requests = model.requests();
    assert_eq!(
        requests[0].system.as_deref(),
        Some("You are a test agent.\n\nUse calc for arithmetic.\n\nReminder: be brief.")
    );
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["calc__add", "weather__current"]);
    // The second request carries the calls under provider names and the results.
    let second = &requests[1].messages;
    assert_eq!(second.len(), 3);
    let uses: Vec<&str> = second[1]
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolUse { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(uses, ["calc__add", "weather__current"]);
    assert!(
        matches!(&second[2].parts[0], Part::ToolResult { tool_use_id, .. } if tool_use_id.as_str() == "c1")
    );
    assert_eq!(machine.tool_outputs().len(), 2);
}

#[tokio::test]
async fn malformed_arguments_and_unknown_tools_go_through_resolution_not_a_crash() {
    let model = Arc::new(
        ScriptedModel::from_json(
            "e2e",
            r#"[
              {"tool_calls": [{"id": "bad", "name": "calc.add", "arguments": "{\"a\": 2,"}]},
              {"tool_calls": [{"id": "ghost", "name": "nope.tool", "arguments": {}}]},
              {"tool_calls": [{"id": "good", "name": "calc.add", "arguments": {"a": 2}}]},
              {"text": "done"}
            ]"#,
        )
        .unwrap(),
    );
    let log = Log::default();
    let (outcome, _) = drive(
        &planner(model.clone()),
        &["calc.add", "weather.current"],
        "go",
        &log,
    )
    .await;
    assert_eq!(final_text(&outcome), "done");
    let entries = log.entries();
    assert!(
        entries.contains(&"invalid:calc.add".to_owned()),
        "{entries:?}"
    );
    assert!(
        entries.contains(&"invalid:nope.tool".to_owned()),
        "{entries:?}"
    );
    // The retry feedback reached the model as the invalid call's result.
    let third = &model.requests()[2].messages;
    let feedback: Vec<String> = third
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { content, .. } => Some(
                Message {
                    role: weft_core::message::Role::Tool,
                    parts: content.clone(),
                }
                .joined_text(),
            ),
            _ => None,
        })
        .collect();
    assert_eq!(feedback.len(), 2);
    assert!(feedback[0].contains("not valid JSON"), "{feedback:?}");
    assert!(
        feedback[1].contains("no tool named `nope.tool`"),
        "{feedback:?}"
    );
}

#[tokio::test]
async fn finalize_disables_tools_and_returns_text_even_if_the_model_calls_a_tool() {
    let model = Arc::new(
        ScriptedModel::from_json(
            "fin",
            r#"[{"text": "partial answer", "tool_calls": [{"name": "calc.add", "arguments": {}}]}]"#,
        )
        .unwrap(),
    );
    let p = planner(model.clone());
    let transcript = weft_core::run::Transcript::new(vec![Message::user("hi")]);
    let run = RunContext {
        agent_id: "a".into(),
        run_id: "r".into(),
        session_id: "s".into(),
        turn_id: TurnId::new("t"),
        labels: Arc::new(Labels::new()),
    };
    let tools = vec![spec("calc.add")];
    let termination = weft_core::planner::Termination {
        reason: weft_core::planner::TerminationReason::ToolCap,
        message: "tool cap of 3 reached".into(),
    };
    let result = p
        .plan_resume(PlanResumeInput {
            base: PlanInput {
                messages: &transcript,
                run: &run,
                context: &Ctx,
                events: &Log::default(),
                reminders: &[],
                tools: &tools,
            },
            tool_outputs: &[],
            finalize: Some(&termination),
        })
        .await
        .unwrap();
    assert_eq!(
        result.decision,
        weft_core::planner::Decision::FinalResponse {
            message: Message::assistant("partial answer")
        }
    );
    assert!(result.streamed);
    let req = &model.requests()[0];
    assert_eq!(req.tool_choice, ToolChoice::None);
    assert!(req.system.as_deref().unwrap().ends_with(
        "Tools are no longer available (tool cap of 3 reached). Answer the user now with what you have."
    ));
}

#[tokio::test]
async fn model_errors_become_planner_errors_with_their_retryability() {
    let model = Arc::new(ScriptedModel::new(
        "err",
        vec![weft_models::ScriptTurn {
            error: Some(ModelError::Stream {
                error_type: "overloaded_error".into(),
                message: "Overloaded".into(),
                retryable: true,
            }),
            ..Default::default()
        }],
    ));
    let transcript = weft_core::run::Transcript::new(vec![Message::user("hi")]);
    let run = RunContext {
        agent_id: "a".into(),
        run_id: "r".into(),
        session_id: "s".into(),
        turn_id: TurnId::new("t"),
        labels: Arc::new(Labels::new()),
    };
    let err = planner(model)
        .plan_start(PlanInput {
            messages: &transcript,
            run: &run,
            context: &Ctx,
            events: &Log::default(),
            reminders: &[],
            tools: &[],
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        PlannerError {
            message: "model scripted/err: provider stream error overloaded_error: Overloaded"
                .into(),
            retryable: true
        }
    );
}

fn http_model(id: &str, server: &Server) -> Arc<dyn ModelClient> {
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
async fn streaming_server(names: &[&str]) -> Server {
    let replies = names
        .iter()
        .map(|name| Reply::sse(split(&fixture(name), SPLITS)))
        .collect();
    Server::start(replies).await
}

#[tokio::test]
async fn anthropic_agent_carries_signed_thinking_to_the_next_turn() {
    let server = streaming_server(&[
        "anthropic/a4_thinking_tool_use_captured.sse",
        "anthropic/a1_text_basic.sse",
    ])
    .await;
    let log = Log::default();
    let p = planner(http_model("anthropic/claude-sonnet-4", &server));
    let (outcome, _) = drive(&p, &["weather", "calc.add"], "Weather in Florence?", &log).await;
    assert_eq!(final_text(&outcome), "Hello there!");
    let entries = log.entries();
    assert_eq!(entries[0], "usage:424/5");
    assert_eq!(entries[1], "thinking:signed");
    assert_eq!(
        entries[2],
        "args:toolu_01Js4AMfx5qpTLhwTusnvT68:weather:{\""
    );
    assert!(entries.contains(&"tool_start:weather".to_owned()));
    assert!(entries.contains(&"tool_end:weather".to_owned()));
    assert_eq!(entries.last().unwrap(), "usage:11/6");
    let seen = server.seen.lock().unwrap();
    let second = &seen.bodies[1]["messages"];
    let recorded: Value = serde_json::from_slice(&fixture(
        "anthropic/a4_thinking_tool_use_captured.next_request.json",
    ))
    .unwrap();
    assert_eq!(
        second[1]["content"][0], recorded["messages"][1]["content"][0],
        "thinking block verbatim"
    );
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert_eq!(seen.bodies[0]["tools"][1]["name"], "calc__add");
}

#[tokio::test]
async fn openai_chat_agent_runs_parallel_calls_then_answers() {
    let server = streaming_server(&[
        "openai_chat/c2_parallel_tool_calls.sse",
        "openai_chat/c1_text_include_usage.sse",
    ])
    .await;
    let log = Log::default();
    let p = planner(http_model("openai/gpt-4o", &server));
    let (outcome, machine) = drive(
        &p,
        &["GetWeatherArgs", "get_stock_price"],
        "Weather and AAPL?",
        &log,
    )
    .await;
    assert!(final_text(&outcome).starts_with("I'm unable to provide real-time weather updates."));
    let entries = log.entries();
    let starts: Vec<&String> = entries.iter().filter(|e| e.starts_with("tool_")).collect();
    assert_eq!(
        starts,
        [
            "tool_start:GetWeatherArgs",
            "tool_end:GetWeatherArgs",
            "tool_start:get_stock_price",
            "tool_end:get_stock_price"
        ]
    );
    assert!(entries.contains(&"usage:149/60".to_owned()));
    assert!(entries.contains(&"usage:14/30".to_owned()));
    assert_eq!(machine.tool_outputs().len(), 2);
    let seen = server.seen.lock().unwrap();
    let msgs = seen.bodies[1]["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["tool_call_id"], "call_JMW1whyEaYG438VE1OIflxA2");
}

#[tokio::test]
async fn openai_responses_agent_sends_the_reasoning_item_back() {
    let server = streaming_server(&[
        "openai_responses/r3_reasoning_summary_function_call.sse",
        "openai_responses/r1_text.sse",
    ])
    .await;
    let log = Log::default();
    let p = planner(http_model("openai-responses/gpt-5", &server));
    let (outcome, _) = drive(&p, &["weather", "calc.add"], "Weather in Florence?", &log).await;
    assert_eq!(final_text(&outcome), "Hi in Portuguese is \"Oi!\"");
    let entries = log.entries();
    assert_eq!(entries[0], "thinking:openai-reasoning");
    assert!(entries.contains(&"tool_start:weather".to_owned()));
    let seen = server.seen.lock().unwrap();
    let input = &seen.bodies[1]["input"];
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[1]["encrypted_content"].as_str().unwrap().len(), 1572);
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[2]["call_id"], "call_zgUaIBRPTwxxOusyyKw5NVMH");
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(seen.bodies[1]["store"], false);
}

#[tokio::test]
async fn a_call_cut_off_by_max_tokens_is_never_executed() {
    let server = streaming_server(&[
        "anthropic/a6_tool_use_truncated_max_tokens.sse",
        "anthropic/a1_text_basic.sse",
    ])
    .await;
    let log = Log::default();
    let p = planner(http_model("anthropic/claude-3-7-sonnet", &server));
    let (outcome, machine) = drive(&p, &["make_file"], "Write a tax guide", &log).await;
    assert_eq!(final_text(&outcome), "Hello there!");
    let entries = log.entries();
    assert!(
        entries.contains(&"invalid:make_file".to_owned()),
        "{entries:?}"
    );
    assert!(
        !entries.iter().any(|e| e.starts_with("tool_start")),
        "{entries:?}"
    );
    assert!(machine.tool_outputs()[0].is_error());
    // The retry tells the model why its call was not run.
    let seen = server.seen.lock().unwrap();
    let result = &seen.bodies[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["is_error"], true);
}

#[tokio::test]
async fn a_required_tool_choice_applies_until_the_run_has_tool_results() {
    let script = r#"[
      {"tool_calls": [{"id": "c1", "name": "calc.add", "arguments": {"a": 1, "b": 2}}]},
      {"tool_calls": [{"id": "c2", "name": "calc.add", "arguments": {"a": 3, "b": 4}}]},
      {"text": "done"}
    ]"#;
    for (keep, second) in [
        (false, ToolChoice::Auto),
        (true, ToolChoice::Tool("calc__add".into())),
    ] {
        let model = Arc::new(ScriptedModel::from_json("choice", script).unwrap());
        let planner = ModelPlanner::new(
            model.clone(),
            ModelPlannerConfig {
                tool_choice: ToolChoice::Tool("calc.add".into()),
                keep_tool_choice: keep,
                ..ModelPlannerConfig::default()
            },
        );
        let log = Log::default();
        let (outcome, _) = drive(&planner, &["calc.add", "weather.current"], "go", &log).await;
        assert_eq!(final_text(&outcome), "done");
        let choices: Vec<ToolChoice> = model
            .requests()
            .into_iter()
            .map(|r| r.tool_choice)
            .collect();
        // The tool's name reaches the model encoded, like the tools themselves.
        assert_eq!(
            choices[0],
            ToolChoice::Tool("calc__add".into()),
            "keep={keep}"
        );
        assert_eq!(choices[1], second, "keep={keep}");
        assert_eq!(choices.len(), 3);
    }
}
