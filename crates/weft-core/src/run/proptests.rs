//! Property tests: a random driver feeds the machine random planner decisions,
//! tool outcomes, awaits (clarifications, multiple-choice questions, external
//! tool results, confirmations), questions of running calls, child runs (an
//! agent tool whose call is a whole nested run), cancels and clock jumps, and
//! checks the invariants. Policies allow and deny tools by name and tag, and
//! clarifications restrict the next turn to one tool: the tools offered each
//! turn are the ones the policy and the restriction allow, and no other is
//! ever executed; a tool the policy says must be called alone never runs
//! beside another.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;

use super::tests::TestCatalog;
use super::*;
use crate::awaiting::{
    AwaitAnswer, AwaitItem, Clarification, ExternalToolCall, ExternalTools, Question,
    QuestionOption, Questions,
};
use crate::elicitation::{ElicitationAction, ElicitationRequest};
use crate::event::EventKind;
use crate::ids::{AwaitItemId, ToolCallId};
use crate::message::{Message, Part, Role};
use crate::planner::{PlanResult, ToolCallRequest};
use crate::time::Timestamp;
use crate::tool::{ToolError, ToolOutput};

/// `value` through MessagePack as the in-memory store seals it (structs
/// as maps, human-readable).
fn via_msgpack<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    let mut bytes = Vec::new();
    let mut ser = rmp_serde::Serializer::new(&mut bytes)
        .with_struct_map()
        .with_human_readable();
    value.serialize(&mut ser).unwrap();
    let mut de = rmp_serde::Deserializer::from_read_ref(&bytes).with_human_readable();
    T::deserialize(&mut de).unwrap()
}

/// A stream of random choices; exhausted choices read as zero.
struct Choices<'a> {
    raw: &'a [u32],
    pos: usize,
}

impl Choices<'_> {
    fn next(&mut self, n: u32) -> u32 {
        let v = self.raw.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        v % n.max(1)
    }
    fn exhausted(&self) -> bool {
        self.pos >= self.raw.len()
    }
}

/// What the driver observed, for invariant checks.
#[derive(Default, Debug, PartialEq)]
struct Observed {
    executed: BTreeSet<ToolCallId>,
    answered: BTreeMap<ToolCallId, u32>,
    max_batch: usize,
    log: Vec<String>,
    /// The tool an answered clarification restricts the next turn to.
    restrict: Option<String>,
    /// The tools the last turn could call.
    offered: BTreeSet<String>,
}

impl Observed {
    /// A fresh record that knows what the driver knew at a split: the
    /// restriction in force and the tools the last turn could call.
    fn carried(&self) -> Self {
        Self {
            restrict: self.restrict.clone(),
            offered: self.offered.clone(),
            ..Self::default()
        }
    }
}

/// A driver-side check (the driver returns `bool`, not a test result).
fn prop_assert_ok(ok: bool, what: &str) {
    assert!(ok, "{what}");
}

/// The agent tool: a call of it is a whole child run.
const AGENT_TOOL: &str = "team.helper";

/// How deep child runs nest.
const MAX_DEPTH: u32 = 2;

/// The catalog every property run uses: the test tools and the agent tool,
/// tagged for the tool policy.
fn catalog() -> TestCatalog {
    TestCatalog::new()
        .with_tool(AGENT_TOOL)
        .with_tags("calc.add", &["math"])
        .with_tags("calc.echo", &["text"])
        .with_tags(AGENT_TOOL, &["delegate", "text"])
}

/// The tools a turn may call, as the machine says ([`RunMachine::is_allowed`]).
fn allowed_by_machine(m: &RunMachine, cat: &TestCatalog) -> BTreeSet<String> {
    cat.names()
        .iter()
        .filter(|n| cat.spec(n.as_str()).is_some_and(|s| m.is_allowed(s)))
        .map(|n| n.as_str().to_owned())
        .collect()
}

/// The tools a turn may call, as the driver expects: none while finalizing,
/// else those the policy permits and the restriction (if any) names.
fn allowed_by_rule(
    m: &RunMachine,
    cat: &TestCatalog,
    obs: &Observed,
    finalizing: bool,
) -> BTreeSet<String> {
    if finalizing {
        return BTreeSet::new();
    }
    cat.names()
        .iter()
        .filter(|n| cat.spec(n.as_str()).is_some_and(|s| m.policy().permits(s)))
        .filter(|n| obs.restrict.as_deref().is_none_or(|r| r == n.as_str()))
        .map(|n| n.as_str().to_owned())
        .collect()
}

/// Drives one step; returns false when the run has finished.
fn drive_one(
    m: &mut RunMachine,
    now: &mut u64,
    c: &mut Choices<'_>,
    obs: &mut Observed,
    cat: &TestCatalog,
) -> bool {
    drive_at(m, now, c, obs, cat, 0)
}

/// [`drive_one`] for a run `depth` levels below the top one.
fn drive_at(
    m: &mut RunMachine,
    now: &mut u64,
    c: &mut Choices<'_>,
    obs: &mut Observed,
    cat: &TestCatalog,
    depth: u32,
) -> bool {
    *now += u64::from(c.next(4)) * u64::from(c.next(40));
    let at = Timestamp::from_millis(*now);
    if !c.exhausted() && c.next(50) == 0 {
        obs.log.push("cancel".into());
        let _ = m.cancel("random cancel");
    }
    if !c.exhausted() && c.next(20) == 0 {
        // A human pauses or continues the run; the driver keeps stepping
        // (time accounting is what a pause changes for the machine).
        obs.log.push("pause toggle".into());
        let _ = if m.is_paused() {
            m.continue_run(at)
        } else {
            m.pause(at)
        };
    }
    let step = m.next_step(at);
    obs.log.push(format!("{step:?}"));
    match step {
        Step::Finish { .. } => false,
        Step::Plan { finalize, .. } => {
            let finalizing = finalize.is_some();
            // Before every model turn, every earlier call is answered.
            if let Err(e) = check_transcript(m, true) {
                panic!("{e}");
            }
            // The turn is offered exactly what the policy and an answered
            // clarification's restriction allow.
            let offered = allowed_by_machine(m, cat);
            assert_eq!(offered, allowed_by_rule(m, cat, obs, finalizing));
            obs.offered = offered;
            let pick = if c.exhausted() || finalizing {
                0
            } else {
                c.next(10)
            };
            // Ids of calls the planner names itself are unique in the run.
            let tag = format!("{}_{}", m.transcript().len(), now);
            let result = match pick {
                0 => PlanResult::final_text("done"),
                // A child run ends with its parent's tool result.
                6 => PlanResult::new(crate::planner::Decision::FinalToolResult {
                    result: json!({"answer": c.next(9)}),
                }),
                1 => PlanResult::await_items(vec![clarification(&tag, c)]),
                7 => PlanResult::await_items(vec![questions(&tag, c)]),
                8 => PlanResult::await_items(vec![external(&tag, c)]),
                9 => PlanResult::await_items(vec![
                    external(&tag, c),
                    clarification(&tag, c),
                    questions(&tag, c),
                ]),
                _ => {
                    let n = 1 + c.next(4);
                    let calls = (0..n)
                        .map(|_| match c.next(10) {
                            0 => ToolCallRequest::new("calc.nope", json!({})),
                            1 => ToolCallRequest {
                                id: None,
                                name: "calc.add".into(),
                                arguments: crate::planner::CallArguments::Raw("{oops".into()),
                                parent_tool_call_id: None,
                            },
                            2 => ToolCallRequest::new("calc.add", json!({"a": "x"})),
                            3 => ToolCallRequest::new("calc.echo", json!({"n": c.next(9)})),
                            4 => ToolCallRequest::new(AGENT_TOOL, json!({"task": c.next(9)})),
                            _ => ToolCallRequest::new("calc.add", json!({"a": 1, "b": c.next(9)})),
                        })
                        .collect();
                    PlanResult::tool_calls(calls)
                }
            };
            match m.plan_result(result, at, cat) {
                // The restriction holds while the turn's calls are resolved.
                Ok(PlanOutcome::NeedsResolution(_)) => {}
                Ok(_) => obs.restrict = None,
                Err(RunError::Finalizing) => {
                    unreachable!("driver never sends calls while finalizing")
                }
                Err(e) => panic!("unexpected plan error {e}"),
            }
            true
        }
        Step::Resolve { context } => {
            let retries_left = context.retries_left;
            let res = match c.next(4) {
                0 => Resolution::Fail,
                1 if retries_left > 0 => Resolution::Retry {
                    feedback: "fix it".into(),
                },
                2 if matches!(
                    context.reason,
                    InvalidReason::UnknownTool | InvalidReason::NotAllowed
                ) =>
                {
                    Resolution::Repair {
                        tool: "calc.echo".into(),
                    }
                }
                _ => Resolution::Skip {
                    reason: "skipped".into(),
                },
            };
            let before = m.clone();
            let outcome = match m.resolve(res, at, cat) {
                // A repair may only call a tool the turn was offered.
                Err(RunError::RepairNotAllowed(tool)) => {
                    prop_assert_ok(!obs.offered.contains(tool.as_str()), "repair refused");
                    assert_eq!(&before, m);
                    let skip = Resolution::Skip {
                        reason: "skipped".into(),
                    };
                    m.resolve(skip, at, cat).unwrap()
                }
                other => other.unwrap(),
            };
            if !matches!(outcome, PlanOutcome::NeedsResolution(_)) {
                obs.restrict = None;
            }
            true
        }
        Step::ExecuteTools { calls } => {
            let pending: Vec<ToolCall> = calls.iter().cloned().collect();
            obs.max_batch = obs.max_batch.max(pending.len());
            // A tool that must be called alone only ever runs alone.
            let exclusive = &m.policy().exclusive_tools;
            prop_assert_ok(
                pending.len() == 1 || !pending.iter().any(|c| exclusive.contains(&c.name)),
                "a tool that must be called alone runs beside others",
            );
            for call in &pending {
                // Each call is executed once, when first seen; a recovering driver
                // sees only calls still without a result.
                obs.executed.insert(call.id.clone());
                // Only a tool its turn was offered ever runs.
                prop_assert_ok(
                    obs.offered.contains(call.name.as_str()),
                    "a tool the turn was not offered runs",
                );
            }
            // Running calls sometimes ask the human, and some questions are
            // answered (badly first) before results land.
            for call in &pending {
                if c.next(4) == 0 {
                    let request = ElicitationRequest::form(
                        "name?",
                        json!({"type": "object", "properties": {"name": {"type": "string"}},
                               "required": ["name"]}),
                    );
                    let asked = m.elicit(&call.id, request, at);
                    let bounded = matches!(asked, Err(RunError::TooManyElicitations { .. }));
                    prop_assert_ok(asked.is_ok() || bounded, "elicit refused");
                }
            }
            let asked: Vec<AwaitItemId> = m.elicitations().iter().map(|e| e.id.clone()).collect();
            for id in asked {
                if c.next(2) == 0 {
                    continue;
                }
                let before = m.clone();
                let bad = AwaitAnswer::Elicitation {
                    action: ElicitationAction::Accept,
                    content: Some(json!({})),
                };
                assert!(m.answer(&id, bad, at).is_err());
                assert_eq!(&before, m);
                let action = match c.next(3) {
                    0 => ElicitationAction::Decline,
                    1 => ElicitationAction::Cancel,
                    _ => ElicitationAction::Accept,
                };
                let content = (action == ElicitationAction::Accept).then(|| json!({"name": "Ada"}));
                m.answer(&id, AwaitAnswer::Elicitation { action, content }, at)
                    .unwrap();
            }
            // Answer a random non-empty prefix, in reverse order.
            let k = 1 + c.next(u32::try_from(pending.len()).unwrap_or(1)) as usize;
            for call in pending[..k].iter().rev() {
                let out = if call.name.as_str() == AGENT_TOOL {
                    child_run(call, now, c, cat, depth)
                } else if c.next(3) == 0 {
                    ToolOutput::error(
                        call.id.clone(),
                        call.name.clone(),
                        call.payload.clone(),
                        ToolError::new("x", "y"),
                    )
                } else {
                    ToolOutput::ok(
                        call.id.clone(),
                        call.name.clone(),
                        call.payload.clone(),
                        json!(1),
                    )
                };
                m.tool_result(out.clone(), at).unwrap();
                *obs.answered.entry(call.id.clone()).or_default() += 1;
                // A second answer is always rejected.
                assert!(m.tool_result(out, at).is_err());
            }
            true
        }
        Step::Await { items, .. } => {
            let items: Vec<AwaitItem> = items.to_vec();
            for item in items {
                let id = item.id().clone();
                let before = m.clone();
                // A wrong answer is refused and changes nothing.
                let bad = match &item {
                    AwaitItem::Questions(q) => AwaitAnswer::Questions {
                        answers: [(q.questions[0].id.clone(), vec!["nope".to_owned()])].into(),
                    },
                    AwaitItem::ExternalTools(e) => AwaitAnswer::ExternalTools {
                        results: external_results(&e.items[1..], c),
                    },
                    _ => AwaitAnswer::Clarification { text: "  ".into() },
                };
                assert!(m.answer(&id, bad, at).is_err());
                assert_eq!(&before, m);
                let answer = match &item {
                    AwaitItem::Confirmation(_) => AwaitAnswer::Confirmation {
                        approved: c.next(2) == 0,
                        reason: None,
                    },
                    AwaitItem::Questions(q) => AwaitAnswer::Questions {
                        answers: q
                            .questions
                            .iter()
                            .map(|q| {
                                let n = if q.allow_multiple { 1 + c.next(3) } else { 1 };
                                let chosen = q.options[..n as usize]
                                    .iter()
                                    .map(|o| o.id.clone())
                                    .collect();
                                (q.id.clone(), chosen)
                            })
                            .collect(),
                    },
                    AwaitItem::ExternalTools(e) => {
                        let mut results = external_results(&e.items, c);
                        if c.next(2) == 0 {
                            results.reverse();
                        }
                        AwaitAnswer::ExternalTools { results }
                    }
                    _ => AwaitAnswer::Clarification {
                        text: "answer".into(),
                    },
                };
                m.answer(&id, answer, at).unwrap();
                if let AwaitItem::Clarification(q) = &item {
                    obs.restrict = q.restrict_to_tool.as_ref().map(|t| t.as_str().to_owned());
                }
            }
            true
        }
    }
}

/// A clarification, sometimes restricting the next turn to one tool (the
/// agent tool, one the policy may deny, or one no catalog has).
fn clarification(tag: &str, c: &mut Choices<'_>) -> AwaitItem {
    let restrict_to_tool = match c.next(6) {
        0 => Some("calc.add"),
        1 => Some("calc.echo"),
        2 => Some(AGENT_TOOL),
        3 => Some("calc.nope"),
        _ => None,
    };
    AwaitItem::Clarification(Clarification {
        id: AwaitItemId::new(format!("q{tag}")),
        question: "?".into(),
        missing_fields: vec![],
        restrict_to_tool: restrict_to_tool.map(Into::into),
        example_input: None,
        clarifying_prompt: None,
    })
}

/// One or two multiple-choice questions of three options, tied to a call.
fn questions(tag: &str, c: &mut Choices<'_>) -> AwaitItem {
    let option = |id: &str| QuestionOption {
        id: id.to_owned(),
        label: id.to_uppercase(),
    };
    AwaitItem::Questions(Questions {
        id: AwaitItemId::new(format!("mc{tag}")),
        tool_name: "ask.choose".into(),
        tool_call_id: ToolCallId::new(format!("mc{tag}")),
        payload: json!({}),
        title: None,
        questions: (0..1 + c.next(2))
            .map(|i| Question {
                id: format!("q{i}"),
                prompt: "which?".into(),
                options: vec![option("a"), option("b"), option("c")],
                allow_multiple: c.next(2) == 0,
            })
            .collect(),
    })
}

/// One to three calls executed outside the runtime.
fn external(tag: &str, c: &mut Choices<'_>) -> AwaitItem {
    AwaitItem::ExternalTools(ExternalTools {
        id: AwaitItemId::new(format!("ext{tag}")),
        items: (0..1 + c.next(3))
            .map(|i| ExternalToolCall {
                tool_name: "remote.run".into(),
                tool_call_id: ToolCallId::new(format!("ext{tag}_{i}")),
                payload: json!({"i": i}),
            })
            .collect(),
    })
}

fn external_results(calls: &[ExternalToolCall], c: &mut Choices<'_>) -> Vec<ToolOutput> {
    calls
        .iter()
        .map(|call| {
            let (id, name, payload) = (
                call.tool_call_id.clone(),
                call.tool_name.clone(),
                call.payload.clone(),
            );
            if c.next(3) == 0 {
                ToolOutput::error(id, name, payload, ToolError::new("x", "y"))
            } else {
                ToolOutput::ok(id, name, payload, json!("done"))
            }
        })
        .collect()
}

/// Runs a call of the agent tool as a whole child run (with a policy of
/// its own and the same random choices) and returns its end as the call's
/// output: the child's transcript keeps the invariant too.
fn child_run(
    call: &ToolCall,
    now: &mut u64,
    c: &mut Choices<'_>,
    cat: &TestCatalog,
    depth: u32,
) -> ToolOutput {
    let (id, name, payload) = (call.id.clone(), call.name.clone(), call.payload.clone());
    if depth + 1 >= MAX_DEPTH {
        return ToolOutput::ok(id, name, payload, json!("too deep to delegate"));
    }
    let policy = policy_from((
        c.next(256) as u8,
        c.next(256) as u8,
        c.next(256) as u8,
        c.next(65_536) as u16,
    ));
    let mut child = RunMachine::new(
        RunConfig::new("helper", "session", vec![Message::user("sub-task")]).with_policy(policy),
        Timestamp::from_millis(*now),
    );
    let mut obs = Observed::default();
    let mut steps = 0;
    while drive_at(&mut child, now, c, &mut obs, cat, depth + 1) {
        steps += 1;
        assert!(steps < MAX_STEPS, "child run did not finish");
    }
    let complete = matches!(
        child.outcome(),
        Some(RunOutcome::Response { .. } | RunOutcome::ToolResult { .. })
    );
    if let Err(e) = check_transcript(&child, complete) {
        panic!("child run: {e}");
    }
    match child.outcome() {
        Some(RunOutcome::Response { message, .. }) => {
            ToolOutput::ok(id, name, payload, json!(message.joined_text()))
        }
        Some(RunOutcome::ToolResult { result, .. }) => {
            ToolOutput::ok(id, name, payload, result.clone())
        }
        other => ToolOutput::error(
            id,
            name,
            payload,
            ToolError::new("child_failed", format!("{other:?}")),
        ),
    }
}

/// The transcript invariant: every tool call of an assistant turn is
/// answered exactly once, in the order of the calls, by the messages that
/// follow it and come before the next assistant turn. With `complete`
/// unset, the last turn's calls may still be running.
fn check_transcript(m: &RunMachine, complete: bool) -> Result<(), TestCaseError> {
    let msgs: Vec<&Message> = m.transcript().iter().collect();
    let mut i = 0;
    while i < msgs.len() {
        let uses: Vec<&ToolCallId> = msgs[i]
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolUse { id, .. } => Some(id),
                _ => None,
            })
            .collect();
        i += 1;
        if uses.is_empty() {
            continue;
        }
        let mut results = Vec::new();
        while i < msgs.len() && msgs[i].role != Role::Assistant {
            results.extend(msgs[i].parts.iter().filter_map(|p| match p {
                Part::ToolResult { tool_use_id, .. } => Some(tool_use_id),
                _ => None,
            }));
            i += 1;
        }
        let last_turn = i >= msgs.len();
        if last_turn && !complete && results.is_empty() {
            continue;
        }
        prop_assert_eq!(
            results,
            uses,
            "tool calls not answered once, in order, before the next turn"
        );
    }
    Ok(())
}

fn policy_from(p: (u8, u8, u8, u16)) -> Policy {
    Policy {
        max_tool_calls: NonZeroU32::new(u32::from(p.0 % 12)),
        max_tool_calls_per_turn: NonZeroU32::new(u32::from(p.1 % 4)),
        max_consecutive_failures: NonZeroU32::new(u32::from(p.2 % 4)),
        time_budget: (!p.3.is_multiple_of(3))
            .then(|| Duration::from_millis(u64::from(p.3) % 2000 + 1)),
        finalizer_grace: Duration::from_millis(100),
        confirm_tools: if p.1.is_multiple_of(3) {
            ["calc.echo".into()].into_iter().collect()
        } else {
            Default::default()
        },
        // Some runs may not call `calc.add` at all (the tool policy).
        denied_tools: if p.2.is_multiple_of(5) {
            ["calc.add".into()].into_iter().collect()
        } else {
            Default::default()
        },
        // Some may call only some tools, by name and by tag; a denial wins.
        allowed_tools: match (p.0 / 12) % 4 {
            2 => Some(["calc.add".into(), "calc.echo".into()].into()),
            3 => Some(["calc.echo".into(), AGENT_TOOL.into()].into()),
            _ => None,
        },
        allowed_tags: match (p.3 / 3) % 5 {
            0 => Some(["math".to_owned()].into()),
            1 => Some(["text".to_owned()].into()),
            _ => None,
        },
        denied_tags: if (p.3 / 15).is_multiple_of(4) {
            ["delegate".to_owned()].into()
        } else {
            Default::default()
        },
        // Some must call `calc.echo` alone (as the advisor is called).
        exclusive_tools: if (p.0 / 48) % 3 == 1 {
            ["calc.echo".into()].into_iter().collect()
        } else {
            Default::default()
        },
        ..Policy::default()
    }
}

/// The machine's state as the projection of its events can see it.
fn check_projection(m: &RunMachine, log: &[EventKind]) -> Result<(), TestCaseError> {
    let p = RunProjection::of(log);
    prop_assert_eq!(p.agent_id.as_ref().map(|a| a.as_str()), Some("agent"));
    prop_assert_eq!(p.outcome.as_ref(), m.outcome());
    prop_assert_eq!(p.termination.as_ref(), m.termination());
    prop_assert_eq!(p.paused, m.is_paused() && m.outcome().is_none());
    // Every recorded output was announced once; in-batch results are
    // announced as they land, before the batch completes.
    let mut recorded: Vec<&ToolCallId> = m
        .tool_outputs()
        .iter()
        .chain(m.batch_results())
        .map(|o| &o.tool_call_id)
        .collect();
    let mut announced: Vec<&ToolCallId> = p.outputs.iter().map(|o| &o.tool_call_id).collect();
    recorded.sort();
    announced.sort();
    prop_assert_eq!(recorded, announced);
    for o in m.tool_outputs() {
        prop_assert!(p.outputs.iter().any(|a| a == o), "output differs: {o:?}");
    }
    let awaiting: Vec<AwaitItemId> = match m.clone().next_step(Timestamp::from_millis(0)) {
        Step::Await { items, answers } => items
            .iter()
            .zip(answers)
            .filter(|(_, a)| a.is_none())
            .map(|(i, _)| i.id().clone())
            .collect(),
        _ => Vec::new(),
    };
    // Pending questions of running calls are open items too.
    let awaiting: Vec<AwaitItemId> = awaiting
        .into_iter()
        .chain(m.elicitations().iter().map(|e| e.id.clone()))
        .collect();
    let open: Vec<AwaitItemId> = p
        .awaiting
        .iter()
        .map(|i| i.id().clone())
        .filter(|id| !p.answered.contains(id))
        .collect();
    prop_assert_eq!(awaiting, open);
    Ok(())
}

fn new_machine(policy: Policy) -> RunMachine {
    RunMachine::new(
        RunConfig::new("agent", "session", vec![Message::user("go")]).with_policy(policy),
        Timestamp::from_millis(0),
    )
}

const MAX_STEPS: usize = 400;

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold(p in any::<(u8, u8, u8, u16)>(), raw in proptest::collection::vec(any::<u32>(), 0..300)) {
        let cat = catalog();
        let policy = policy_from(p);
        let mut m = new_machine(policy.clone());
        let mut c = Choices { raw: &raw, pos: 0 };
        let mut obs = Observed::default();
        let mut now = 0u64;
        let mut steps = 0;
        while drive_one(&mut m, &mut now, &mut c, &mut obs, &cat) {
            steps += 1;
            prop_assert!(steps < MAX_STEPS, "run did not finish");
            if let Some(max) = policy.max_tool_calls {
                prop_assert!(m.tool_calls_made() <= max.get());
            }
        }
        if let Some(max) = policy.max_tool_calls_per_turn {
            prop_assert!(obs.max_batch <= max.get() as usize);
        }
        // Every executed call was answered exactly once and has exactly one output.
        for id in &obs.executed {
            let outputs = m.tool_outputs().iter().filter(|o| &o.tool_call_id == id).count();
            let answered = obs.answered.get(id).copied().unwrap_or(0);
            prop_assert!(answered <= 1, "call {id} answered {answered} times");
            // A call cancelled by the time budget or the run has an output but no driver answer.
            prop_assert!(outputs <= 1, "call {id} has {outputs} outputs");
        }
        check_transcript(&m, matches!(m.outcome(), Some(RunOutcome::Response { .. } | RunOutcome::ToolResult { .. })))?;
        // No tool output id appears twice in the run.
        let mut seen = BTreeSet::new();
        for o in m.tool_outputs() {
            prop_assert!(seen.insert(o.tool_call_id.clone()), "duplicate output {}", o.tool_call_id);
        }
        prop_assert!(m.outcome().is_some());
    }

    #[test]
    fn serde_round_trip_at_any_step_behaves_identically(
        p in any::<(u8, u8, u8, u16)>(),
        raw in proptest::collection::vec(any::<u32>(), 0..200),
        split in 0usize..60,
    ) {
        let cat = catalog();
        let mut m = new_machine(policy_from(p));
        let mut c = Choices { raw: &raw, pos: 0 };
        let mut obs = Observed::default();
        let mut now = 0u64;
        let mut running = true;
        for _ in 0..split {
            if !drive_one(&mut m, &mut now, &mut c, &mut obs, &cat) {
                running = false;
                break;
            }
        }
        let json = serde_json::to_string(&m).unwrap();
        let mut copy: RunMachine = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&copy, &m);
        // The in-memory store seals finished runs as MessagePack.
        prop_assert_eq!(&via_msgpack(&m), &m);
        // Every machine the transitions reach is a valid snapshot.
        prop_assert_eq!(copy.validate(), Ok(()));
        // Split for storage (a head, its messages and outputs), it comes back whole.
        let head = serde_json::to_string(&m.snapshot_head()).unwrap();
        let parts = RunMachine::from_parts(
            serde_json::from_str(&head).unwrap(),
            m.transcript().iter().cloned().collect(),
            m.tool_outputs().iter().cloned().collect(),
        );
        prop_assert_eq!(parts.as_ref(), Ok(&copy));
        let (mut c2, mut now2) = (Choices { raw: &raw, pos: c.pos }, now);
        let (mut obs1, mut obs2) = (obs.carried(), obs.carried());
        let mut steps = 0;
        while running {
            let a = drive_one(&mut m, &mut now, &mut c, &mut obs1, &cat);
            let b = drive_one(&mut copy, &mut now2, &mut c2, &mut obs2, &cat);
            prop_assert_eq!(a, b);
            running = a;
            steps += 1;
            prop_assert!(steps < MAX_STEPS);
        }
        prop_assert_eq!(&obs1, &obs2);
        prop_assert_eq!(&copy, &m);
    }

    #[test]
    fn the_event_log_tells_the_machine_state(
        p in any::<(u8, u8, u8, u16)>(),
        raw in proptest::collection::vec(any::<u32>(), 0..300),
    ) {
        let cat = catalog();
        let mut m = new_machine(policy_from(p));
        let mut c = Choices { raw: &raw, pos: 0 };
        let mut obs = Observed::default();
        let mut now = 0u64;
        let mut log: Vec<EventKind> = m.drain_events().collect();
        let starts = matches!(log.as_slice(), [EventKind::RunStarted { .. }]);
        prop_assert!(starts, "the first event is RunStarted");
        let mut steps = 0;
        loop {
            let running = drive_one(&mut m, &mut now, &mut c, &mut obs, &cat);
            log.extend(m.drain_events());
            check_projection(&m, &log)?;
            if !running {
                break;
            }
            steps += 1;
            prop_assert!(steps < MAX_STEPS);
        }
        // The in-memory store seals a finished run's log as MessagePack.
        let events: Vec<_> = log
            .iter()
            .zip(1..)
            .map(|(kind, seq)| crate::event::RunEvent {
                seq,
                at: Timestamp::from_millis(seq * 7),
                kind: kind.clone(),
            })
            .collect();
        prop_assert_eq!(&via_msgpack(&events), &events);
        // The log ends with the outcome, announced once.
        let finished = log.iter().filter(|e| e.is_terminal()).count();
        prop_assert_eq!(finished, 1);
        let last_is_terminal = log.last().is_some_and(EventKind::is_terminal);
        prop_assert!(last_is_terminal);
    }
}
