//! The replay loop: the run machine driven by the agent's planner, with
//! tool outputs, await answers and time taken from the recording, and
//! each decision compared as the machine makes it. The planner is given
//! the recording's labels, session history, memory and prompt overrides.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use weft_core::event::EventKind;
use weft_core::model::{MODEL_SETUP_KEY, ModelSetup};
use weft_core::planner::{NoopEvents, PlanInput, Termination};
use weft_core::run::{PlanKind, RunConfig, RunMachine, RunOutcome, Step, ToolCall};
use weft_core::tool::Labels;
use weft_core::{Timestamp, TurnId};

use super::{Decision, Difference, Recording, ReplayReport, Verdict, agent_changes};
use crate::agent::Agent;
use crate::children::budget::Remainder;
use crate::context::Ctx;
use crate::error::RuntimeError;
use crate::session::{SessionMemory, mark_history};
use crate::tools::AgentTools;
use crate::toolsets::remind_availability;
use crate::turn;

/// Replays `recording` with `agent`; see the module docs. Fails only when
/// the agent's tools cannot be listed.
pub async fn replay(agent: &Agent, recording: &Recording) -> Result<ReplayReport, RuntimeError> {
    let tools = agent.current_tools(true).await?;
    let mut machine = RunMachine::new(
        RunConfig::new(
            agent.id.clone(),
            recording.session_id.clone(),
            recording.input.clone(),
        )
        .with_policy(match &recording.child_caps {
            Some(caps) => Remainder::recorded(caps).clip(agent.policy.clone()),
            None => agent.policy.clone(),
        }),
        recording.started_at,
    );
    mark_history(&mut machine, recording.history_len);
    let mut r = Replayer {
        agent,
        tools,
        recording,
        machine,
        labels: Arc::new(recording.labels.clone()),
        memory: recording.memory.clone(),
        next: 0,
        answers: 0,
        clock: recording.started_at,
        yielded_at: None,
    };
    let verdict = r.run().await;
    let setup: Option<ModelSetup> = r
        .machine
        .state()
        .get(MODEL_SETUP_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    Ok(ReplayReport {
        run_id: recording.run_id.clone(),
        matched: r.next,
        verdict,
        agent_changes: agent_changes(recording.model_setup.as_ref(), setup.as_ref()),
    })
}

/// Why the loop stopped early.
enum Stop {
    Differs(Box<Difference>),
    SoFar(String),
}

type Flow = Result<(), Stop>;

struct Replayer<'a> {
    agent: &'a Agent,
    tools: Arc<AgentTools>,
    recording: &'a Recording,
    machine: RunMachine,
    labels: Arc<Labels>,
    /// The session memory as the planner finds it: the values the run read,
    /// and the replay's own writes so far.
    memory: BTreeMap<String, Value>,
    /// The position of the next recorded decision to match.
    next: usize,
    /// How many recorded answers were given.
    answers: usize,
    /// The recorded time of the last decision matched or answer given.
    clock: Timestamp,
    /// The decision position at which a batch last stepped back so the
    /// machine could apply a recorded termination first.
    yielded_at: Option<usize>,
}

impl Replayer<'_> {
    async fn run(&mut self) -> Verdict {
        match self.drive().await {
            Ok(()) => Verdict::Identical,
            Err(Stop::SoFar(reason)) => Verdict::IdenticalSoFar { reason },
            Err(Stop::Differs(difference)) => Verdict::Differs { difference },
        }
    }

    async fn drive(&mut self) -> Flow {
        loop {
            self.compare()?;
            let now = self.now();
            if let Some(Decision::Finish {
                outcome: RunOutcome::Cancelled { reason },
            }) = self.expected()
            {
                let reason = reason.clone();
                let _ = self.machine.cancel(reason);
                continue;
            }
            match self.machine.next_step(now) {
                Step::Plan { kind, finalize } => {
                    let finalize = finalize.cloned();
                    self.plan(kind, finalize, now).await;
                }
                Step::Resolve { context } => {
                    let context = context.clone();
                    let catalog = &self.tools.catalog;
                    turn::resolve(&mut self.machine, self.agent, context, now, catalog);
                }
                Step::ExecuteTools { calls } => {
                    let calls: Vec<ToolCall> = calls.iter().cloned().collect();
                    self.execute(calls, now)?;
                }
                Step::Await { items, .. } => {
                    let ids: Vec<_> = items.iter().map(|i| i.id().clone()).collect();
                    self.answer(&ids)?;
                }
                Step::Finish { .. } => {
                    self.compare()?;
                    return match self.expected() {
                        Some(_) => Err(self.differs(None, None)),
                        None => Ok(()),
                    };
                }
            }
        }
    }

    /// The recorded decision to match next.
    fn expected(&self) -> Option<&Decision> {
        self.recording.decisions.get(self.next).map(|r| &r.decision)
    }

    /// The time the machine takes its next step at: the recorded time of
    /// the last decision matched (or answer given), or that of the next
    /// decision when it is a termination, so a time budget runs out where
    /// it ran out. A termination that cut a batch in flight (tool calls
    /// follow it) waits until that batch is being executed.
    fn now(&self) -> Timestamp {
        let decisions = &self.recording.decisions;
        match decisions.get(self.next) {
            Some(r) if matches!(r.decision, Decision::Termination { .. }) => {
                let cut_a_batch = matches!(
                    decisions.get(self.next + 1).map(|r| &r.decision),
                    Some(Decision::ToolCall { .. })
                );
                if cut_a_batch && self.yielded_at != Some(self.next) {
                    self.clock
                } else {
                    r.at.max(self.clock)
                }
            }
            _ => self.clock,
        }
    }

    fn differs(&self, got: Option<Decision>, note: Option<String>) -> Stop {
        Stop::Differs(Box::new(Difference {
            index: self.next + 1,
            turn: self.machine.turn().max(1),
            expected: self.expected().cloned(),
            got,
            note,
        }))
    }

    /// Compares the machine's new decisions with the recording's.
    fn compare(&mut self) -> Flow {
        let got: Vec<Decision> = self
            .machine
            .drain_events()
            .filter_map(|e| Decision::of(&e))
            .collect();
        for d in got {
            match self.recording.decisions.get(self.next) {
                Some(e) if e.decision.same_as(&d) => {
                    self.clock = self.clock.max(e.at);
                    self.next += 1;
                }
                None if !self.recording.finished => {
                    return Err(Stop::SoFar(format!(
                        "the recording stops after {} decisions, before the run's end",
                        self.next
                    )));
                }
                _ => return Err(self.differs(Some(d), None)),
            }
        }
        Ok(())
    }

    async fn plan(&mut self, kind: PlanKind, finalize: Option<Termination>, now: Timestamp) {
        remind_availability(&mut self.machine, &self.tools);
        let run_id = &self.recording.run_id;
        let turn_id = TurnId::from_fmt(format_args!("{run_id}/{}", self.machine.turn() + 1));
        let session_id = &self.recording.session_id;
        let run = turn::run_context(self.agent, run_id, session_id, turn_id, &self.labels);
        let tools = turn::offered_tools(&self.machine, &self.tools.specs);
        let reminders = self.machine.take_due_reminders();
        let memory = SessionMemory::over(self.memory.clone(), &self.machine);
        let ctx = Ctx::new(self.agent, run_id, self.machine.state())
            .with_prompts(self.recording.overrides.clone(), &NoopEvents)
            .with_memory(&memory);
        let base = PlanInput {
            messages: self.machine.transcript(),
            run: &run,
            context: &ctx,
            events: &NoopEvents,
            reminders: &reminders,
            tools: &tools,
        };
        let result =
            turn::call_planner(self.agent, kind, base, &self.machine, finalize.as_ref()).await;
        drop(tools);
        if let Some(changes) = ctx.into_changes() {
            changes.apply(&mut self.machine);
        }
        memory.record_reads(&mut self.machine);
        self.memory.extend(memory.take_writes());
        turn::apply_plan(
            &mut self.machine,
            self.agent,
            result,
            now,
            &self.tools.catalog,
        );
    }

    /// Feeds each call its recorded output, in the order they were recorded.
    fn execute(&mut self, mut calls: Vec<ToolCall>, now: Timestamp) -> Flow {
        let position = |call: &ToolCall| {
            self.recording.decisions[self.next..]
                .iter()
                .position(|r| matches!(&r.decision, Decision::ToolCall { tool_call_id, .. } if *tool_call_id == call.id))
                .unwrap_or(usize::MAX)
        };
        calls.sort_by_key(position);
        for call in calls {
            // The recording ended the batch with a termination here: step
            // back once so the machine applies it (at its time) first.
            if matches!(self.expected(), Some(Decision::Termination { .. }))
                && self.yielded_at != Some(self.next)
            {
                self.yielded_at = Some(self.next);
                return Ok(());
            }
            let Some(output) = self.recording.outputs.get(&call.id) else {
                let got = Decision::ToolCall {
                    tool_call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: (*call.payload).clone(),
                    result: serde_json::Value::Null,
                };
                if self.expected().is_none() && !self.recording.finished {
                    return Err(Stop::SoFar(format!(
                        "the recording stops while `{}` runs",
                        call.name
                    )));
                }
                return Err(self.differs(
                    Some(got),
                    Some("the recording has no result for this call".to_owned()),
                ));
            };
            if output.name != call.name || *output.payload != *call.payload {
                let mut output = (**output).clone();
                output.name = call.name.clone();
                output.payload = call.payload.clone();
                let got = Decision::of(&EventKind::ToolFinished {
                    output: Arc::new(output),
                });
                return Err(self.differs(got, None));
            }
            if let Err(e) = self.machine.tool_result(output.clone(), now) {
                return Err(
                    self.differs(None, Some(format!("the recorded result was refused: {e}")))
                );
            }
            self.compare()?;
        }
        Ok(())
    }

    /// Gives the await the recorded answers to its items.
    fn answer(&mut self, items: &[weft_core::AwaitItemId]) -> Flow {
        loop {
            let Some(a) = self.recording.answers.get(self.answers) else {
                return Err(Stop::SoFar(
                    "the recording stops while the run awaits answers".to_owned(),
                ));
            };
            if !items.contains(&a.item_id) {
                return Err(self.differs(
                    None,
                    Some(format!(
                        "the recording answers `{}`, which the replay did not ask",
                        a.item_id
                    )),
                ));
            }
            self.answers += 1;
            self.clock = self.clock.max(a.at);
            match self.machine.answer(&a.item_id, a.answer.clone(), a.at) {
                Ok(weft_core::run::AwaitProgress::Satisfied) => return Ok(()),
                Ok(_) => {}
                Err(e) => {
                    return Err(
                        self.differs(None, Some(format!("the recorded answer was refused: {e}")))
                    );
                }
            }
        }
    }
}
