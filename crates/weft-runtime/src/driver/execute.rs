//! Executing a batch of tool calls: concurrently, under their timeouts and
//! the payload budget, raced against cancellation and the run's deadline,
//! each result committed as it lands; calls cut by a crash are answered as
//! interrupted unless their tool is idempotent. Running calls may ask the
//! human meanwhile ([`super::elicit`]).

use std::future::Future;

use tokio::sync::mpsc;

use super::elicit::Waiting;
use super::log::FLUSH_EVERY;
use super::*;
use crate::inbox::DriverMsg;
use tracing::Instrument as _;
use weft_core::elicitation::Elicitor;

impl RunTask {
    /// Executes a batch concurrently, committing each result as it lands.
    pub(super) async fn execute(&mut self, calls: Vec<ToolCall>) -> Result<(), RuntimeError> {
        self.collect();
        let limits = Limits {
            timeout: self.agent.tool_timeout,
            payload_budget: self.payload_budget,
        };
        let recovering = std::mem::take(&mut self.recovering);
        if recovering {
            // The tools that asked died with the process that drove them.
            self.machine.withdraw_elicitations();
        }
        // Only a batch with a call that can ask the user opens the inbox.
        let eliciting = calls.iter().any(|c| self.tools.can_elicit(&c.name));
        let (inbox, mut messages) = if eliciting {
            let (tx, rx) = self.shared.inbox.open();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let mut waiting = Waiting::default();
        let running = FuturesUnordered::new();
        let mut interrupted = Vec::new();
        let turn_id = TurnId::new(format!("{}/{}", self.shared.run_id, self.machine.turn()));
        for call in &calls {
            if recovering && !self.tools.is_idempotent(&call.name) {
                interrupted.push(interrupted_output(call));
                continue;
            }
            // The tool gets its own copy of the arguments; the events and the
            // output share the call's.
            let mut payload = (*call.payload).clone();
            let description = match self.tools.spec(&call.name) {
                Some(spec) if self.agent.describe_calls => {
                    weft_tools::strip_description_for(spec, &mut payload)
                }
                _ => None,
            };
            let shown = match description {
                Some(_) => Arc::new(payload.clone()),
                None => call.payload.clone(),
            };
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
            };
            let span = tracing::info_span!(
                "tool",
                tool_call_id = %call.id,
                tool = %call.name,
            );
            running.push(self.tools.execute(call, request, limits).instrument(span));
        }
        drop(inbox);
        let result = self
            .run_batch(running, interrupted, messages.as_mut(), &mut waiting)
            .await;
        if eliciting {
            self.shared.inbox.close();
        }
        result
    }

    /// Feeds results, elicitations and answers to the machine until the
    /// batch is over, committing after each.
    async fn run_batch(
        &mut self,
        mut running: FuturesUnordered<impl Future<Output = ToolOutput>>,
        interrupted: Vec<ToolOutput>,
        mut messages: Option<&mut mpsc::UnboundedReceiver<DriverMsg>>,
        waiting: &mut Waiting,
    ) -> Result<(), RuntimeError> {
        for out in interrupted {
            self.finish_call(out);
            self.commit().await?;
        }
        let cancel = self.shared.cancel.clone();
        // Events of running calls (their start, their live output) are
        // committed every `FLUSH_EVERY`, so subscribers see them meanwhile.
        let flush = tokio::time::sleep(FLUSH_EVERY);
        tokio::pin!(flush);
        while self.machine.phase_name() == PhaseName::Executing {
            let deadline = self.machine.poll_timeout().map(|d| (d, self.now()));
            tokio::select! {
                biased;
                out = running.next() => match out {
                    Some(out) => self.finish_call(out),
                    None => break,
                },
                Some(msg) = next_message(&mut messages) => self.on_message(msg, waiting),
                () = cancel.cancelled() => {
                    let _ = self.machine.cancel(self.shared.cancel_reason());
                }
                () = sleep_until(deadline) => {
                    // The time budget ran out: the machine abandons the batch.
                    let now = self.now();
                    let _ = self.machine.next_step(now);
                }
                () = &mut flush => {
                    self.flush_events().await?;
                    let next = if self.shared.has_pending() { FLUSH_EVERY } else { FLUSH_EVERY * 5 };
                    flush.as_mut().reset(tokio::time::Instant::now() + next);
                    continue;
                }
            }
            if self.machine.outcome().is_some() {
                self.hold_control().await;
            }
            self.commit().await?;
            waiting.flush(&self.machine);
        }
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
        if let Err(e) = self.machine.tool_result(out, now) {
            // The call was abandoned (time budget, cancel) before it finished.
            tracing::debug!(run_id = %self.shared.run_id, error = %e, "late tool result dropped");
        }
    }
}

fn interrupted_output(call: &ToolCall) -> ToolOutput {
    let err = ToolError::new(
        ToolError::UNAVAILABLE,
        format!(
            "`{}` was interrupted by a restart and is not idempotent, so it was not run again",
            call.name
        ),
    );
    let hint = RetryHint::new(RetryReason::ToolUnavailable)
        .for_tool(call.name.clone())
        .with_message(
            "interrupted by restart: check whether it took effect before calling it again",
        );
    ToolOutput::error(
        call.id.clone(),
        call.name.clone(),
        call.payload.clone(),
        err,
    )
    .with_retry_hint(Some(hint))
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
