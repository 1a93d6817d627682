//! [`RuntimeBuilder`]: what a [`Runtime`] is made of and its limits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use weft_core::AgentId;
use weft_core::session::{FullStore, PromptStore};
use weft_core::store::RunStore;

use super::{DEFAULT_PAYLOAD_BUDGET, Inner, Runtime};
use crate::agent::Agent;
use crate::clock::{Clock, SystemClock};
use crate::leases::{DEFAULT_LEASE_TTL, Leases};
use crate::memory::MemoryStore;
use crate::observe::{self, Observer};

/// Most runs one runtime drives at once by default; runs started past it
/// wait in the store's queue until a runtime (this one or another on the
/// same store) has room.
pub const DEFAULT_MAX_DRIVEN_RUNS: usize = 10_000;

/// Builds a [`Runtime`].
pub struct RuntimeBuilder {
    agents: HashMap<AgentId, Arc<Agent>>,
    store: Option<Arc<dyn RunStore>>,
    prompts: Option<Arc<dyn PromptStore>>,
    sessions: Option<Arc<dyn FullStore>>,
    clock: Arc<dyn Clock>,
    payload_budget: u64,
    lease_ttl: Duration,
    observer: Arc<dyn Observer>,
    max_driven: usize,
}

impl RuntimeBuilder {
    /// Registers an agent.
    pub fn agent(mut self, agent: Agent) -> Self {
        self.agents.insert(agent.id.clone(), Arc::new(agent));
        self
    }

    /// Sets the store (default: in memory); see also [`Self::session_store`].
    pub fn store(mut self, store: Arc<dyn RunStore>) -> Self {
        self.store = Some(store);
        self.sessions = None;
        self
    }

    /// Sets a store that keeps sessions too: runs start from their session's
    /// history and memory, and add their conversation to its transcript.
    pub fn session_store(mut self, store: Arc<dyn FullStore>) -> Self {
        self.store = Some(store.clone());
        self.sessions = Some(store);
        self
    }

    /// Sets where prompt overrides are read from (default: nowhere, so the
    /// agents' own prompts are used): the overrides in a run's scope are
    /// read before each planning call.
    pub fn prompts(mut self, prompts: Arc<dyn PromptStore>) -> Self {
        self.prompts = Some(prompts);
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

    /// Sets how long a run's lease lasts unless renewed (default 5 s): runs
    /// of a process that died continue in another within about this long.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl.max(Duration::from_millis(30));
        self
    }

    /// Sets who is told about runs, steps, tool calls and commits (default: nobody).
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// Sets the most runs this runtime drives at once (default
    /// [`DEFAULT_MAX_DRIVEN_RUNS`], at least 1). A run started past it is
    /// stored as queued and driven by whichever runtime on the store has
    /// room first (see [`Runtime::start_sweeper`]).
    pub fn max_driven_runs(mut self, runs: usize) -> Self {
        self.max_driven = runs.max(1);
        self
    }

    /// The runtime.
    pub fn build(self) -> Runtime {
        Runtime {
            inner: Arc::new(Inner {
                agents: self.agents,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                prompts: self.prompts,
                sessions: self.sessions,
                clock: self.clock,
                payload_budget: self.payload_budget,
                live: Mutex::new(HashMap::new()),
                leases: Arc::new(Leases::new(self.lease_ttl)),
                observer: self.observer,
                control_poll: OnceLock::new(),
                max_driven: self.max_driven,
                capacity_freed: tokio::sync::Notify::new(),
                cancelling: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }
}

impl Runtime {
    /// Starts building a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            agents: HashMap::new(),
            store: None,
            prompts: None,
            sessions: None,
            clock: Arc::new(SystemClock),
            payload_budget: DEFAULT_PAYLOAD_BUDGET,
            lease_ttl: DEFAULT_LEASE_TTL,
            observer: observe::none(),
            max_driven: DEFAULT_MAX_DRIVEN_RUNS,
        }
    }
}
