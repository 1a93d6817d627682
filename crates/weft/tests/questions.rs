//! Questions without a terminal, with the real binary: `weft run` prints a
//! run's question on stderr with its item id and reads the answer from
//! stdin (a pipe or a file), one line per question; `--on-question=fail`
//! and an stdin that ends without an answer exit with code 3 and leave the
//! run awaiting in the store, where `weft runs answer` answers it later.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::example;
use serde_json::Value;

const PROMPT: &str = "Add 2 and 3, then multiply.";

fn weft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weft"))
}

/// Runs `cmd` with `input` on its stdin (`None`: an empty stdin).
fn with_stdin(cmd: &mut Command, input: Option<&str>) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(text) = input {
        stdin.write_all(text.as_bytes()).unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_lines(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The stored runs of `db`, as `weft runs list` prints them.
fn runs(db: &Path) -> Vec<Value> {
    let out = weft()
        .args(["runs", "list", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn transcript(db: &Path, run: &str) -> String {
    let out = weft()
        .args(["runs", "show", run, "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn clarify(db: &Path) -> Command {
    let mut cmd = weft();
    cmd.arg("run")
        .arg(example("clarify.toml"))
        .arg(PROMPT)
        .arg("--db")
        .arg(db);
    cmd
}

#[test]
fn a_piped_answer_to_a_clarification_completes_the_run_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let out = with_stdin(&mut clarify(&db), Some("3 and 4\n"));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("? 2 + 3 = 5. Which two numbers should I multiply next?"),
        "{stderr}"
    );
    assert!(stderr.contains("  item ask-2 of run "), "{stderr}");
    assert!(stdout.contains("Thanks! 3 * 4 = 12."), "{stdout}");
    let listed = runs(&db);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["status"], "completed");
    let shown = transcript(&db, listed[0]["run_id"].as_str().unwrap());
    assert!(shown.contains("3 and 4"), "{shown}");
}

#[test]
fn with_json_the_question_is_an_event_on_stdout_and_a_prompt_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let out = with_stdin(clarify(&db).arg("--json"), Some("3 and 4\n"));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Every line of stdout is JSON: the events, then the outcome.
    let lines = json_lines(&out);
    let asked = lines
        .iter()
        .find(|l| l["type"] == "await_requested")
        .expect("an await_requested event");
    assert_eq!(asked["items"][0]["id"], "ask-2", "{asked}");
    let answered = lines
        .iter()
        .find(|l| l["type"] == "await_satisfied")
        .expect("an await_satisfied event");
    assert_eq!(answered["answer"]["text"], "3 and 4", "{answered}");
    let outcome = &lines.last().unwrap()["outcome"];
    assert_eq!(
        outcome["message"]["parts"][0]["text"],
        "Thanks! 3 * 4 = 12."
    );
    assert!(
        stderr.contains("Which two numbers should I multiply next?"),
        "{stderr}"
    );
}

/// The `weft runs answer ...` command printed on `stderr`, as words.
fn answer_command(stderr: &str) -> Vec<String> {
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("weft runs answer "))
        .unwrap_or_else(|| panic!("no answer command in:\n{stderr}"));
    line.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn on_question_fail_exits_3_leaving_the_run_awaiting_to_answer_later() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let out = with_stdin(
        clarify(&db).arg("--on-question=fail"),
        Some("an answer that is not read\n"),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("? 2 + 3 = 5."), "{stderr}");
    assert!(stderr.contains("(--on-question=fail)"), "{stderr}");
    let listed = runs(&db);
    assert_eq!(listed[0]["status"], "awaiting", "{listed:?}");
    let run = listed[0]["run_id"].as_str().unwrap();
    assert!(
        stdout.contains(&format!("── awaiting 1 answer: run {run}")),
        "{stdout}"
    );
    // The printed command, with the answer in place of its placeholder.
    let words = answer_command(&stderr);
    assert_eq!(&words[..5], ["weft", "runs", "answer", run, "ask-2"]);
    assert_eq!(words[5], "'<answer>'");
    let later = weft()
        .args(["runs", "answer", run, "ask-2", "3 and 4"])
        .args(&words[6..])
        .output()
        .unwrap();
    let said = text(&later.stdout);
    assert_eq!(
        later.status.code(),
        Some(0),
        "{said}{}",
        text(&later.stderr)
    );
    assert!(said.contains("Thanks! 3 * 4 = 12."), "{said}");
    assert_eq!(runs(&db)[0]["status"], "completed");
    assert!(transcript(&db, run).contains("3 and 4"));
}

#[test]
fn stdin_ending_without_an_answer_fails_clearly_and_keeps_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let out = with_stdin(&mut clarify(&db), None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("got none: standard input closed before the answer"),
        "{stderr}"
    );
    assert!(stderr.contains("weft runs cancel "), "{stderr}");
    assert_eq!(runs(&db)[0]["status"], "awaiting");
    // Without a store, nothing is kept, and the message says so.
    let out = with_stdin(
        weft().arg("run").arg(example("clarify.toml")).arg(PROMPT),
        None,
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("the run was not stored (no --db)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_coordinator_runs_from_a_script_and_a_tool_question_cannot_wait() {
    let coordinator = || {
        let mut cmd = weft();
        cmd.arg("run")
            .arg(example("coordinator.toml"))
            .arg("Report on 6 * 7");
        cmd
    };
    let out = with_stdin(&mut coordinator(), Some("formal\n"));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("? Which tone should the report take?"),
        "{stderr}"
    );
    assert!(stdout.contains("── done"), "{stdout}");
    // The writer's question is asked by a running call, which cannot wait
    // beyond the process: without an answer, the run is cancelled.
    let out = with_stdin(&mut coordinator(), None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("was cancelled: team.writer asked"),
        "{stderr}"
    );
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn choices_take_a_number_or_a_label_and_confirmations_y_or_n() {
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "script.yaml",
        r#"
- tool_calls:
    - { id: c1, name: ask_user, arguments: { question: "Which colour?", options: [red, green] } }
- tool_calls:
    - { id: c2, name: ask_user, arguments: { question: "And then?", options: [blue, white] } }
- text: "Chosen."
"#,
    );
    let agent = write(
        dir.path(),
        "agent.toml",
        &format!(
            "id = \"m\"\ntoolsets = [\"calc\"]\n[planner]\nkind = \"model\"\n\
             model = \"scripted/{}\"\nask_user = true\n",
            script.display()
        ),
    );
    let out = with_stdin(
        weft().arg("run").arg(&agent).arg("pick").arg("--json"),
        Some("2\nWhite\n"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let chosen: Vec<Value> = json_lines(&out)
        .into_iter()
        .filter(|l| l["type"] == "await_satisfied")
        .map(|l| l["answer"]["answers"]["choice"].clone())
        .collect();
    assert_eq!(
        chosen,
        [serde_json::json!(["green"]), serde_json::json!(["white"])]
    );
    let shown = text(&out.stderr);
    assert!(shown.contains("  2. green (id green)"), "{shown}");
    // A line that is no option fails clearly, as nothing is asked twice.
    let out = with_stdin(weft().arg("run").arg(&agent).arg("pick"), Some("purple\n"));
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("`purple` is not an option of `Which colour?`"),
        "{}",
        text(&out.stderr)
    );

    let body = std::fs::read_to_string(example("calculator.toml")).unwrap();
    let confirm = write(
        dir.path(),
        "confirm.toml",
        &body.replace(
            "max_tool_calls = 8",
            "max_tool_calls = 8\nconfirm_tools = [\"calc.add\"]",
        ),
    );
    let out = with_stdin(weft().arg("run").arg(&confirm).arg("go"), Some("yes\n"));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("← calc.add 5"), "{stdout}");
}
