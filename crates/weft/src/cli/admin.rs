//! `weft runs ...` and `weft sessions ...`: inspect and steer stored runs and
//! sessions directly in a store. How a listing prints rows that cannot be
//! read is in `listed`.

mod listed;

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use weft_core::awaiting::AwaitItem;
use weft_core::event::EventKind;
use weft_core::session::{FullStore, SessionFilter};
use weft_core::store::{RunFilter, RunStatus, RunStore};
use weft_core::{RunId, SessionId};
use weft_runtime::Runtime;

use crate::render::{OutputFormat, Renderer};

/// A `weft runs` command.
#[derive(Debug, Clone)]
pub enum RunsCommand {
    /// List runs, newest first.
    List {
        /// Only this session's.
        session: Option<String>,
        /// Only these statuses.
        status: Vec<RunStatus>,
        /// Print one JSON object (`runs`, and `skipped` as the HTTP API
        /// marks rows that cannot be read) instead of JSON lines.
        json: bool,
    },
    /// Show one run's transcript (`json`: its record, phase and outcome).
    Show {
        /// The run.
        run: String,
        /// Print the record, phase and outcome as one JSON object instead.
        json: bool,
    },
    /// Print a run's stored events as JSON lines.
    Events {
        /// The run.
        run: String,
        /// Only events after this sequence number.
        after: u64,
    },
    /// Continue a paused run and follow it until it pauses or finishes.
    Continue {
        /// The run.
        run: String,
        /// Agent files, one of which must be the run's agent.
        agents: Vec<std::path::PathBuf>,
    },
    /// Recover a run a crashed process left running and follow it until it
    /// pauses or finishes.
    Recover {
        /// The run.
        run: String,
        /// Agent files, one of which must be the run's agent.
        agents: Vec<std::path::PathBuf>,
    },
    /// Cancel a paused or awaiting run.
    Cancel {
        /// The run.
        run: String,
        /// Why.
        reason: String,
    },
}

/// A `weft sessions` command.
#[derive(Debug, Clone)]
pub enum SessionsCommand {
    /// List sessions.
    List {
        /// Include ended sessions.
        all: bool,
    },
    /// End a session, cancelling its paused and awaiting runs.
    End {
        /// The session.
        session: String,
    },
}

async fn open(db: &str) -> anyhow::Result<Arc<dyn FullStore>> {
    super::existing_store(db).await
}

fn block_on<F: std::future::Future<Output = anyhow::Result<ExitCode>>>(
    f: F,
) -> anyhow::Result<ExitCode> {
    super::async_runtime()?.block_on(f)
}

/// Runs a `weft runs` command against the store at `db`.
pub fn runs(db: &str, cmd: RunsCommand) -> anyhow::Result<ExitCode> {
    block_on(async move {
        let store = open(db).await?;
        let recovering = matches!(cmd, RunsCommand::Recover { .. });
        match cmd {
            RunsCommand::List {
                session,
                status,
                json,
            } => {
                let filter = RunFilter {
                    session_id: session.map(SessionId::from),
                    statuses: status,
                    ..RunFilter::default()
                };
                let rows = store.list_run_rows(&filter).await?;
                listed::print_runs(rows, json)?;
            }
            RunsCommand::Show { run, json } => {
                let id = RunId::from(run.as_str());
                let stored = store
                    .load_run(&id)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("run `{run}` not found"))?;
                if !json {
                    let events = store.read_events(&id, 0, None).await?;
                    let mut out = std::io::stdout().lock();
                    crate::transcript::write_transcript(&mut out, &stored, &events)?;
                    return Ok(ExitCode::SUCCESS);
                }
                let m = &stored.snapshot;
                let view = json!({
                    "record": stored.record,
                    "phase": m.phase_name(),
                    "paused": m.is_paused(),
                    "turns": m.turn(),
                    "tool_calls": m.tool_calls_made(),
                    "outcome": m.outcome(),
                    "event_seq": m.event_seq(),
                    "last_seq": stored.last_seq,
                    "lease_owner": stored.lease_owner,
                });
                println!("{}", serde_json::to_string_pretty(&view)?);
            }
            RunsCommand::Events { run, after } => {
                for e in store
                    .read_events(&RunId::from(run.as_str()), after, None)
                    .await?
                {
                    println!("{}", serde_json::to_string(&e)?);
                }
            }
            RunsCommand::Continue { run, agents } | RunsCommand::Recover { run, agents } => {
                let rs: Arc<dyn RunStore> = store.clone();
                let mut builder = Runtime::builder().store(rs.clone()).prompts(store);
                for path in &agents {
                    for agent in crate::agent_file::load_team(path, None)? {
                        builder = builder.agent(agent);
                    }
                }
                let runtime = builder.build();
                let id = RunId::from(run.as_str());
                let record = rs
                    .load_run(&id)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("run `{run}` not found"))?
                    .record;
                match (record.status, recovering) {
                    (RunStatus::Paused, false) => runtime.continue_run(&id).await?,
                    (RunStatus::Running, true) => recover_when_free(&runtime, &id).await?,
                    (RunStatus::Running, false) => anyhow::bail!(
                        "run `{run}` is running, not paused: if the process that drove it is gone, use `weft runs recover`"
                    ),
                    (RunStatus::Paused, true) => anyhow::bail!(
                        "run `{run}` is paused, not left running by a crash: use `weft runs continue`"
                    ),
                    (other, _) => {
                        anyhow::bail!("run `{run}` is {}: nothing to go on with", other.as_str())
                    }
                }
                let after = rs
                    .read_events(&id, 0, None)
                    .await?
                    .last()
                    .map_or(0, |e| e.seq);
                let mut events = runtime.subscribe(&id, after).await?;
                let stdout = std::io::stdout();
                let mut renderer = Renderer::new(stdout.lock(), OutputFormat::Text);
                while let Some(e) = events.next().await {
                    let e = e?;
                    renderer.event(&e)?;
                    match &e.kind {
                        EventKind::RunFinished { outcome } => {
                            renderer.outcome(outcome)?;
                            break;
                        }
                        EventKind::RunPaused { reason } => {
                            println!("‖ {reason}");
                            break;
                        }
                        // A running call's question does not stop the run.
                        EventKind::AwaitRequested { items }
                            if items
                                .iter()
                                .any(|i| !matches!(i, AwaitItem::Elicitation(_))) =>
                        {
                            println!("‖ awaiting answers");
                            break;
                        }
                        _ => {}
                    }
                }
            }
            RunsCommand::Cancel { run, reason } => {
                let rs: Arc<dyn RunStore> = store;
                let runtime = Runtime::builder().store(rs).build();
                runtime.cancel(&RunId::from(run.as_str()), &reason).await?;
                println!("cancelled {run}");
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Runs a `weft sessions` command against the store at `db`.
pub fn sessions(db: &str, cmd: SessionsCommand) -> anyhow::Result<ExitCode> {
    block_on(async move {
        let store = open(db).await?;
        match cmd {
            SessionsCommand::List { all } => {
                let filter = SessionFilter {
                    include_ended: all,
                    ..SessionFilter::default()
                };
                let rows = store.list_session_rows(&filter).await?;
                listed::print_sessions(rows)?;
            }
            SessionsCommand::End { session } => {
                let id = SessionId::from(session.as_str());
                let now = {
                    use weft_runtime::Clock as _;
                    weft_runtime::SystemClock.now()
                };
                store.end_session(&id, now).await?;
                let rs: Arc<dyn RunStore> = store.clone();
                let runtime = Runtime::builder().store(rs.clone()).build();
                let filter = RunFilter {
                    session_id: Some(id),
                    // Running runs too: one another process drives is
                    // cancelled through a control request on its row.
                    statuses: vec![RunStatus::Running, RunStatus::Awaiting, RunStatus::Paused],
                    ..RunFilter::default()
                };
                let mut cancelled = 0;
                // A run whose row cannot be read is cancelled too: the
                // cancel quarantines it.
                for r in rs.list_run_rows(&filter).await? {
                    if runtime.cancel(r.run_id(), "session ended").await.is_ok() {
                        cancelled += 1;
                    }
                }
                println!("ended {session}; cancelled {cancelled} run(s)");
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// How long `weft runs recover` waits for the lease of a run's dead driver
/// to lapse (a server's default lease TTL is 5 s).
const RECOVER_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// Takes the run over once no live process holds its lease; a run whose
/// lease keeps being renewed is driven by a live process and is refused.
async fn recover_when_free(runtime: &Runtime, id: &RunId) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match runtime.recover(id).await {
            Ok(_) => return Ok(()),
            Err(weft_runtime::RuntimeError::DrivenElsewhere(_))
                if started.elapsed() < RECOVER_WAIT =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            Err(weft_runtime::RuntimeError::DrivenElsewhere(_)) => anyhow::bail!(
                "run `{id}` is driven by a live process (its lease was renewed for {} s): \
                 follow it with `weft runs events` instead",
                RECOVER_WAIT.as_secs()
            ),
            Err(e) => return Err(e.into()),
        }
    }
}
