//! Broken inputs through the real `weft` binary, each answered with a
//! message that names its cause, once, on one line.

mod common;

use std::process::{Command, Output};

fn weft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-cli-errors-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_missing_agent_file_is_named_and_its_cause_said_once() {
    let out = weft(&["run", "no/such/agent.toml", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("no/such/agent.toml"), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn an_agent_file_without_a_prompt_asks_for_the_prompt() {
    let out = weft(&["run", common::example("calculator.toml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("is an agent file: give the prompt after it"),
        "{err}"
    );
}

#[test]
fn a_command_that_reads_a_store_refuses_to_create_one() {
    let dir = temp_dir("typo");
    let db = dir.join("typo.db");
    for args in [
        vec!["runs", "list", "--db", db.to_str().unwrap()],
        vec!["sessions", "list", "--db", db.to_str().unwrap()],
    ] {
        let out = weft(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("no store at"), "{}", stderr(&out));
        assert!(!db.exists(), "{args:?} created {}", db.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_usage_reads_as_two_forms() {
    let out = weft(&["run", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("weft run [OPTIONS] <AGENT_FILE> <PROMPT>"),
        "{help}"
    );
    assert!(
        help.contains("--model <MODEL> [AGENT_FILE] <PROMPT>"),
        "{help}"
    );
    assert!(!help.contains("<AGENT_FILE]"), "{help}");
}

#[test]
fn an_unreachable_provider_is_named_with_the_os_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let dir = temp_dir("unreachable");
    let agent = dir.join("agent.toml");
    std::fs::write(
        &agent,
        format!(
            "id = \"a\"\ninstructions = \"Hi.\"\n[planner]\nkind = \"model\"\n\
             model = \"compat/m\"\nbase_url = \"http://{addr}/v1\"\n"
        ),
    )
    .unwrap();
    let out = weft(&["run", agent.to_str().unwrap(), "hi"]);
    let _ = std::fs::remove_dir_all(&dir);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        all.contains(&format!("POST http://{addr}/v1/chat/completions")),
        "{all}"
    );
    assert!(all.contains("refused"), "{all}");
}
