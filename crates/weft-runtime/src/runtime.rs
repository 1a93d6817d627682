//! [`Runtime`]: registers agents, starts runs, answers awaits, cancels,
//! subscribes to events and resumes unfinished runs after a restart.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use weft_core::awaiting::AwaitAnswer;
use weft_core::event::EventKind;
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
use crate::toolsets::agent_tools;

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
    control: tokio::sync::Mutex<()>,
    nonce: u64,
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
        let nonce = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        Runtime {
            inner: Arc::new(Inner {
                agents: self.agents,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                clock: self.clock,
                payload_budget: self.payload_budget,
                live: Mutex::new(HashMap::new()),
                control: tokio::sync::Mutex::new(()),
                nonce,
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

    /// Waits for the run's outcome (across awaits and resumes).
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
        shared.emit(
            &*self.inner.clock,
            EventKind::RunStarted {
                agent_id: agent.id.clone(),
                session_id: session_id.clone(),
                input: request.messages.clone(),
            },
        );
        let mut machine = RunMachine::new(
            RunConfig {
                policy: request.policy.unwrap_or_else(|| agent.policy.clone()),
                messages: request.messages,
            },
            now,
        );
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
            // hands) still gets live events when it is resumed here.
            let stored = self
                .inner
                .store
                .load_run(run_id)
                .await?
                .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()))?;
            if !stored.record.status.is_finished() {
                shared = Some(self.inner.live_entry(run_id, stored.snapshot.event_seq()));
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
            let shared = self.inner.live_get(run_id);
            if let Some(shared) = &shared {
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
                continue;
            }
            let stored = self
                .inner
                .store
                .load_run(run_id)
                .await?
                .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()))?;
            if let Some(outcome) = stored.snapshot.outcome() {
                return Ok(outcome.clone());
            }
            // Paused or owned by another process: wait on a live entry, which
            // a resume in this process will drive.
            let shared = self.inner.live_entry(run_id, stored.snapshot.event_seq());
            let notified = shared.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(end) = shared.finished.get() {
                return end.clone();
            }
            notified.await;
        }
    }

    /// Answers one item of a paused run's await; resumes the run once every
    /// item is answered. A rejected answer leaves the run paused and intact.
    pub async fn provide(
        &self,
        run_id: &RunId,
        item: &AwaitItemId,
        answer: AwaitAnswer,
    ) -> Result<AwaitProgress, RuntimeError> {
        let _guard = self.inner.control.lock().await;
        let mut progress = AwaitProgress::Satisfied;
        let (record, machine, shared) = self
            .inner
            .update_stored(run_id, |machine, now| {
                if machine.is_paused()
                    || machine.phase_name() != weft_core::run::PhaseName::Awaiting
                {
                    return Err(RuntimeError::NotAwaiting {
                        run_id: run_id.clone(),
                        status: status_of(machine).as_str(),
                    });
                }
                progress = machine.provide(item, answer.clone(), now)?;
                let mut events = vec![EventKind::AwaitSatisfied {
                    item_id: item.clone(),
                    answer,
                }];
                if progress == AwaitProgress::Satisfied {
                    events.push(EventKind::RunResumed);
                }
                Ok(events)
            })
            .await?;
        let agent = self.inner.agent(record.agent_id.as_str())?;
        if progress == AwaitProgress::Satisfied {
            let tools = self.inner.tools(&agent).await?;
            self.inner.spawn(
                agent,
                tools,
                shared,
                record.session_id,
                record.labels,
                machine,
                false,
            );
        }
        Ok(progress)
    }

    /// Pauses a run. A driven run pauses at its next step (a running planner
    /// call or tool batch completes first); a run awaiting answers pauses at
    /// once. Paused time does not count against the time budget.
    pub async fn pause(&self, run_id: &RunId) -> Result<(), RuntimeError> {
        let _guard = self.inner.control.lock().await;
        if let Some(shared) = self.inner.live_get(run_id)
            && shared.is_driven()
        {
            shared.pause_requested.store(true, Ordering::Release);
            return Ok(());
        }
        self.inner.pause_stored(run_id).await
    }

    /// Resumes a paused run.
    pub async fn resume(&self, run_id: &RunId) -> Result<(), RuntimeError> {
        let _guard = self.inner.control.lock().await;
        if let Some(shared) = self.inner.live_get(run_id)
            && shared.is_driven()
        {
            // Still driving: withdraw a pause that has not happened yet.
            if shared.pause_requested.swap(false, Ordering::AcqRel) {
                return Ok(());
            }
            return Err(RuntimeError::NotPaused(run_id.clone()));
        }
        let (record, machine, shared) = self
            .inner
            .update_stored(run_id, |machine, now| {
                machine
                    .unpause(now)
                    .map_err(|_| RuntimeError::NotPaused(run_id.clone()))?;
                Ok(vec![EventKind::RunResumed])
            })
            .await?;
        if machine.phase_name() != weft_core::run::PhaseName::Awaiting {
            let agent = self.inner.agent(record.agent_id.as_str())?;
            let tools = self.inner.tools(&agent).await?;
            self.inner.spawn(
                agent,
                tools,
                shared,
                record.session_id,
                record.labels,
                machine,
                false,
            );
        }
        Ok(())
    }

    /// Cancels a run: a live run stops its tools and finishes; a paused run
    /// finishes at once.
    pub async fn cancel(&self, run_id: &RunId, reason: &str) -> Result<(), RuntimeError> {
        let _guard = self.inner.control.lock().await;
        if let Some(shared) = self.inner.live_get(run_id)
            && shared.is_driven()
        {
            shared.request_cancel(reason);
            return Ok(());
        }
        self.inner.cancel_stored(run_id, reason).await
    }

    /// Resumes every run the store says is running (after a restart). Calls
    /// that were pending are re-executed only when their tool is idempotent.
    pub async fn resume_unfinished(&self) -> Result<usize, RuntimeError> {
        let runs = self
            .inner
            .store
            .list_runs(&RunFilter {
                statuses: vec![RunStatus::Running],
                ..RunFilter::default()
            })
            .await?;
        let mut resumed = 0;
        for record in runs {
            match self.recover(&record.run_id).await {
                Ok(true) => resumed += 1,
                Ok(false) => {}
                // One run this process cannot drive (e.g. its agent is not
                // registered here) must not keep the others from resuming.
                Err(e) => tracing::warn!(run_id = %record.run_id, error = %e, "run not resumed"),
            }
        }
        Ok(resumed)
    }

    /// Resumes one run the store says is running and nobody drives here
    /// (after a crash); false when it is not in that state.
    pub async fn recover(&self, run_id: &RunId) -> Result<bool, RuntimeError> {
        let _guard = self.inner.control.lock().await;
        if self.inner.live_get(run_id).is_some_and(|s| s.is_driven()) {
            return Ok(false);
        }
        let Some(stored) = self.inner.store.load_run(run_id).await? else {
            return Err(RuntimeError::RunNotFound(run_id.clone()));
        };
        if stored.record.status != RunStatus::Running {
            return Ok(false);
        }
        let agent = self.inner.agent(stored.record.agent_id.as_str())?;
        let tools = self.inner.tools(&agent).await?;
        let seq = stored.snapshot.event_seq();
        let shared = self.inner.live_entry(run_id, seq);
        shared.resume_at(seq);
        // Only calls pending in the stored snapshot may have been in flight;
        // a run stored while planning starts its next batch afresh.
        let in_flight = stored.snapshot.phase_name() == weft_core::run::PhaseName::Executing;
        self.inner.spawn(
            agent,
            tools,
            shared,
            stored.record.session_id,
            stored.record.labels,
            stored.snapshot,
            in_flight,
        );
        Ok(true)
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
        agent_tools(agent, true).await
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
            inner: self.clone(),
            agent,
            tools,
            shared,
            session_id,
            labels: Arc::new(labels),
            machine,
            recovering,
            epoch,
            announced_finish: false,
            announced_await: false,
        };
        tokio::spawn(task.drive());
    }

    fn next_run_id(&self) -> RunId {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        RunId::new(format!("run_{:016x}{n:08x}", self.nonce))
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

    /// Loads a run that no task drives, changes its machine, and commits the
    /// change with the events `change` returns.
    async fn update_stored(
        &self,
        run_id: &RunId,
        change: impl FnOnce(
            &mut RunMachine,
            weft_core::Timestamp,
        ) -> Result<Vec<EventKind>, RuntimeError>,
    ) -> Result<(RunRecord, RunMachine, Arc<RunShared>), RuntimeError> {
        let stored = self
            .store
            .load_run(run_id)
            .await?
            .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()))?;
        if stored.record.status.is_finished() {
            return Err(RuntimeError::Finished(run_id.clone()));
        }
        let mut machine = stored.snapshot;
        let now = self.clock.now();
        let events = change(&mut machine, now)?;
        let shared = self.live_entry(run_id, machine.event_seq());
        shared.resume_at(machine.event_seq());
        for kind in events {
            shared.emit(&*self.clock, kind);
        }
        let pending = shared.begin_commit();
        machine.set_event_seq(shared.seq());
        let result = self
            .store
            .commit(Commit {
                run_id,
                events: &pending,
                snapshot: Some(&machine),
                status: status_of(&machine),
                now,
            })
            .await;
        shared.end_commit();
        result?;
        Ok((stored.record, machine, shared))
    }

    /// Cancels a run no task drives.
    async fn cancel_stored(
        self: &Arc<Self>,
        run_id: &RunId,
        reason: &str,
    ) -> Result<(), RuntimeError> {
        let status = self
            .store
            .load_run(run_id)
            .await?
            .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()))?
            .record
            .status;
        if status == RunStatus::Running {
            // Driven by another process, or by none after a crash before
            // `resume_unfinished`: only its driver may change it.
            return Err(RuntimeError::NotAwaiting {
                run_id: run_id.clone(),
                status: status.as_str(),
            });
        }
        let (_, machine, shared) = self
            .update_stored(run_id, |machine, _| {
                machine.cancel(reason.to_owned())?;
                Ok(machine
                    .outcome()
                    .map(|outcome| EventKind::RunFinished {
                        outcome: outcome.clone(),
                    })
                    .into_iter()
                    .collect())
            })
            .await?;
        if let Some(outcome) = machine.outcome() {
            self.finished(&shared, Ok(outcome.clone()));
        }
        Ok(())
    }

    /// Pauses a run no task drives.
    async fn pause_stored(self: &Arc<Self>, run_id: &RunId) -> Result<(), RuntimeError> {
        self.update_stored(run_id, |machine, now| {
            machine.pause(now)?;
            Ok(vec![EventKind::RunPaused {
                reason: "paused by request".to_owned(),
            }])
        })
        .await
        .map(|_| ())
    }

    fn finished(&self, shared: &Arc<RunShared>, end: Result<RunOutcome, RuntimeError>) {
        let _ = shared.finished.set(end);
        self.forget(&shared.run_id);
        shared.done.notify_waiters();
    }

    /// Bookkeeping when the driver task with `epoch` ends. A pause or cancel
    /// requested while the driver was handing the run back is applied here,
    /// under the control lock, so no request is lost.
    pub(crate) async fn driver_done(
        self: &Arc<Self>,
        shared: &Arc<RunShared>,
        epoch: u64,
        end: &DriveEnd,
    ) {
        match end {
            DriveEnd::Finished(outcome) => {
                shared.release(epoch);
                self.finished(shared, Ok(outcome.clone()));
            }
            DriveEnd::StoreFailed(e) => {
                shared.release(epoch);
                self.finished(shared, Err(e.clone()));
            }
            DriveEnd::Paused => {
                let _guard = self.control.lock().await;
                if !shared.release(epoch) {
                    return;
                }
                if shared.cancel.is_cancelled() {
                    let reason = shared.cancel_reason();
                    if let Err(e) = self.cancel_stored(&shared.run_id, &reason).await {
                        tracing::warn!(run_id = %shared.run_id, error = %e, "late cancel failed");
                    }
                } else if shared.pause_requested.swap(false, Ordering::AcqRel)
                    && let Err(e) = self.pause_stored(&shared.run_id).await
                {
                    tracing::debug!(run_id = %shared.run_id, error = %e, "late pause not applied");
                }
                // Keep the entry only while someone subscribes or waits.
                let mut live = self.live();
                if Arc::strong_count(shared) <= 2 && !shared.has_subscribers() {
                    live.remove(&shared.run_id);
                }
            }
        }
    }
}
