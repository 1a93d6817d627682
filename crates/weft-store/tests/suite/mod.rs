//! The store test suite: backend-independent async tests taking a store, run
//! against SQLite by `tests/sqlite.rs` and PostgreSQL by `tests/postgres.rs`.

#![allow(dead_code)]

pub mod controls;
pub mod corrupt;
pub mod corrupt_sessions;
pub mod history;
pub mod leases;
pub mod prompts;
pub mod runs;
pub mod runs_status;
pub mod sessions;
pub mod snapshots;

use serde_json::{Value, json};
use weft_core::event::{EventKind, RunEvent};
use weft_core::planner::{PlanResult, ToolCallRequest};
use weft_core::run::{PlanOutcome, RunConfig, RunMachine, Step, ToolCatalog};
use weft_core::session::FullStore;
use weft_core::store::{RunRecord, RunStatus};
use weft_core::tool::{FieldIssue, Labels, ToolIdent, ToolOutput, ToolSpec};
use weft_core::{AgentId, RunId, SessionId, Timestamp};
use weft_store::OpenError;

/// Lists the suite's tests for a backend's harness macro.
#[macro_export]
macro_rules! for_each_suite_test {
    ($m:ident) => {
        $m!(
            runs::snapshot_round_trip_of_a_driven_machine,
            runs::appending_a_stored_seq_is_a_no_op_unless_its_content_differs,
            runs::a_gap_is_rejected_and_nothing_is_written,
            runs::a_failing_commit_leaves_nothing_half_written,
            runs::creating_twice_and_committing_to_nothing_fail,
            runs::read_events_pages_and_knows_unknown_runs,
            runs::list_runs_filters_newest_first,
            runs::concurrent_commits_keep_every_log_gap_free,
            runs::one_bad_commit_does_not_sink_concurrent_ones,
            runs_status::statuses_follow_every_transition,
            snapshots::a_run_committed_step_by_step_reloads_equal,
            leases::a_superseded_epoch_cannot_commit,
            leases::stopping_the_run_frees_its_lease,
            leases::renewal_reports_lost_leases,
            leases::orphans_are_claimed_once,
            controls::control_requests_reach_the_holder,
            controls::answers_reach_the_holder_in_order,
            sessions::session_lifecycle,
            sessions::ended_sessions_reject_new_runs,
            sessions::ending_races_cleanly_with_new_runs,
            sessions::transcript_appends_are_idempotent_and_gap_free,
            sessions::memory_set_get_delete,
            sessions::memory_is_bounded,
            sessions::prompt_overrides_resolve_by_scope,
            prompts::prompt_override_precedence_with_tenants,
            prompts::prompt_listings_page_within_a_tenant,
            history::completing_runs_append_their_conversation_once,
            history::a_fenced_out_completion_appends_nothing,
            history::deleting_a_session_erases_its_history_and_refuses_runs,
            history::concurrent_completions_in_one_session_append_whole_exchanges,
        );
    };
}

/// A tiny catalog: one tool, `demo.echo`, that accepts any arguments.
pub struct Catalog {
    specs: Vec<ToolSpec>,
}

impl Catalog {
    pub fn new() -> Self {
        Self {
            specs: vec![ToolSpec {
                name: ToolIdent::new("demo.echo"),
                description: "Echoes its input.".into(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: Default::default(),
                tags: Vec::new(),
            }],
        }
    }
}

impl ToolCatalog for Catalog {
    fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.specs.iter().find(|s| s.name.as_str() == name)
    }

    fn names(&self) -> Vec<ToolIdent> {
        self.specs.iter().map(|s| s.name.clone()).collect()
    }

    fn validate(&self, _spec: &ToolSpec, _arguments: &Value) -> Result<(), Vec<FieldIssue>> {
        Ok(())
    }
}

/// A machine driven through one tool turn, now planning its second turn.
pub fn driven_machine() -> RunMachine {
    let now = Timestamp::from_millis(0);
    let mut m = RunMachine::new(RunConfig::new("agent", "session", Vec::new()), now);
    assert!(matches!(m.next_step(now), Step::Plan { .. }));
    let call = ToolCallRequest::new("demo.echo", json!({"text": "hi"})).with_id("call-1");
    let outcome = m
        .plan_result(PlanResult::tool_calls(vec![call]), now, &Catalog::new())
        .unwrap();
    assert!(matches!(outcome, PlanOutcome::Continue { .. }));
    assert!(matches!(
        m.next_step(Timestamp::from_millis(5)),
        Step::ExecuteTools { .. }
    ));
    let out = ToolOutput::ok(
        "call-1".into(),
        ToolIdent::new("demo.echo"),
        json!({"text": "hi"}),
        json!("hi"),
    );
    m.tool_results(vec![out], Timestamp::from_millis(10))
        .unwrap();
    m.set_state("k".into(), json!({"nested": [1, 2, 3]}));
    m.set_event_seq(4);
    m
}

/// A fresh machine.
pub fn machine() -> RunMachine {
    RunMachine::new(
        RunConfig::new("agent", "session", Vec::new()),
        Timestamp::from_millis(0),
    )
}

/// A run record.
pub fn record(run: &str, session: &str, created: u64) -> RunRecord {
    RunRecord {
        run_id: RunId::new(run),
        agent_id: AgentId::new("agent"),
        session_id: SessionId::new(session),
        status: RunStatus::Running,
        labels: Labels::from([("team".to_owned(), "a".to_owned())]),
        created_at: Timestamp::from_millis(created),
        updated_at: Timestamp::from_millis(created),
    }
}

/// An unfenced commit of `events` at `now`, without a snapshot.
pub fn commit<'a>(
    run_id: &'a RunId,
    events: &'a [RunEvent],
    status: RunStatus,
    now: u64,
) -> weft_core::store::Commit<'a> {
    weft_core::store::Commit {
        run_id,
        events,
        snapshot: None,
        status,
        now: Timestamp::from_millis(now),
        fence: None,
    }
}

/// Creates the run `rec` with events `1..=last` and a fresh machine.
pub async fn stored_run(store: &dyn FullStore, rec: RunRecord, last: u64) -> RunRecord {
    store
        .create_run(&rec, &events(1, last), &machine())
        .await
        .unwrap();
    rec
}

/// Events `from..=to`, each an assistant chunk naming its seq.
pub fn events(from: u64, to: u64) -> Vec<RunEvent> {
    (from..=to)
        .map(|seq| RunEvent {
            seq,
            at: Timestamp::from_millis(seq),
            kind: EventKind::AssistantChunk {
                text: format!("chunk {seq}"),
            },
        })
        .collect()
}

/// The sequence numbers of `events`.
pub fn seqs(events: &[RunEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// Checks that opening a database that applied a migration from the future
/// (version 99991231000000) was refused as too new, with advice to upgrade.
pub fn assert_too_new(err: &OpenError) {
    assert!(
        matches!(
            err,
            OpenError::SchemaTooNew {
                found: 99991231000000,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("upgrade weft"), "{err}");
}
