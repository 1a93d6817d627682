//! [`Runtime`]: registers agents, starts runs, subscribes to their events
//! and waits for their outcomes; [`control`] answers awaits, pauses,
//! continues, cancels and recovers runs.

mod control;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::Instrument as _;

use weft_core::awaiting::AwaitAnswer;
use weft_core::message::Message;
use weft_core::run::{AwaitProgress, Policy, RunConfig, RunMachine, RunOutcome};
use weft_core::store::{Commit, RunFilter, RunRecord, RunStatus, RunStore};
use weft_core::tool::Labels;
use weft_core::{AgentId, AwaitItemId, RunId, SessionId};

use crate::agent::Agent;
use crate::clock::{Clock, SystemClock};
use crate::driver::{DriveEnd, RunTask, status_of};
use crate::error::RuntimeError;
use crate::events::{EventStream, RunShared};
use crate::memory::MemoryStore;
use crate::tools::AgentTools;

/// The default payload budget: results above 64 KiB are omitted.
pub const DEFAULT_PAYLOAD_BUDGET: u64 = 64 * 1024;

/// Drives runs of registered agents. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    agents: HashMap<AgentId, Arc<Agent>>,
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) payload_budget: u64,
    live: Mutex<HashMap<RunId, Arc<RunShared>>>,
    counter: AtomicU64,
}

/// Builds a [`Runtime`].
pub struct RuntimeBuilder {
    agents: HashMap<AgentId, Arc<Agent>>,
    store: Option<Arc<dyn RunStore>>,
    clock: Arc<dyn Clock>,
    payload_budget: u64,
}

impl RuntimeBuilder {
    /// Registers an agent.
    pub fn agent(mut self, agent: Agent) -> Self {
        self.agents.insert(agent.id.clone(), Arc::new(agent));
        self
    }

    /// Sets the store (default: in memory).
    pub fn store(mut self, store: Arc<dyn RunStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Sets the clock (default: the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Sets the payload budget in bytes (default 64 KiB).
    pub fn payload_budget(mut self, bytes: u64) -> Self {
        self.payload_budget = bytes;
        self
    }

    /// The runtime.
    pub fn build(self) -> Runtime {
        Runtime {
            inner: Arc::new(Inner {
                agents: self.agents,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                clock: self.clock,
                payload_budget: self.payload_budget,
                live: Mutex::new(HashMap::new()),
                counter: AtomicU64::new(0),
            }),
        }
    }
}

/// What a new run starts from.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    /// The session the run belongs to.
    pub session_id: Option<SessionId>,
    /// The run's input (session history plus the new user message).
    pub messages: Vec<Message>,
    /// Labels for the run and its tool requests.
    pub labels: Labels,
    /// The run's id (generated when absent).
    pub run_id: Option<RunId>,
    /// A policy replacing the agent's for this run.
    pub policy: Option<Policy>,
}

impl StartRequest {
    /// A run whose input is one user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            messages: vec![Message::user(text)],
            ..Self::default()
        }
    }

    /// Sets the session.
    pub fn session(mut self, session: impl Into<SessionId>) -> Self {
        self.session_id = Some(session.into());
        self
    }
}

/// A started run: its id, its events and its outcome.
#[derive(Clone)]
pub struct RunHandle {
    run_id: RunId,
    runtime: Runtime,
}

impl RunHandle {
    /// The run's id.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The run's events from the beginning, then live.
    pub async fn events(&self) -> Result<EventStream, RuntimeError> {
        self.runtime.subscribe(&self.run_id, 0).await
    }

    /// Waits for the run's outcome (across awaits, pauses and recoveries).
    pub async fn outcome(&self) -> Result<RunOutcome, RuntimeError> {
        self.runtime.outcome(&self.run_id).await
    }
}

impl Runtime {
    /// Starts building a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            agents: HashMap::new(),
            store: None,
            clock: Arc::new(SystemClock),
            payload_budget: DEFAULT_PAYLOAD_BUDGET,
        }
    }

    /// The runtime's store.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.inner.store
    }

    /// A registered agent.
    pub fn agent(&self, id: &str) -> Option<&Arc<Agent>> {
        self.inner.agents.get(id)
    }

    /// Starts a run of `agent`.
    pub async fn start(
        &self,
        agent: &str,
        request: StartRequest,
    ) -> Result<RunHandle, RuntimeError> {
        let agent = self.inner.agent(agent)?;
        let tools = self.inner.tools(&agent).await?;
        let now = self.inner.clock.now();
        let run_id = request.run_id.unwrap_or_else(|| self.inner.next_run_id());
        let session_id = request
            .session_id
            .unwrap_or_else(|| SessionId::new(format!("session-{run_id}")));
        let shared = self.inner.live_entry(&run_id, 0);
        let mut machine = RunMachine::new(
            RunConfig::new(agent.id.clone(), session_id.clone(), request.messages)
                .with_policy(request.policy.unwrap_or_else(|| agent.policy.clone())),
            now,
        );
        shared.collect(&*self.inner.clock, &mut machine);
        let events = shared.begin_commit();
        machine.set_event_seq(shared.seq());
        let record = RunRecord {
            run_id: run_id.clone(),
            agent_id: agent.id.clone(),
            session_id: session_id.clone(),
            status: RunStatus::Running,
            labels: request.labels.clone(),
            created_at: now,
            updated_at: now,
        };
        let created = self
            .inner
            .store
            .create_run(&record, &events, &machine)
            .await;
        shared.end_commit();
        if let Err(e) = created {
            self.inner.forget(&run_id);
            return Err(e.into());
        }
        self.inner.spawn(
            agent,
            tools,
            shared,
            session_id,
            request.labels,
            machine,
            false,
        );
        Ok(RunHandle {
            run_id,
            runtime: self.clone(),
        })
    }

    /// A handle on an existing run.
    pub fn handle(&self, run_id: RunId) -> RunHandle {
        RunHandle {
            run_id,
            runtime: self.clone(),
        }
    }

    /// The run's events after sequence number `after`, replayed then live.
    pub async fn subscribe(&self, run_id: &RunId, after: u64) -> Result<EventStream, RuntimeError> {
        let mut shared = self.inner.live_get(run_id);
        if shared.is_none() {
            // A run nobody drives now (paused, awaiting, or in another process's
            // hands) still gets live events when it is recovered here.
            let stored = self.inner.stored(run_id).await?;
            if !stored.record.status.is_finished() {
                let entry = self.inner.live_entry(run_id, stored.snapshot.event_seq());
                entry.continue_log_after(stored.snapshot.event_seq());
                shared = Some(entry);
            }
        }
        EventStream::open(
            self.inner.store.clone(),
            shared.as_deref(),
            run_id.clone(),
            after,
        )
        .await
    }

    /// Waits for a run's outcome.
    pub async fn outcome(&self, run_id: &RunId) -> Result<RunOutcome, RuntimeError> {
        loop {
            let shared = match self.inner.live_get(run_id) {
                Some(shared) => shared,
                None => {
                    let stored = self.inner.stored(run_id).await?;
                    if let Some(outcome) = stored.snapshot.outcome() {
                        return Ok(outcome.clone());
                    }
                    // Paused or owned by another process: wait on a live
                    // entry, which a recovery in this process will drive.
                    let seq = stored.snapshot.event_seq();
                    let shared = self.inner.live_entry(run_id, seq);
                    shared.continue_log_after(seq);
                    shared
                }
            };
            let notified = shared.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(end) = shared.finished.get() {
                return end.clone();
            }
            notified.await;
            if let Some(end) = shared.finished.get() {
                return end.clone();
            }
        }
    }
}

impl Inner {
    fn agent(&self, id: &str) -> Result<Arc<Agent>, RuntimeError> {
        self.agents
            .get(id)
            .cloned()
            .ok_or_else(|| RuntimeError::UnknownAgent(AgentId::new(id)))
    }

    async fn tools(&self, agent: &Agent) -> Result<Arc<AgentTools>, RuntimeError> {
        agent.current_tools(true).await
    }

    /// Starts a driver task for a run.
    #[allow(clippy::too_many_arguments)] // Each is a distinct part of the task.
    fn spawn(
        self: &Arc<Self>,
        agent: Arc<Agent>,
        tools: Arc<AgentTools>,
        shared: Arc<RunShared>,
        session_id: SessionId,
        labels: Labels,
        machine: RunMachine,
        recovering: bool,
    ) {
        let epoch = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        shared.claim(epoch);
        let task = RunTask {
            store: self.store.clone(),
            clock: self.clock.clone(),
            payload_budget: self.payload_budget,
            agent,
            tools,
            shared: Arc::clone(&shared),
            session_id,
            labels: Arc::new(labels),
            machine,
            recovering,
            tools_settled: false,
            held: None,
        };
        let inner = Arc::clone(self);
        let span = tracing::info_span!(
            "run",
            run_id = %shared.run_id,
            agent = %task.agent.id,
        );
        tokio::spawn(
            async move {
                let (end, held) = task.drive().await;
                inner.driver_done(&shared, epoch, &end, held).await;
            }
            .instrument(span),
        );
    }

    /// The stored run `run_id`; a run the store does not have is `RunNotFound`.
    async fn stored(&self, run_id: &RunId) -> Result<weft_core::store::StoredRun, RuntimeError> {
        self.store
            .load_run(run_id)
            .await?
            .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()))
    }

    /// A random, unguessable run id.
    fn next_run_id(&self) -> RunId {
        RunId::new(format!("run_{}", uuid::Uuid::new_v4().simple()))
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Arc<RunShared>>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live_get(&self, run_id: &RunId) -> Option<Arc<RunShared>> {
        self.live().get(run_id).cloned()
    }

    /// The live entry of a run, created (continuing after `seq`) when absent.
    fn live_entry(&self, run_id: &RunId, seq: u64) -> Arc<RunShared> {
        self.live()
            .entry(run_id.clone())
            .or_insert_with(|| Arc::new(RunShared::new(run_id.clone(), seq)))
            .clone()
    }

    fn forget(&self, run_id: &RunId) {
        self.live().remove(run_id);
    }

    fn finished(&self, shared: &Arc<RunShared>, end: Result<RunOutcome, RuntimeError>) {
        let _ = shared.finished.set(end);
        self.forget(&shared.run_id);
        shared.done.notify_waiters();
    }
}
