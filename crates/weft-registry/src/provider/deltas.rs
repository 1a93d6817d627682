//! One call's output deltas: the tool's output sink queues them (best
//! effort: a full buffer drops new ones) for a task that publishes them, in
//! order, to the call's result stream. The task starts with the first delta:
//! most calls publish none, and pay for no task.

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use weft_core::tool::OutputSink;

use super::Shared;
use crate::wire::{self, ToolOutputDeltaMessage};

/// Deltas buffered per call before new ones are dropped (deltas are best effort).
const DELTA_BUFFER: usize = 256;

enum DeltaMsg {
    Delta(Vec<u8>),
    Flush(oneshot::Sender<()>),
}

/// The deltas of one call.
pub(super) struct Deltas {
    tx: mpsc::Sender<DeltaMsg>,
    publisher: Arc<Publisher>,
}

impl Deltas {
    /// Deltas published to the result stream `key`.
    pub(super) fn new(shared: &Arc<Shared>, key: String) -> Self {
        let (tx, rx) = mpsc::channel(DELTA_BUFFER);
        let publisher = Arc::new(Publisher {
            shared: shared.clone(),
            key,
            rx: Mutex::new(Some(rx)),
            task: Mutex::new(None),
            runtime: tokio::runtime::Handle::current(),
        });
        Self { tx, publisher }
    }

    /// The output sink the call's tool publishes to.
    pub(super) fn sink(&self, tool_use_id: &str) -> OutputSink {
        sink(tool_use_id, self.tx.clone(), self.publisher.clone())
    }

    /// Waits until every delta queued so far is published.
    pub(super) async fn flush(self) {
        if let Some(task) = self.publisher.started() {
            let (done, flushed) = oneshot::channel();
            if self.tx.send(DeltaMsg::Flush(done)).await.is_ok() {
                let _ = flushed.await;
            }
            task.abort();
        }
    }
}

/// The task that publishes one call's deltas, started by the first delta:
/// most calls publish none, and pay for no task.
struct Publisher {
    shared: Arc<Shared>,
    key: String,
    rx: Mutex<Option<mpsc::Receiver<DeltaMsg>>>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
    /// The runtime to start it on, whatever thread the tool publishes from.
    runtime: tokio::runtime::Handle,
}

impl Publisher {
    /// Starts the task unless it runs already.
    fn start(&self) {
        let rx = self.rx.lock().ok().and_then(|mut rx| rx.take());
        if let Some(rx) = rx {
            let task =
                self.runtime
                    .spawn(publish_deltas(self.shared.clone(), self.key.clone(), rx));
            if let Ok(mut slot) = self.task.lock() {
                *slot = Some(task.abort_handle());
            }
        }
    }

    /// The task, if a delta started it.
    fn started(&self) -> Option<tokio::task::AbortHandle> {
        self.task.lock().ok().and_then(|mut t| t.take())
    }
}

/// The output sink of one call: deltas go, in order, to the publisher task.
fn sink(tool_use_id: &str, tx: mpsc::Sender<DeltaMsg>, publisher: Arc<Publisher>) -> OutputSink {
    let id = tool_use_id.to_owned();
    OutputSink::new(move |stream, delta| {
        let msg = ToolOutputDeltaMessage {
            tool_use_id: id.clone(),
            stream: stream.to_owned(),
            delta: delta.to_owned(),
        };
        if tx.try_send(DeltaMsg::Delta(wire::encode(&msg))).is_err() {
            tracing::debug!(tool_use_id = %id, "output delta dropped (buffer full or call over)");
            return;
        }
        publisher.start();
    })
}

async fn publish_deltas(shared: Arc<Shared>, key: String, mut rx: mpsc::Receiver<DeltaMsg>) {
    while let Some(msg) = rx.recv().await {
        match msg {
            DeltaMsg::Delta(payload) => {
                let mut cmd = redis::cmd("XADD");
                cmd.arg(&key)
                    .arg("NOMKSTREAM")
                    .arg("*")
                    .arg("n")
                    .arg(wire::EVENT_OUTPUT_DELTA)
                    .arg("p")
                    .arg(payload);
                let res: Result<redis::Value, _> = cmd.query_async(&mut shared.redis.mux()).await;
                if let Err(e) = res {
                    tracing::debug!(error = %e, "publishing an output delta failed");
                }
            }
            DeltaMsg::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}
