//! Executing a batch of tool calls: concurrently, under their timeouts and
//! the payload budget, raced against cancellation and the run's deadline,
//! each result committed as it lands (the batch's last with the next plan,
//! see `RunTask::defer`). Running calls may ask the human meanwhile
//! ([`super::elicit`]).
//!
//! Each call runs as a task of its own (aborted when the batch is dropped),
//! never as a future the driver keeps polling: while the driver awaits a
//! commit, a call must still make progress, since it may hold what that
//! commit waits for (an agent called as a tool writes its child run through
//! the same store, whose SQLite writer is a single connection). The one
//! exception is cheap: the lone call of a batch is polled once in place
//! first, and becomes a task only if it is not done then, so an in-process
//! tool that answers at once costs no task, wake-up or timer.

use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Sleep;

use super::elicit::Waiting;
use super::log::FLUSH_EVERY;
use super::*;
use crate::advisor;
use crate::inbox::DriverMsg;
use futures_util::FutureExt as _;
use futures_util::future::Either;
use tracing::Instrument as _;
use weft_core::child::{ChildLinker, Children, ParentLink};
use weft_core::elicitation::Elicitor;
use weft_core::tool::ToolResultBody;

impl RunTask {
    /// Executes a batch concurrently, committing each result as it lands.
    pub(super) async fn execute(&mut self, calls: Vec<ToolCall>) -> Result<(), RuntimeError> {
        self.collect();
        let limits = Limits {
            timeout: self.agent.tool_timeout,
            payload_budget: self.payload_budget,
        };
        // Only a batch with a call that can ask the user opens the inbox.
        let eliciting = calls.iter().any(|c| self.tools.can_elicit(&c.name));
        let (inbox, mut messages) = if eliciting {
            let (tx, rx) = self.shared.inbox.open();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let mut waiting = Waiting::default();
        let mut running = JoinSet::new();
        let turn_id = self.turn_id(self.machine.turn());
        // What the run's caps leave for the child runs its calls start.
        let allowance = self.machine.child_allowance(self.now());
        // A lone call may be polled in place first; the calls of a larger
        // batch start as tasks at once, so they run side by side.
        let inline = calls.len() == 1;
        let mut ready = Vec::new();
        for call in &calls {
            // The tool, the events and the output share the call's
            // arguments; a description argument is taken out of a copy.
            let mut payload = call.payload.clone();
            let description = match self.tools.spec(&call.name) {
                Some(spec) if self.agent.describe_calls => {
                    let mut stripped = (*payload).clone();
                    let found = weft_tools::strip_description_for(spec, &mut stripped);
                    if found.is_some() {
                        payload = Arc::new(stripped);
                    }
                    found
                }
                _ => None,
            };
            let shown = payload.clone();
            self.emit(EventKind::ToolStarted {
                tool_call_id: call.id.clone(),
                tool: call.name.clone(),
                payload: shown,
                description,
            });
            let request = ToolRequest {
                name: call.name.clone(),
                payload,
                run_id: self.shared.run_id.clone(),
                session_id: self.session_id.clone(),
                turn_id: turn_id.clone(),
                tool_call_id: call.id.clone(),
                parent_tool_call_id: call.parent_tool_call_id.clone(),
                labels: (*self.labels).clone(),
                output: self.output_sink(call.id.clone()),
                elicit: match &inbox {
                    Some(tx) if self.tools.can_elicit(&call.name) => {
                        Self::elicitor(call.id.clone(), tx.clone())
                    }
                    _ => Elicitor::detached(),
                },
                children: Children::attached(
                    self.children.clone(),
                    ParentLink::new(self.shared.run_id.clone(), call.id.clone(), allowance)
                        .with_linker(match &inbox {
                            Some(tx) => Self::linker(call.id.clone(), tx.clone()),
                            None => ChildLinker::detached(),
                        }),
                ),
            };
            let span = tracing::info_span!(
                "tool",
                tool_call_id = %call.id,
                tool = %call.name,
            );
            // The GenAI span is entered inside the log span, so a tool
            // adapter's current span is `execute_tool` (whose context it
            // propagates) while its log lines keep the `tool` span.
            let genai = spans::execute_tool(call);
            let call_future = match &self.agent.advisor {
                Some(config) if call.name.as_str() == advisor::TOOL => {
                    Either::Left(advisor::ask(advisor::AskInput {
                        config: config.clone(),
                        messages: self.machine.transcript().shared().cloned().collect(),
                        used: advisor::uses(&self.machine),
                        id: call.id.clone(),
                        name: call.name.clone(),
                        payload: call.payload.clone(),
                        output: request.output,
                    }))
                }
                _ => Either::Right(self.tools.execute(call, request, limits)),
            };
            let observer = self.observer.clone();
            let started = observer.wants_durations().then(Instant::now);
            let ended = genai.clone();
            let timed = async move {
                let out = call_future.await;
                spans::tool_ended(&ended, &out);
                observer.observe(&Observation::ToolCall {
                    tool: out.name.as_str(),
                    elapsed: started.map_or(Duration::ZERO, |s| s.elapsed()),
                    failed: matches!(out.result, ToolResultBody::Error(_)),
                });
                out
            };
            let call = timed.instrument(genai).instrument(span);
            if inline {
                // Polled once here: a call that is done at once (an
                // in-process tool) costs no task, no wake-up and no timer.
                let mut call = Box::pin(call);
                match (&mut call).now_or_never() {
                    Some(out) => ready.push(out),
                    None => {
                        running.spawn(call);
                    }
                }
            } else {
                running.spawn(call);
            }
        }
        drop(inbox);
        let result = self
            .run_batch(&mut running, ready, messages.as_mut(), &mut waiting)
            .await;
        // Calls the batch abandoned (a cancel, the time budget, a failed
        // commit) end before the driver moves on, while it still holds the
        // run's lease: an agent called as a tool cancels its child then.
        running.shutdown().await;
        if eliciting {
            self.shared.inbox.close();
        }
        result
    }

    /// Feeds results, elicitations and answers to the machine until the
    /// batch is over, committing after each. `ready` are results of calls
    /// that finished when first polled.
    async fn run_batch(
        &mut self,
        running: &mut JoinSet<ToolOutput>,
        ready: Vec<ToolOutput>,
        mut messages: Option<&mut mpsc::UnboundedReceiver<DriverMsg>>,
        waiting: &mut Waiting,
    ) -> Result<(), RuntimeError> {
        for out in ready {
            self.finish_call(out);
            self.after_result(waiting).await?;
        }
        let cancel = self.shared.cancel.clone();
        // Events of running calls (their start, their live output) are
        // committed every `FLUSH_EVERY`, so subscribers see them meanwhile.
        // The timers are armed (the flush timer made) only once the calls
        // have had a turn to run and are still running: a batch that ends
        // in that turn registers no timer (registering one wakes the
        // runtime's driver).
        let mut flush: Option<Pin<Box<Sleep>>> = None;
        while self.machine.phase_name() == PhaseName::Executing {
            let deadline = self.machine.poll_timeout().map(|d| (d, self.now()));
            tokio::select! {
                biased;
                out = running.join_next() => match out {
                    Some(Ok(out)) => self.finish_call(out),
                    // A tool's own panic is its call's error already; one
                    // outside it is the driver's, as if it ran here.
                    Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Some(Err(_)) | None => break,
                },
                Some(msg) = next_message(&mut messages) => self.on_message(msg, waiting),
                () = cancel.cancelled() => {
                    let _ = self.machine.cancel(self.shared.cancel_reason());
                }
                () = tokio::task::yield_now(), if flush.is_none() => {
                    flush = Some(Box::pin(tokio::time::sleep(FLUSH_EVERY)));
                    continue;
                }
                () = sleep_until(deadline), if flush.is_some() => {
                    // The time budget ran out: the machine abandons the batch.
                    let now = self.now();
                    let _ = self.machine.next_step(now);
                }
                () = tick(&mut flush) => {
                    self.flush_events().await?;
                    let next = if self.shared.has_pending() { FLUSH_EVERY } else { FLUSH_EVERY * 5 };
                    if let Some(flush) = &mut flush {
                        flush.as_mut().reset(tokio::time::Instant::now() + next);
                    }
                    continue;
                }
            }
            self.after_result(waiting).await?;
        }
        Ok(())
    }

    /// Stores what a result (or a message) moved the machine to: with the
    /// next plan when the batch is over, at once otherwise.
    async fn after_result(&mut self, waiting: &mut Waiting) -> Result<(), RuntimeError> {
        if self.machine.outcome().is_some() {
            self.hold_control().await;
        }
        if self.machine.phase_name() == PhaseName::Planning {
            // The batch is over and the next plan follows.
            self.defer();
        } else {
            self.commit().await?;
        }
        waiting.flush(&self.machine);
        Ok(())
    }

    /// Commits the events emitted so far, without a snapshot (the machine
    /// has not moved); a lost lease ends the batch.
    async fn flush_events(&mut self) -> Result<(), RuntimeError> {
        self.collect();
        self.log().flush().await
    }

    /// The sink through which call `id` publishes live output: each fragment
    /// becomes a `ToolOutputDelta` event, until the run has finished.
    fn output_sink(&self, id: ToolCallId) -> OutputSink {
        let shared = self.shared.clone();
        let clock = self.clock.clone();
        OutputSink::new(move |stream, delta| {
            if shared.finished.get().is_none() {
                shared.emit(
                    &*clock,
                    EventKind::ToolOutputDelta {
                        tool_call_id: id.clone(),
                        stream: stream.to_owned(),
                        delta: delta.to_owned(),
                    },
                );
            }
        })
    }

    fn finish_call(&mut self, out: ToolOutput) {
        let now = self.now();
        match self.machine.tool_result(out, now) {
            Ok(_) => {}
            // The call was abandoned (time budget, cancel) before it finished.
            Err(e) => {
                tracing::debug!(run_id = %self.shared.run_id, error = %e, "late tool result dropped");
            }
        }
    }
}

/// When the flush timer fires; never, while it is not armed.
async fn tick(flush: &mut Option<Pin<Box<Sleep>>>) {
    match flush {
        Some(sleep) => sleep.as_mut().await,
        None => std::future::pending().await,
    }
}

/// The next message of an open inbox; never, when the batch opened none.
async fn next_message(
    messages: &mut Option<&mut mpsc::UnboundedReceiver<DriverMsg>>,
) -> Option<DriverMsg> {
    match messages {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
