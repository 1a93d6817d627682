//! `weft runs answer`: answers a question of a run left awaiting in a store
//! (by `weft run` when no answer came), then drives the run on in this
//! process and shows it until it ends or asks again.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, anyhow};
use weft_core::RunId;
use weft_core::event::EventKind;
use weft_core::run::AwaitProgress;
use weft_core::store::{RunStatus, RunStore};
use weft_runtime::Runtime;

use crate::cli::ask::later::{self, Resume, UNANSWERED};
use crate::cli::ask::{AskError, piped};
use crate::render::{OutputFormat, Renderer};

/// `weft runs answer`'s command line.
#[derive(Debug, Clone, clap::Args)]
pub struct AnswerCommand {
    /// The run id.
    pub run: String,
    /// The await item's id, as `weft run` printed it.
    pub item: String,
    /// The answer, one argument per line: text for a clarification; an
    /// option's number, id or label per question; `y` or `n [reason]` for
    /// a confirmation; a JSON object of a form's fields (or its only
    /// field's value); or a whole answer as JSON (`{"kind": ...}`).
    #[arg(required = true, num_args = 1..)]
    pub answer: Vec<String>,
    /// The run's agent file (its team comes with it).
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// The model the run was started with (`weft run --model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Every run event as one JSON line, then the outcome.
    #[arg(long)]
    pub json: bool,
}

/// Answers the item, then follows the run: exit 0 for an answer, 1 for a
/// failed or cancelled run, 3 when it awaits an answer again.
pub fn answer(db: &str, cmd: AnswerCommand) -> anyhow::Result<ExitCode> {
    if cmd.agent.is_none() && cmd.model.is_none() {
        anyhow::bail!("give the run's agent file with --agent (or its model with --model)");
    }
    let agents = super::agents_of(cmd.agent.as_deref(), cmd.model.as_deref())?;
    crate::cli::async_runtime()?.block_on(async move {
        let store = crate::cli::existing_store(db).await?;
        let rs: Arc<dyn RunStore> = store.clone();
        let runtime = agents
            .into_iter()
            .fold(
                Runtime::builder().store(rs.clone()).prompts(store),
                |b, a| b.agent(a),
            )
            .build();
        let id = RunId::from(cmd.run.as_str());
        let stored = rs
            .load_run(&id)
            .await?
            .ok_or_else(|| anyhow!("run `{}` not found", cmd.run))?;
        if stored.record.status != RunStatus::Awaiting {
            anyhow::bail!(
                "run `{}` is {}: it awaits no answer",
                cmd.run,
                stored.record.status.as_str()
            );
        }
        let items = stored.snapshot.await_items().to_vec();
        let item = items
            .iter()
            .find(|i| i.id().as_str() == cmd.item)
            .with_context(|| {
                let ids: Vec<&str> = items.iter().map(|i| i.id().as_str()).collect();
                format!(
                    "run `{}` awaits no item `{}`; it awaits {}",
                    cmd.run,
                    cmd.item,
                    ids.join(", ")
                )
            })?;
        let mut lines = cmd.answer.iter();
        let answer = piped::answer(item, &mut || lines.next().cloned().ok_or(AskError::Closed))
            .map_err(|e| match e {
                AskError::Closed => anyhow!("the answer needs one more line (one per argument)"),
                e => anyhow!("{e}"),
            })?;
        let after = rs
            .read_events(&id, 0, None)
            .await?
            .last()
            .map_or(0, |e| e.seq);
        let how = Resume {
            db: Some(db.to_owned()),
            agent: cmd.agent.clone(),
            model: cmd.model.clone(),
        };
        let progress = runtime.answer(&id, item.id(), answer).await?;
        if let AwaitProgress::Pending { remaining } = progress {
            let rest: Vec<_> = items
                .iter()
                .filter(|i| i.id() != item.id())
                .cloned()
                .collect();
            let why = format!("{remaining} more answer(s) are needed first");
            let mut err = std::io::stderr().lock();
            later::left_awaiting(&mut err, &cmd.run, &rest, &why, &how)?;
            return Ok(ExitCode::from(UNANSWERED));
        }
        let format = if cmd.json {
            OutputFormat::Jsonl
        } else {
            OutputFormat::Text
        };
        let mut renderer = Renderer::new(std::io::stdout().lock(), format);
        let mut events = runtime.subscribe(&id, after).await?;
        let mut cancelled_for = None;
        while let Some(e) = events.next().await {
            let e = e?;
            renderer.event(&e)?;
            match &e.kind {
                EventKind::RunFinished { outcome } => {
                    renderer.outcome(outcome)?;
                    if let Some(item) = &cancelled_for {
                        let why = "no answer is read by `weft runs answer`";
                        later::cancelled_for(&mut std::io::stderr(), &cmd.run, item, why)?;
                        return Ok(ExitCode::from(UNANSWERED));
                    }
                    return Ok(if outcome.is_success() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    });
                }
                EventKind::AwaitRequested { items } if cancelled_for.is_none() => {
                    for item in items {
                        let mut err = std::io::stderr().lock();
                        piped::describe(item, &mut err)?;
                        writeln!(err, "  item {} of run {}", item.id(), cmd.run)?;
                    }
                    if let Some(tool) = items.iter().find(|i| later::asked_by_a_running_tool(i)) {
                        let reason = "a running tool's question got no answer";
                        runtime.cancel(&id, reason).await?;
                        cancelled_for = Some(tool.clone());
                        continue;
                    }
                    super::stored_awaiting(&runtime, &id).await?;
                    renderer.awaiting(&cmd.run, items)?;
                    let why = "the run asked again";
                    let mut err = std::io::stderr().lock();
                    later::left_awaiting(&mut err, &cmd.run, items, why, &how)?;
                    return Ok(ExitCode::from(UNANSWERED));
                }
                _ => {}
            }
        }
        anyhow::bail!("the events of run `{}` ended before its outcome", cmd.run)
    })
}
