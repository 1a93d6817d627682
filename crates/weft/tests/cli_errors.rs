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

/// Writes an agent file `name` in a fresh directory and runs it on "hi",
/// with the environment `envs` and no provider key.
fn run_file(name: &str, body: &str, envs: &[(&str, &str)]) -> Output {
    let dir = temp_dir(name);
    let agent = dir.join("agent.toml");
    std::fs::write(&agent, body).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(["run", agent.to_str().unwrap(), "hi"])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn a_missing_key_names_the_variable_and_the_field_that_names_another() {
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["run", "--model", "anthropic/x", "hi"])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(
            "set ANTHROPIC_API_KEY, or name the variable that holds the key with \
             `api_key_env` in the agent file's [planner] (or [advisor])"
        ),
        "{err}"
    );

    // The field the hint names is the agent file's: a variable that is not
    // set is named, and one that is set is used.
    let file = "id = \"a\"\n[planner]\nkind = \"model\"\nmodel = \"anthropic/x\"\n\
                api_key_env = \"WEFT_TEST_TEAM_KEY\"\nbase_url = \"http://127.0.0.1:9\"\n";
    let out = run_file("key-env", file, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("`api_key_env` names WEFT_TEST_TEAM_KEY, which is not set"),
        "{err}"
    );
    let out = run_file("key-env-set", file, &[("WEFT_TEST_TEAM_KEY", "sk-team")]);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(!all.contains("API key"), "{all}");
    assert!(all.contains("POST http://127.0.0.1:9/v1/messages"), "{all}");
    assert!(!all.contains("sk-team"), "{all}");
}

#[test]
fn an_unknown_planner_field_is_pointed_at_on_its_own_line() {
    let out = run_file(
        "unknown-field",
        "id = \"a\"\n\n[planner]\nkind = \"model\"\nmodel = \"anthropic/x\"\n  api_key = \"k\"\n",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("line 6, column 3"), "{err}");
    assert!(err.contains("6 |   api_key = \"k\""), "{err}");
    assert!(err.contains("  |   ^^^^^^^\n"), "{err}");
    assert!(err.contains("unknown field `api_key`"), "{err}");
    assert!(
        err.contains("`api_key_env` names the environment variable"),
        "{err}"
    );
    assert!(!err.contains("line 3"), "{err}");
}

#[test]
fn a_tool_choice_the_agent_does_not_offer_is_refused_when_the_file_is_read() {
    let model =
        "[planner]\nkind = \"model\"\nmodel = \"compat/m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let out = run_file(
        "choice-typo",
        &format!("id = \"a\"\ntoolsets = [\"calc\"]\n{model}tool_choice = \"calc.ad\"\n"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(
            "`tool_choice` names the tool `calc.ad`, which the agent does not offer \
             (its tools: calc.add, calc.subtract, calc.multiply, calc.divide)"
        ),
        "{err}"
    );
    assert!(!err.contains("POST"), "{err}");

    let out = run_file(
        "choice-no-tools",
        &format!("id = \"a\"\n{model}tool_choice = \"calc.add\"\n"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .contains("`tool_choice` names the tool `calc.add`, but the agent offers no tools"),
        "{}",
        stderr(&out)
    );

    // An MCP server's tools are listed when it starts: its prefix is what
    // the file can be checked against.
    let mcp =
        "[[toolsets]]\ntype = \"mcp\"\nname = \"fs\"\ncommand = \"weft-test-no-such-server\"\n";
    let out = run_file(
        "choice-mcp",
        &format!("id = \"a\"\n{mcp}{model}tool_choice = \"files.read\"\n"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("(its tools: fs.* (listed when it starts))"),
        "{}",
        stderr(&out)
    );
    let out = run_file(
        "choice-mcp-ok",
        &format!("id = \"a\"\n{mcp}{model}tool_choice = \"fs.read\"\n"),
        &[],
    );
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(!all.contains("tool_choice"), "{all}");
}

#[test]
fn a_run_summary_counts_one_tool_call_in_the_singular() {
    let dir = temp_dir("singular");
    let db = dir.join("w.db");
    let agent = dir.join("agent.toml");
    std::fs::write(
        &agent,
        "id = \"a\"\ntoolsets = [\"calc\"]\n[planner]\nkind = \"scripted\"\n\
         [[planner.turns]]\ntool_calls = [{ name = \"calc.add\", args = { a = 2, b = 3 } }]\n\
         [[planner.turns]]\ntext = \"5\"\n",
    )
    .unwrap();
    let out = weft(&[
        "run",
        agent.to_str().unwrap(),
        "hi",
        "--db",
        db.to_str().unwrap(),
    ]);
    let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(shown.contains("2 turns · 1 tool call ·"), "{shown}");
    let list = weft(&["runs", "list", "--db", db.to_str().unwrap()]);
    let listed = String::from_utf8_lossy(&list.stdout).into_owned();
    let run = listed
        .split("\"run_id\":\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no run listed: {listed}"));
    let show = weft(&["runs", "show", run, "--db", db.to_str().unwrap()]);
    let transcript = String::from_utf8_lossy(&show.stdout).into_owned();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        transcript.contains("2 turns · 1 tool call ·"),
        "{transcript}"
    );
}
