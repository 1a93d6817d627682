//! [`Runtime`]: registers agents, starts runs, subscribes to their events
//! and waits for their outcomes; [`control`] answers awaits, pauses,
//! continues, cancels and recovers runs.

mod builder;
mod children;
mod control;
mod follow;
mod handle;
mod recovery;
mod remote;
mod request;
mod stored;

pub use builder::{DEFAULT_MAX_DRIVEN_RUNS, RuntimeBuilder};
pub use handle::RunHandle;
pub use request::StartRequest;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::FutureExt as _;
use tracing::Instrument as _;

use weft_core::awaiting::AwaitAnswer;
use weft_core::run::{AwaitProgress, RunConfig, RunMachine, RunOutcome};
use weft_core::session::FullStore;
use weft_core::session::PromptStore;
use weft_core::store::{Commit, RunRecord, RunStatus, RunStore};
use weft_core::tool::Labels;
use weft_core::{AgentId, AwaitItemId, RunId, SessionId};

use crate::agent::Agent;
use crate::clock::Clock;
use crate::driver::{DriveEnd, RunTask, status_of};
use crate::error::RuntimeError;
use crate::events::{EventStream, RunShared};
use crate::leases::Leases;
use crate::observe::{Observation, Observer};
use crate::session;
use crate::tools::AgentTools;

/// How often a run driven elsewhere is looked up while waiting for its outcome.
pub const OUTCOME_POLL: Duration = Duration::from_millis(200);

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
    prompts: Option<Arc<dyn PromptStore>>,
    /// The same store as `store`, when it keeps sessions.
    pub(crate) sessions: Option<Arc<dyn FullStore>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) payload_budget: u64,
    live: Mutex<HashMap<RunId, Arc<RunShared>>>,
    pub(crate) leases: Arc<Leases>,
    pub(crate) observer: Arc<dyn Observer>,
    /// The poll for control requests on runs driven here (see `remote`).
    control_poll: OnceLock<tokio::task::AbortHandle>,
    /// Most runs driven here at once; more wait in the store's queue.
    pub(crate) max_driven: usize,
    /// Wakes the sweeper when a driver ends, so queued runs start at once.
    pub(crate) capacity_freed: tokio::sync::Notify,
    /// Cancellations of child runs started in the background and not done
    /// yet (see [`Runtime::settle`]).
    pub(crate) cancelling: std::sync::atomic::AtomicUsize,
}

/// The lease a new driver task drives under, and whether it recovers the
/// run after a crash (pending calls may have been in flight).
pub(crate) struct Drive {
    pub(crate) epoch: u64,
    pub(crate) recovering: bool,
}

/// What a caught panic says.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

impl Runtime {
    /// The runtime's store.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.inner.store
    }

    /// A registered agent.
    pub fn agent(&self, id: &str) -> Option<&Arc<Agent>> {
        self.inner.agents.get(id)
    }

    /// The ids of the registered agents, in order.
    pub fn agent_ids(&self) -> Vec<&AgentId> {
        let mut ids: Vec<&AgentId> = self.inner.agents.keys().collect();
        ids.sort();
        ids
    }

    /// Starts a run of `agent`. With a [session store](RuntimeBuilder::session_store)
    /// the run starts from its session's history, and a session that has
    /// ended refuses it ([`RuntimeError::SessionEnded`]).
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
        let sessions = self.inner.sessions.as_deref();
        let (messages, history_len) =
            session::start_messages(sessions, &agent, &session_id, request.messages).await?;
        let shared = self.inner.live_entry(&run_id, 0);
        let mut machine = RunMachine::new(
            RunConfig::new(agent.id.clone(), session_id.clone(), messages)
                .with_policy(request.policy.unwrap_or_else(|| agent.policy.clone())),
            now,
        );
        session::mark_history(&mut machine, history_len);
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
        let Some(place) = self.inner.leases.reserve(self.inner.max_driven, 1).pop() else {
            return self.queue(run_id, shared, &record, &events, &machine).await;
        };
        let lease = self.inner.leases.request(now);
        let created = self
            .inner
            .store
            .create_leased_run(&record, &events, &machine, lease)
            .await;
        shared.end_commit(created.is_ok());
        let epoch = match created {
            Ok(epoch) => epoch,
            Err(e) => {
                self.inner.forget(&run_id);
                return Err(e.into());
            }
        };
        self.inner.leases.hold(&run_id, epoch, Some(place));
        let started = Observation::RunStarted { agent: &agent.id };
        self.inner.observer.observe(&started);
        self.inner.spawn(
            agent,
            tools,
            shared,
            session_id,
            request.labels,
            machine,
            Drive {
                epoch,
                recovering: false,
            },
        );
        Ok(RunHandle {
            run_id,
            runtime: self.clone(),
        })
    }

    /// Stores a run this process has no room to drive: running and with no
    /// lease, it waits in the store's queue until the first runtime on the
    /// store with room claims it (its sweeper).
    async fn queue(
        &self,
        run_id: RunId,
        shared: Arc<RunShared>,
        record: &RunRecord,
        events: &[weft_core::event::RunEvent],
        machine: &RunMachine,
    ) -> Result<RunHandle, RuntimeError> {
        let created = self.inner.store.create_run(record, events, machine).await;
        shared.end_commit(created.is_ok());
        self.inner.forget(&run_id);
        created?;
        tracing::info!(
            run_id = %run_id,
            limit = self.inner.max_driven,
            "run queued: this process drives as many runs as it may"
        );
        let started = Observation::RunStarted {
            agent: &record.agent_id,
        };
        self.inner.observer.observe(&started);
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

    /// Starts a driver task for a run whose lease this process holds.
    #[allow(clippy::too_many_arguments)] // Each is a distinct part of the task.
    fn spawn(
        self: &Arc<Self>,
        agent: Arc<Agent>,
        tools: Arc<AgentTools>,
        shared: Arc<RunShared>,
        session_id: SessionId,
        labels: Labels,
        machine: RunMachine,
        drive: Drive,
    ) {
        let Drive { epoch, recovering } = drive;
        self.leases.start_heartbeat(&self.store, &self.clock);
        self.start_control_poll();
        shared.claim(epoch);
        let run_id = shared.run_id.clone();
        let tenant = labels
            .get(weft_core::prompt::TENANT_LABEL)
            .cloned()
            .unwrap_or_default();
        let mut task = RunTask {
            store: self.store.clone(),
            prompts: self.prompts.clone(),
            sessions: self.sessions.clone(),
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
            epoch,
            leases: self.leases.clone(),
            lease_lost: false,
            deferred: false,
            observer: self.observer.clone(),
            children: Arc::new(children::ChildRuns(Arc::downgrade(self))),
            turn: None,
            span: tracing::Span::none(),
        };
        let inner = Arc::clone(self);
        let span = tracing::info_span!(
            "run",
            run_id = %shared.run_id,
            agent = %task.agent.id,
            tenant = %tenant,
        );
        // Boxed before the task is made, and so is the work after it: the
        // task's own cell holds only pointers (a cell holds every value its
        // future captures for the task's whole life). A small cell is served
        // from the allocator's caches (a large aligned one costs a heap
        // consolidation per run), and a run in flight keeps less memory.
        let drive = Box::pin(async move { task.drive().await });
        let handle = tokio::spawn(
            async move {
                // A panic in a planner, a tool adapter or the driver must not
                // leave the run held here forever: it ends the task like a
                // failure, and the run is stored paused for a human to look at.
                let (end, held) = match std::panic::AssertUnwindSafe(drive).catch_unwind().await {
                    Ok(done) => done,
                    Err(panic) => (DriveEnd::Panicked(panic_message(&panic)), None),
                };
                Box::pin(inner.driver_done(&shared, epoch, &end, held)).await;
            }
            .instrument(span),
        );
        self.leases.set_task(&run_id, epoch, handle.abort_handle());
    }

    /// The stored run `run_id`; a run the store does not have is `RunNotFound`.
    async fn stored(&self, run_id: &RunId) -> Result<weft_core::store::StoredRun, RuntimeError> {
        self.store
            .load_run(run_id)
            .await?
            .ok_or_else(|| RuntimeError::RunNotFound(run_id.clone()))
    }

    /// A fresh, unguessable run id that sorts by creation time: a UUIDv7,
    /// its 74 bits after the millisecond timestamp random. A store keeps a
    /// run's rows under its id, so a new run's rows go after every older
    /// run's instead of into the middle of the indexes, where each insert
    /// splits and rebalances pages that other runs' rows share.
    fn next_run_id(&self) -> RunId {
        let now = uuid::Timestamp::now(uuid::NoContext);
        RunId::new(format!("run_{}", uuid::Uuid::new_v7(now).simple()))
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
