//! `weft replay`: stored runs driven again with an agent file, no model
//! called and no tool run, reporting the first decision that differs
//! (`weft_runtime::replay`). Each run is restored from the store first
//! (its labels, session history, memory read and prompt overrides); its
//! agent file is found as [`files`] says. Whatever the verdict, what
//! differs between the recorded agent and the one given (model, system
//! prompt, tools, settings) is listed. Exit 0 when identical, 1 when a
//! difference is found, 2 on errors.

mod files;
mod since;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use serde_json::json;
use weft_core::RunId;
use weft_core::session::FullStore;
use weft_core::store::{ListCursor, RunFilter, RunStore};
use weft_models::RecordedModel;
use weft_runtime::replay::{Recording, ReplayReport, Verdict, replay as replay_run};

pub use files::{AGENT_FILE_LABEL, AgentFiles, agent_file_label};
pub use since::parse_since;

/// What `weft replay` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The run to replay.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub run: Option<String>,
    /// Replay every run created since `--since`.
    #[arg(long, requires = "since")]
    pub all: bool,
    /// With `--all`: an RFC 3339 time (`2026-11-23T10:00:00Z`) or a
    /// duration back from now (`90s`, `30m`, `24h`, `7d`).
    #[arg(long)]
    pub since: Option<String>,
    /// An agent file (repeatable): its planner, prompts, policy and caps
    /// replay the runs of its agent id (and the agents it calls as tools,
    /// those of theirs); a single file replays a single run whatever the
    /// run's agent. Without one, each run replays with the file it was
    /// started from, when `weft run` started it.
    #[arg(long = "agent")]
    pub agents: Vec<PathBuf>,
    /// The store: a SQLite file path or a `postgres://` URL.
    #[arg(long, visible_alias = "db", default_value = "weft.db")]
    pub store: String,
    /// Print one JSON object per run (and a summary with `--all`).
    #[arg(long)]
    pub json: bool,
}

/// How many runs `--all` lists per store page.
const PAGE: u32 = 500;
/// How many events a run's log is read per store page.
const EVENT_PAGE: u32 = 1_000;
/// The longest log replayed: a longer one is not replayable.
pub const MAX_REPLAY_EVENTS: usize = 200_000;

/// One run's replay, or why it could not be replayed.
enum Replayed {
    Report(ReplayReport),
    NotReplayable { run_id: RunId, reason: String },
}

/// Runs `weft replay`.
pub fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    super::async_runtime()?.block_on(async move {
        let store: Arc<dyn FullStore> = super::existing_store(&args.store).await?;
        let mut files = AgentFiles::load(&args.agents)?;
        match (&args.run, &args.since) {
            (Some(run), _) => {
                let r = replay_one(&*store, &mut files, &RunId::from(run.as_str()), true).await?;
                print(&r, args.json)?;
                Ok(ExitCode::from(match &r {
                    Replayed::Report(r) if r.verdict.is_identical() => 0,
                    Replayed::Report(_) => 1,
                    Replayed::NotReplayable { .. } => 2,
                }))
            }
            (None, Some(since)) => {
                let now = {
                    use weft_runtime::Clock as _;
                    weft_runtime::SystemClock.now()
                };
                let since = parse_since(since, now).map_err(anyhow::Error::msg)?;
                let ids = runs_since(&*store, since).await?;
                let (mut identical, mut differ, mut unreplayable) = (0, 0, 0);
                for id in ids.iter().rev() {
                    let r = replay_one(&*store, &mut files, id, false).await?;
                    match &r {
                        Replayed::Report(r) if r.verdict.is_identical() => identical += 1,
                        Replayed::Report(_) => differ += 1,
                        Replayed::NotReplayable { .. } => unreplayable += 1,
                    }
                    print(&r, args.json)?;
                }
                let replayed = identical + differ;
                if args.json {
                    let summary = json!({"summary": {
                        "replayed": replayed, "identical": identical,
                        "differ": differ, "not_replayable": unreplayable,
                    }});
                    println!("{summary}");
                } else {
                    println!(
                        "{replayed} replayed, {identical} identical, {differ} differ, {unreplayable} not replayable"
                    );
                }
                Ok(ExitCode::from(if differ > 0 { 1 } else { 0 }))
            }
            (None, None) => anyhow::bail!("give a run id, or --all with --since"),
        }
    })
}

/// The ids of the runs created at or after `since`, newest first.
async fn runs_since(
    store: &dyn RunStore,
    since: weft_core::Timestamp,
) -> anyhow::Result<Vec<RunId>> {
    let mut filter = RunFilter {
        limit: Some(PAGE),
        ..RunFilter::default()
    };
    let mut ids = Vec::new();
    loop {
        let page = store.list_runs(&filter).await?;
        let full = page.len() == PAGE as usize;
        for r in &page {
            if r.created_at < since {
                return Ok(ids);
            }
            ids.push(r.run_id.clone());
        }
        match page.last() {
            Some(last) if full => {
                filter.before = Some(ListCursor {
                    created_at: last.created_at,
                    id: last.run_id.to_string(),
                });
            }
            _ => return Ok(ids),
        }
    }
}

/// Replays one run with the agent file of its agent (`lone`: the single
/// file given, whatever its id). Store failures are errors; a run that
/// cannot be replayed says why.
async fn replay_one(
    store: &dyn FullStore,
    files: &mut AgentFiles,
    run_id: &RunId,
    lone: bool,
) -> anyhow::Result<Replayed> {
    let not = |reason: String| Replayed::NotReplayable {
        run_id: run_id.clone(),
        reason,
    };
    let mut events = Vec::new();
    loop {
        let after = events
            .last()
            .map_or(0, |e: &weft_core::event::RunEvent| e.seq);
        let page = store
            .read_events(run_id, after, Some(EVENT_PAGE))
            .await
            .with_context(|| format!("reading the events of run `{run_id}`"))?;
        let full = page.len() == EVENT_PAGE as usize;
        events.extend(page);
        if events.len() > MAX_REPLAY_EVENTS {
            return Ok(not(format!(
                "its log is longer than {MAX_REPLAY_EVENTS} events"
            )));
        }
        if !full {
            break;
        }
    }
    let mut recording = match Recording::from_events(run_id, &events) {
        Ok(r) => r,
        Err(e) => return Ok(not(e.to_string())),
    };
    recording
        .restore_from(store)
        .await
        .with_context(|| format!("restoring run `{run_id}` from the store"))?;
    let file = match files.find(recording.agent_id.as_str(), &recording.labels, lone) {
        Ok(file) => file,
        Err(reason) => return Ok(not(reason)),
    };
    // The recorded answers play under the file's model id: the model
    // setup compared with the recording's is the agent given's.
    let model_id = file.model_id().unwrap_or_else(|| {
        recording
            .model_outputs
            .first()
            .map_or("recorded", |(m, _)| m.as_str())
            .to_owned()
    });
    let recorded = Arc::new(RecordedModel::new(model_id, recording.model_summaries()));
    let (planner, asks_model) = match file.replay_planner(recorded) {
        Ok(p) => p,
        Err(e) => return Ok(not(format!("agent `{}`: {e}", file.id))),
    };
    if asks_model && recording.model_outputs.is_empty() && recording.used_a_model {
        return Ok(not(
            "the log holds no model outputs (it was recorded before weft logged them)".to_owned(),
        ));
    }
    // The advisor's answers are tool results the recording holds: its
    // model is never asked (nor built: it may need a key or a file).
    let advisor = file
        .advisor
        .as_ref()
        .map(|a| Arc::new(RecordedModel::new(a.model.as_str(), Vec::new())) as _);
    let agent = match file.agent_on(planner, advisor) {
        Ok(agent) => agent,
        Err(e) => return Ok(not(format!("agent `{}`: {e}", file.id))),
    };
    match replay_run(&agent, &recording).await {
        Ok(report) => Ok(Replayed::Report(report)),
        Err(e) => Ok(not(e.to_string())),
    }
}

fn print(r: &Replayed, as_json: bool) -> anyhow::Result<()> {
    match (r, as_json) {
        (Replayed::Report(report), true) => println!("{}", serde_json::to_string(report)?),
        (Replayed::NotReplayable { run_id, reason }, true) => println!(
            "{}",
            json!({"run_id": run_id, "verdict": "not_replayable", "reason": reason})
        ),
        (Replayed::Report(report), false) => {
            let (id, n) = (&report.run_id, report.matched);
            match &report.verdict {
                Verdict::Identical => println!("run {id}: identical ({n} decisions)"),
                Verdict::IdenticalSoFar { reason } => {
                    println!("run {id}: identical so far ({n} decisions; {reason})")
                }
                Verdict::Differs { difference } => {
                    println!("run {id}: differs");
                    for line in difference.render() {
                        println!("{line}");
                    }
                }
            }
        }
        (Replayed::NotReplayable { run_id, reason }, false) => {
            println!("run {run_id}: not replayable: {reason}")
        }
    }
    if let (Replayed::Report(report), false) = (r, as_json) {
        match &report.agent_changes {
            None => println!("  the recording holds no agent description to compare with"),
            Some(changes) if changes.is_empty() => {}
            Some(changes) => {
                println!("  the agent given differs from the recorded one:");
                for c in changes {
                    println!("    {c}");
                }
            }
        }
    }
    Ok(())
}
