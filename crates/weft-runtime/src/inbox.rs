//! A driven run's inbox: what reaches its driver task while it executes a
//! tool batch — a running tool's elicitation, a tool that stops waiting for
//! one, a human's answer to one, and the child run a call started.
//! The driver opens the inbox for the batch and closes it after; a message
//! that is never handled drops its reply, which the sender reads as "gone".

use std::sync::{Mutex, MutexGuard};

use tokio::sync::{mpsc, oneshot};
use weft_core::awaiting::AwaitAnswer;
use weft_core::elicitation::{ElicitationError, ElicitationRequest, ElicitationResponse};
use weft_core::run::AwaitProgress;
use weft_core::{AgentId, AwaitItemId, RunId, ToolCallId};

use crate::error::RuntimeError;

/// One message for the driver.
pub(crate) enum DriverMsg {
    /// Running call `call` asks the human `request`; the tool waits on
    /// `reply`. `ticket` names the question until it has an await item.
    Elicit {
        call: ToolCallId,
        ticket: u64,
        request: ElicitationRequest,
        reply: oneshot::Sender<Result<ElicitationResponse, ElicitationError>>,
    },
    /// The tool that asked question `ticket` stopped waiting for the answer.
    Abandon { ticket: u64 },
    /// Running call `call` started (or found again) child run `child` of
    /// `agent`; `reply` is told once the link is committed.
    ChildLinked {
        call: ToolCallId,
        child: RunId,
        agent: AgentId,
        reply: oneshot::Sender<()>,
    },
    /// A human answers pending item `item`.
    Answer {
        item: AwaitItemId,
        answer: AwaitAnswer,
        reply: oneshot::Sender<Result<AwaitProgress, RuntimeError>>,
    },
}

/// The sending side of a run's inbox, open while its driver executes a batch.
#[derive(Default)]
pub(crate) struct Inbox(Mutex<Option<mpsc::UnboundedSender<DriverMsg>>>);

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, Option<mpsc::UnboundedSender<DriverMsg>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens the inbox; the driver reads what arrives on the receiver.
    pub(crate) fn open(
        &self,
    ) -> (
        mpsc::UnboundedSender<DriverMsg>,
        mpsc::UnboundedReceiver<DriverMsg>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.lock() = Some(tx.clone());
        (tx, rx)
    }

    /// Closes the inbox: messages sent from now on are refused.
    pub(crate) fn close(&self) {
        *self.lock() = None;
    }

    /// Where to send a message, while the inbox is open.
    pub(crate) fn sender(&self) -> Option<mpsc::UnboundedSender<DriverMsg>> {
        self.lock().clone()
    }
}
