//! Every example agent that runs offline replays its recorded runs exactly:
//! runs recorded by `weft run` (a run that asks reads its answers from
//! stdin) replay without naming their agent file, and runs whose questions
//! were answered in process (clarify; the coordinator with its researcher
//! and writer as child runs) replay with their files. The session example's
//! second run replays only if the replay gives its planner the session's
//! history and the memory the run read.
//!
//! Not replayed here: `local.toml` (it needs downloaded model weights) and
//! `registry.toml` (it needs Redis and a registry gateway; its replay is
//! checked in `registry_e2e.rs`).

mod common;

use std::collections::{BTreeSet, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::example;
use common::replay::replay_all;
use serde_json::{Value, json};
use weft_core::awaiting::{AwaitAnswer, AwaitItem};
use weft_core::event::EventKind;
use weft_core::run::RunOutcome;
use weft_runtime::{Runtime, StartRequest};

/// The examples replayed by this file.
const REPLAYED: &[&str] = &[
    "advisor.toml",
    "calculator.toml",
    "clarify.toml",
    "coordinator.toml",
    "journal.toml",
    "session.toml",
];
/// The examples replayed elsewhere or not at all (see the module docs).
const NOT_HERE: &[&str] = &["local.toml", "registry.toml"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_example_agent_is_replayed_or_said_why_not() {
    let found: BTreeSet<String> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    let known: BTreeSet<String> = REPLAYED
        .iter()
        .chain(NOT_HERE)
        .map(|s| (*s).to_owned())
        .collect();
    assert_eq!(
        found, known,
        "an example agent was added or removed: replay it in this file, or say why not"
    );
}

/// `weft run FILE PROMPT --db DB [--session S]` from the repository's root
/// (the advisor's model file is named relative to it).
fn weft_run(file: &str, prompt: &str, db: &Path, session: Option<&str>, journal: &Path) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.current_dir(repo_root())
        .arg("run")
        .arg(example(file))
        .arg(prompt)
        .arg("--db")
        .arg(db)
        .arg("--json")
        .env("WEFT_JOURNAL_DIR", journal);
    if let Some(s) = session {
        cmd.args(["--session", s]);
    }
    // The answers of the examples that ask: clarify's numbers, the
    // coordinator's writer's tone.
    let answers: &[u8] = match file {
        "clarify.toml" => b"3 and 4\n",
        "coordinator.toml" => b"formal\n",
        _ => b"",
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(answers).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.code().is_some(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The last line is the run's end.
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "run_finished")
        .unwrap_or_else(|| panic!("no run_finished in:\n{stdout}"))
}

#[test]
fn every_offline_example_run_by_weft_run_replays_without_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let journal = dir.path().join("journal");
    std::fs::create_dir(&journal).unwrap();
    let prompts = [
        ("advisor.toml", "multiply 2+3 by 4"),
        ("calculator.toml", "What is (2 + 3) * 7?"),
        ("clarify.toml", "add, then multiply"),
        ("coordinator.toml", "Report on 6 * 7"),
        ("journal.toml", "go"),
    ];
    for (file, prompt) in prompts {
        weft_run(file, prompt, &db, None, &journal);
    }
    let noted = "Remember: the launch code is 7-4-1.";
    weft_run("session.toml", noted, &db, Some("demo"), &journal);
    let second = weft_run(
        "session.toml",
        "What did you note?",
        &db,
        Some("demo"),
        &journal,
    );
    // The second run's answer came from the session's memory (the script's
    // position) and history (the first run's answer).
    let answer = second["outcome"]["message"].to_string();
    assert!(
        answer.contains(&format!("Earlier I answered: \\\"Noted: {noted}")),
        "{second}"
    );

    let replayed = replay_all(db.to_str().unwrap(), &[], &[]);
    // The coordinator's run brings its two specialists' child runs; the
    // writer's question was answered from stdin: every run ended and
    // replays identically.
    assert_eq!(
        replayed.reports.len(),
        prompts.len() + 1 + 2 + 1,
        "{:?}",
        replayed.reports
    );
    assert!(
        replayed.reports.iter().all(|r| r["verdict"] == "identical"),
        "{:?}",
        replayed.reports
    );
    assert_eq!(replayed.code, Some(0));
}

/// The answer a test human gives to `item`.
fn answer_for(item: &AwaitItem) -> AwaitAnswer {
    let answer = match item {
        AwaitItem::Elicitation(_) => {
            json!({"kind": "elicitation", "action": "accept", "content": {"answer": "plain"}})
        }
        _ => json!({"kind": "clarification", "text": "3 and 4"}),
    };
    serde_json::from_value(answer).unwrap()
}

/// Starts a run of `agent` and answers every question it asks until it ends.
async fn run_answering(runtime: &Runtime, agent: &str, prompt: &str) -> RunOutcome {
    let run = runtime
        .start(agent, StartRequest::user(prompt))
        .await
        .unwrap();
    let id = run.run_id().clone();
    let mut answered = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let wait = tokio::time::timeout(Duration::from_millis(50), run.outcome()).await;
        if let Ok(outcome) = wait {
            return outcome.unwrap();
        }
        assert!(Instant::now() < deadline, "run {id} did not finish");
        let events = runtime.store().read_events(&id, 0, None).await.unwrap();
        for e in events {
            let EventKind::AwaitRequested { items } = e.kind else {
                continue;
            };
            for item in items {
                if !answered.contains(item.id())
                    && runtime
                        .answer(&id, item.id(), answer_for(&item))
                        .await
                        .is_ok()
                {
                    answered.insert(item.id().clone());
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn answered_clarify_and_coordinator_runs_replay_identically() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let db = db.to_str().unwrap();
    let store = weft_store::connect(db).await.unwrap();
    let mut builder = Runtime::builder()
        .session_store(store.clone())
        .prompts(store);
    for file in ["clarify.toml", "coordinator.toml"] {
        for agent in weft::agent_file::load_team(&example(file), None).unwrap() {
            builder = builder.agent(agent);
        }
    }
    let runtime = builder.build();
    let clarified = run_answering(&runtime, "clarify", "add, then multiply").await;
    assert!(clarified.is_success(), "{clarified:?}");
    let reported = run_answering(&runtime, "coordinator", "Report on 6 * 7").await;
    assert!(reported.is_success(), "{reported:?}");
    drop(runtime);

    let files = [example("clarify.toml"), example("coordinator.toml")];
    let db = db.to_owned();
    let (replayed, unnamed) = tokio::task::spawn_blocking(move || {
        (replay_all(&db, &files, &[]), replay_all(&db, &[], &[]))
    })
    .await
    .unwrap();
    // Runs not started by `weft run` do not name their file.
    assert_eq!(unnamed.summary["not_replayable"], 4, "{}", unnamed.summary);
    assert!(
        unnamed.reports[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("give one with --agent")),
        "{:?}",
        unnamed.reports
    );
    // clarify, and the coordinator with its researcher and writer.
    replayed.assert_identical(4);
    let decisions: usize = replayed
        .reports
        .iter()
        .map(|r| r["matched"].as_u64().unwrap_or(0) as usize)
        .sum();
    // clarify: add, await, answer; coordinator: two calls, answer;
    // researcher: a call, answer; writer: await, answer.
    assert_eq!(decisions, 3 + 3 + 2 + 2, "{:?}", replayed.reports);
}
