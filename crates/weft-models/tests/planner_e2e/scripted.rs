//! The model planner against the scripted model: tool turns, resolution
//! of bad calls, finalization, model errors and tool choice.

use crate::harness::{Ctx, Log, answer, logged, planner, run_context, spec};
use std::sync::Arc;
use weft_core::message::{Message, Part};
use weft_core::model::{ModelError, ToolChoice};
use weft_core::planner::{PlanInput, PlanResumeInput, Planner, PlannerError};
use weft_models::{ModelPlanner, ModelPlannerConfig, ScriptedModel};

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
    let run = answer(
        &planner(model.clone()),
        &["calc.add", "weather.current"],
        "2+3 and weather?",
    )
    .await;
    assert_eq!(run.text, "5, and sunny.");
    assert_eq!(
        run.entries,
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
    assert_eq!(run.machine.tool_outputs().len(), 2);
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
    let run = answer(
        &planner(model.clone()),
        &["calc.add", "weather.current"],
        "go",
    )
    .await;
    assert_eq!(run.text, "done");
    let entries = run.entries;
    assert!(logged(&entries, "invalid:calc.add"), "{entries:?}");
    assert!(logged(&entries, "invalid:nope.tool"), "{entries:?}");
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
    let run = run_context();
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
            tool_outputs: &Default::default(),
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
    let run = run_context();
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
        let run = answer(&planner, &["calc.add", "weather.current"], "go").await;
        assert_eq!(run.text, "done");
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
