//! A task's stream (`SendStreamingMessage`/`message/stream`,
//! `SubscribeToTask`/`tasks/resubscribe`): the task as it is, then a
//! status update each time its state changes, ending when the task ends
//! or asks for input. The agent's text streams as chunks of the `answer`
//! artifact as the model writes it (`append` after a turn's first chunk;
//! a turn that goes on to call tools is replaced by the next turn's
//! text), and the whole answer is sent as the artifact's last chunk
//! before the `completed` update. Bounded: at most [`MAX_EVENTS`] run events read and
//! [`MAX_STREAM`] long.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::Stream;
use weft_runtime::EventStream;

use weft_core::event::EventKind;

use super::service::{Service, moves};
use super::tasks::answer;
use super::wire::{
    Part, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent,
};

/// The most run events one stream reads.
pub const MAX_EVENTS: usize = 100_000;
/// The longest one stream stays open.
pub const MAX_STREAM: Duration = Duration::from_secs(1800);

struct Follow {
    service: Service,
    task_id: String,
    pending: VecDeque<StreamResponse>,
    events: Option<EventStream>,
    last: Option<TaskState>,
    /// The task's context, once read.
    context_id: String,
    /// Whether the next chunk of text appends to the artifact (a chunk of
    /// this turn was sent) or replaces it.
    appending: bool,
    done: bool,
    read: usize,
    deadline: tokio::time::Instant,
}

/// The stream of task `task_id`.
pub fn follow(service: Service, task_id: String) -> impl Stream<Item = StreamResponse> + Send {
    let state = Follow {
        service,
        task_id,
        pending: VecDeque::new(),
        events: None,
        last: None,
        context_id: String::new(),
        appending: false,
        done: false,
        read: 0,
        deadline: tokio::time::Instant::now() + MAX_STREAM,
    };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(next) = st.pending.pop_front() {
                return Some((next, st));
            }
            if st.done {
                return None;
            }
            st.step().await;
        }
    })
}

impl Follow {
    /// Reads until there is something to send or the stream is over.
    async fn step(&mut self) {
        let Some(events) = self.events.as_mut() else {
            return self.open().await;
        };
        let event = tokio::time::timeout_at(self.deadline, events.next()).await;
        self.read += 1;
        let kind = match event {
            Ok(Some(Ok(event))) => event.kind,
            _ => return self.done = true,
        };
        match kind {
            EventKind::AssistantChunk { text } => self.chunk(text),
            EventKind::ToolStarted { .. } => self.appending = false,
            kind if moves(&kind) => self.look().await,
            _ => {}
        }
        if self.read >= MAX_EVENTS {
            self.done = true;
        }
    }

    /// A chunk of the agent's text, as a chunk of the answer.
    fn chunk(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        let update = TaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            artifact: answer(Part::text(text)),
            append: self.appending,
            last_chunk: false,
        };
        self.appending = true;
        self.pending
            .push_back(StreamResponse::ArtifactUpdate(update));
    }

    /// The task as it is, then its events from there on.
    async fn open(&mut self) {
        let Ok(stored) = self.service.load(&self.task_id).await else {
            self.done = true;
            return;
        };
        let task = super::tasks::task_of(&stored);
        let state = task.status.state;
        self.context_id = task.context_id.clone();
        self.pending.push_back(StreamResponse::Task(task));
        self.last = Some(state);
        if state.ends_stream() {
            self.done = true;
            return;
        }
        match self
            .service
            .runtime
            .subscribe(&stored.record.run_id, stored.last_seq)
            .await
        {
            Ok(events) => self.events = Some(events),
            Err(_) => self.done = true,
        }
    }

    /// Reads the task again and sends what changed.
    async fn look(&mut self) {
        let Ok(task) = self.service.get(&self.task_id).await else {
            self.done = true;
            return;
        };
        let state = task.status.state;
        if self.last == Some(state) {
            return;
        }
        self.last = Some(state);
        if state.is_terminal() {
            for artifact in &task.artifacts {
                self.pending
                    .push_back(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                        task_id: task.id.clone(),
                        context_id: task.context_id.clone(),
                        artifact: artifact.clone(),
                        append: false,
                        last_chunk: true,
                    }));
            }
        }
        self.pending
            .push_back(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task.id,
                context_id: task.context_id,
                status: task.status,
            }));
        self.done = state.ends_stream();
    }
}
