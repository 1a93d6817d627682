//! Elicitations while a batch executes: each call's request carries an
//! [`Elicitor`] that sends its questions to the driver's inbox; the driver
//! records them in the machine (an await item the API shows), and hands a
//! human's answer, routed through the same inbox by `Runtime::answer`, back
//! to the waiting tool — after the answer is committed. A question whose
//! call or run ended is withdrawn by the machine; its tool is told so. A tool
//! that stops waiting (drops the future) withdraws its question too.
//!
//! A call that starts a child run reports it through the same inbox (its
//! [`ChildLinker`]); the machine records the link, and the call goes on
//! once it is committed, so the link precedes the child's events.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};
use weft_core::AwaitItemId;
use weft_core::child::ChildLinker;
use weft_core::elicitation::{ElicitationError, ElicitationResponse, Elicitor};
use weft_core::run::AwaitProgress;

use super::*;
use crate::inbox::DriverMsg;

type ToolReply = oneshot::Sender<Result<ElicitationResponse, ElicitationError>>;
type AnswerReply = oneshot::Sender<Result<AwaitProgress, RuntimeError>>;

/// The tools waiting on answers, and the replies due after the next commit.
#[derive(Default)]
pub(super) struct Waiting {
    tools: HashMap<AwaitItemId, ToolReply>,
    /// The await item of each question asked, by its ticket.
    tickets: HashMap<u64, AwaitItemId>,
    answered: Vec<(ToolReply, ElicitationResponse)>,
    progress: Vec<(AnswerReply, AwaitProgress)>,
    /// Calls waiting for their child's link to be committed.
    linked: Vec<oneshot::Sender<()>>,
}

impl Waiting {
    /// After a commit: completes answered questions, tells answerers, and
    /// tells tools whose questions were withdrawn.
    pub(super) fn flush(&mut self, machine: &RunMachine) {
        for (tool, response) in self.answered.drain(..) {
            let _ = tool.send(Ok(response));
        }
        for (answerer, progress) in self.progress.drain(..) {
            let _ = answerer.send(Ok(progress));
        }
        for call in self.linked.drain(..) {
            let _ = call.send(());
        }
        let pending = machine.elicitations();
        self.tools
            .retain(|id, _| pending.iter().any(|e| &e.id == id));
        let tools = &self.tools;
        self.tickets.retain(|_, id| tools.contains_key(id));
    }
}

impl RunTask {
    /// The elicitor of call `id`: its questions go to the driver's inbox.
    /// The linker of call `id`: the child runs it starts go to the driver's
    /// inbox, and each report resolves once the link is committed (or the
    /// driver is gone).
    pub(super) fn linker(id: ToolCallId, inbox: mpsc::UnboundedSender<DriverMsg>) -> ChildLinker {
        ChildLinker::new(move |child, agent| {
            let (reply, committed) = oneshot::channel();
            let sent = inbox.send(DriverMsg::ChildLinked {
                call: id.clone(),
                child,
                agent,
                reply,
            });
            Box::pin(async move {
                if sent.is_ok() {
                    let _ = committed.await;
                }
            })
        })
    }

    pub(super) fn elicitor(id: ToolCallId, inbox: mpsc::UnboundedSender<DriverMsg>) -> Elicitor {
        static TICKETS: AtomicU64 = AtomicU64::new(0);
        Elicitor::new(move |request| {
            let (reply, answer) = oneshot::channel();
            let ticket = TICKETS.fetch_add(1, Ordering::Relaxed);
            let sent = inbox.send(DriverMsg::Elicit {
                call: id.clone(),
                ticket,
                request,
                reply,
            });
            let waiting = Abandon {
                inbox: inbox.clone(),
                ticket,
                armed: sent.is_ok(),
            };
            Box::pin(async move {
                // The guard itself moves in (not a copy of its flag), so it
                // drops with the future.
                let mut waiting = waiting;
                if !waiting.armed {
                    return Err(ElicitationError::Withdrawn);
                }
                let answer = answer.await.unwrap_or(Err(ElicitationError::Withdrawn));
                waiting.armed = false;
                answer
            })
        })
    }

    /// Handles one inbox message; replies that must wait for the commit go to `waiting`.
    pub(super) fn on_message(&mut self, msg: DriverMsg, waiting: &mut Waiting) {
        let now = self.now();
        match msg {
            DriverMsg::Elicit {
                call,
                ticket,
                request,
                reply,
            } => match self.machine.elicit(&call, request, now) {
                Ok(item) => {
                    super::spans::eliciting(&self.span, &call);
                    waiting.tickets.insert(ticket, item.clone());
                    waiting.tools.insert(item, reply);
                }
                Err(e) => {
                    let _ = reply.send(Err(ElicitationError::Refused(e.to_string())));
                }
            },
            DriverMsg::ChildLinked {
                call,
                child,
                agent,
                reply,
            } => {
                match self.machine.child_linked(&call, child, agent) {
                    Ok(()) => waiting.linked.push(reply),
                    // The call ended meanwhile: nothing to link, nothing waits.
                    Err(e) => {
                        tracing::debug!(run_id = %self.shared.run_id, error = %e, "child link dropped");
                    }
                }
            }
            DriverMsg::Abandon { ticket } => {
                if let Some(item) = waiting.tickets.remove(&ticket) {
                    waiting.tools.remove(&item);
                    self.machine.withdraw_elicitation(&item);
                }
            }
            DriverMsg::Answer {
                item,
                answer,
                reply,
            } => {
                // The tool gets the answer as recorded: defaults filled in.
                let answer = match self.machine.elicitations().iter().find(|e| e.id == item) {
                    Some(asked) => asked.with_defaults(answer),
                    None => answer,
                };
                let response = answer.elicitation_response();
                match self.machine.answer(&item, answer, now) {
                    Ok(progress) => {
                        if let (Some(tool), Some(response)) =
                            (waiting.tools.remove(&item), response)
                        {
                            waiting.answered.push((tool, response));
                        }
                        waiting.progress.push((reply, progress));
                    }
                    // Rejected: nothing changed, nothing to commit first.
                    Err(e) => {
                        let _ = reply.send(Err(e.into()));
                    }
                }
            }
        }
    }
}

/// Tells the driver when a tool stops waiting for its question's answer.
struct Abandon {
    inbox: mpsc::UnboundedSender<DriverMsg>,
    ticket: u64,
    /// Whether the question is still waiting.
    armed: bool,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.inbox.send(DriverMsg::Abandon {
                ticket: self.ticket,
            });
        }
    }
}
