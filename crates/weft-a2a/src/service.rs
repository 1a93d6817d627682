//! What the A2A methods do to weft runs, whichever protocol release asked:
//! a message without a task id starts a run (its task), one naming an
//! `input-required` task answers its open question; get, cancel, and
//! waiting for a task to end or ask for input again (a blocking send).
//! Streams are `follow`'s.

use std::sync::Arc;
use std::time::Duration;

use weft_core::awaiting::AwaitItem;
use weft_core::message::Message as WeftMessage;
use weft_core::run::AwaitProgress;
use weft_core::store::StoredRun;
use weft_core::{RunId, SessionId};
use weft_runtime::{Runtime, RuntimeError, StartRequest};

use super::rpc::{RpcError, clip, refused};
use super::tasks::{answer_for, open_items, task_of};
use super::tenancy::{Open, Tenancy};
use super::wire::{Message, Role, SendMessageRequest, Task};

/// The longest a blocking send waits for its task to end or ask for input;
/// past it, the task is answered as it is (still working).
pub const MAX_WAIT: Duration = Duration::from_secs(600);

/// The longest task, context and message id taken.
const MAX_ID: usize = 128;

/// The A2A side of one agent's runtime, as one caller sees it.
#[derive(Clone)]
pub struct Service {
    /// The runtime driving the agent's runs.
    pub runtime: Runtime,
    /// The agent.
    pub agent_id: String,
    /// Whose tasks the caller sees, and how its tasks start.
    pub tenancy: Arc<dyn Tenancy>,
}

/// What a send did: the task it concerns, the log position before it, and
/// whether the task moves on now (a new run, or the last open question
/// answered) so a blocking send waits for it.
pub struct Sent {
    /// The task (run) id.
    pub task_id: String,
    /// Whether the task is moving on.
    pub moving: bool,
}

fn well_formed(what: &str, id: &str) -> Result<(), RpcError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(RpcError::invalid_params(format!(
            "`{what}` must be 1 to {MAX_ID} letters, digits, `-`, `_`, `.` or `:`"
        )))
    }
}

impl Service {
    /// `agent_id`'s tasks on `runtime`, every one visible to every client ([`Open`]).
    pub fn open(runtime: Runtime, agent_id: impl Into<String>) -> Self {
        Self {
            runtime,
            agent_id: agent_id.into(),
            tenancy: Arc::new(Open),
        }
    }

    /// The stored run of task `id`, this agent's, or `TaskNotFound`.
    pub async fn load(&self, id: &str) -> Result<StoredRun, RpcError> {
        if well_formed("id", id).is_err() {
            return Err(RpcError::task_not_found(id));
        }
        let stored = self
            .runtime
            .store()
            .load_run(&RunId::new(id))
            .await
            .map_err(|e| RpcError::internal(format!("reading task `{id}`: {e}")))?
            .ok_or_else(|| RpcError::task_not_found(id))?;
        if stored.record.agent_id.as_str() != self.agent_id
            || !self.tenancy.owns(&stored.record.labels)
        {
            return Err(RpcError::task_not_found(id));
        }
        Ok(stored)
    }

    /// Task `id` as it is.
    pub async fn get(&self, id: &str) -> Result<Task, RpcError> {
        Ok(task_of(&self.load(id).await?))
    }

    /// Takes a client's message: starts a task, or answers the open
    /// question of the task it names.
    pub async fn send(&self, request: &SendMessageRequest) -> Result<Sent, RpcError> {
        let message = &request.message;
        check_message(message)?;
        match &message.task_id {
            Some(task_id) => self.answer(task_id, message).await,
            None => self.start(message).await,
        }
    }

    async fn start(&self, message: &Message) -> Result<Sent, RpcError> {
        if let Some(context) = &message.context_id {
            well_formed("contextId", context)?;
        }
        let run_id = uuid::Uuid::now_v7().to_string();
        let request = StartRequest {
            session_id: message.context_id.clone().map(SessionId::new),
            messages: vec![WeftMessage::user(input_text(message))],
            run_id: Some(RunId::new(run_id.clone())),
            ..StartRequest::default()
        };
        self.tenancy
            .start(&self.runtime, &self.agent_id, request)
            .await?;
        Ok(Sent {
            task_id: run_id,
            moving: true,
        })
    }

    async fn answer(&self, task_id: &str, message: &Message) -> Result<Sent, RpcError> {
        let stored = self.load(task_id).await?;
        if let Some(context) = &message.context_id
            && context.as_str() != stored.record.session_id.as_str()
        {
            return Err(RpcError::invalid_params(format!(
                "task `{task_id}` belongs to another context than `{}`",
                clip(context)
            )));
        }
        let task = task_of(&stored);
        if task.status.state.is_terminal() {
            return Err(RpcError::unsupported(format!(
                "task `{task_id}` has ended; send a message without its taskId to start another"
            )));
        }
        let open = open_items(&stored.snapshot, stored.record.updated_at.as_millis());
        let Some(item) = open.first() else {
            return Err(RpcError::unsupported(format!(
                "task `{task_id}` is working and takes a message only when it asks for input"
            )));
        };
        let answer = answer_for(item, message)?;
        let progress = self
            .runtime
            .answer(&stored.record.run_id, item.id(), answer)
            .await
            .map_err(refused)?;
        Ok(Sent {
            task_id: task_id.to_owned(),
            moving: matches!(progress, AwaitProgress::Satisfied) || is_elicitation(item),
        })
    }

    /// Waits (at most [`MAX_WAIT`]) until task `id` ends or asks for input,
    /// and gives it as it is then.
    pub async fn settle(&self, id: &str) -> Result<Task, RpcError> {
        let deadline = tokio::time::Instant::now() + MAX_WAIT;
        loop {
            let stored = self.load(id).await?;
            let task = task_of(&stored);
            if task.status.state.ends_stream() {
                return Ok(task);
            }
            let mut events = self
                .runtime
                .subscribe(&stored.record.run_id, stored.last_seq)
                .await
                .map_err(refused)?;
            let moved = loop {
                match tokio::time::timeout_at(deadline, events.next()).await {
                    Err(_) => return self.get(id).await,
                    Ok(None | Some(Err(_))) => break false,
                    Ok(Some(Ok(event))) if moves(&event.kind) => break true,
                    Ok(Some(Ok(_))) => {}
                }
            };
            // A stream that ended without a change: look again after a beat.
            if !moved {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }

    /// Cancels task `id`; the task as it is then.
    pub async fn cancel(&self, id: &str) -> Result<Task, RpcError> {
        let stored = self.load(id).await?;
        let task = task_of(&stored);
        if task.status.state.is_terminal() {
            return Err(RpcError::not_cancelable(id, state_word(&task)));
        }
        match self
            .runtime
            .cancel(&stored.record.run_id, "cancelled by the A2A client")
            .await
        {
            Ok(()) => {}
            Err(RuntimeError::Finished(_)) => {
                let task = self.get(id).await?;
                return Err(RpcError::not_cancelable(id, state_word(&task)));
            }
            Err(e) => return Err(refused(e)),
        }
        self.get(id).await
    }
}

/// Whether an event may change what the task's state is.
pub fn moves(kind: &weft_core::event::EventKind) -> bool {
    use weft_core::event::EventKind as K;
    matches!(
        kind,
        K::AwaitRequested { .. }
            | K::AwaitSatisfied { .. }
            | K::AwaitWithdrawn { .. }
            | K::RunFinished { .. }
            | K::RunPaused { .. }
            | K::RunContinued
    )
}

fn is_elicitation(item: &AwaitItem) -> bool {
    matches!(item, AwaitItem::Elicitation(_))
}

fn state_word(task: &Task) -> &'static str {
    use super::wire::TaskState as S;
    match task.status.state {
        S::Completed => "completed",
        S::Failed => "failed",
        S::Canceled => "canceled",
        S::InputRequired => "input-required",
        S::Submitted | S::Working => "working",
    }
}

/// A message a client may send: from the user, with an id and at least
/// one text or data part (files are not taken).
fn check_message(message: &Message) -> Result<(), RpcError> {
    if message.role != Role::User {
        return Err(RpcError::invalid_params(
            "a message to the agent has role ROLE_USER",
        ));
    }
    if message.message_id.is_empty() || message.message_id.len() > MAX_ID {
        return Err(RpcError::invalid_params(format!(
            "`messageId` must be 1 to {MAX_ID} characters"
        )));
    }
    if message.parts.is_empty() {
        return Err(RpcError::invalid_params(
            "a message needs at least one part",
        ));
    }
    for part in &message.parts {
        if part.url.is_some() || part.raw.is_some() {
            return Err(RpcError::content_type(
                "file parts (`url`, `raw`) are not taken: send text or data parts",
            ));
        }
        if part.text.is_none() && part.data.is_none() {
            return Err(RpcError::invalid_params("a part needs `text` or `data`"));
        }
    }
    Ok(())
}

/// A new task's input: its text parts, then its data parts as JSON.
fn input_text(message: &Message) -> String {
    let mut lines = Vec::new();
    for part in &message.parts {
        if let Some(text) = &part.text {
            lines.push(text.clone());
        } else if let Some(data) = &part.data {
            lines.push(data.to_string());
        }
    }
    lines.join("\n")
}
