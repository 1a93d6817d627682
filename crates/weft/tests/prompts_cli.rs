//! `weft prompts` with the real binary on a real SQLite store: an override
//! set from the command line reaches a model agent's next run (its
//! `prompt_rendered` event names it), is listed, and is cleared; an agent
//! file's own `[prompts]` template renders when no override applies.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn weft() -> Command {
    Command::new(env!("CARGO_BIN_EXE_weft"))
}

fn ok(out: Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn model_agent(dir: &Path) -> String {
    let script = dir.join("script.yaml");
    std::fs::write(&script, "- text: \"Hello.\"\n").unwrap();
    let agent = dir.join("model.toml");
    std::fs::write(
        &agent,
        format!(
            "id = \"greeter\"\ninstructions = \"Greet.\"\n\n[planner]\nkind = \"model\"\nmodel = \"scripted/{}\"\n",
            script.display()
        ),
    )
    .unwrap();
    agent.display().to_string()
}

/// The `prompt_rendered` events of the only run in `db`.
/// Runs `agent` once with `weft run` and returns its one `prompt_rendered`
/// event, which must be the system prompt's.
fn run_rendering_system(db: &str, agent: &str) -> Value {
    ok(weft()
        .args(["run", "--db", db, agent, "hi"])
        .output()
        .unwrap());
    let mut events = rendered(db);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["template_id"], "system");
    events.remove(0)
}

fn rendered(db: &str) -> Vec<Value> {
    let runs = ok(weft().args(["runs", "list", "--db", db]).output().unwrap());
    let run = runs[0]["run_id"].as_str().unwrap().to_owned();
    ok(weft()
        .args(["runs", "events", &run, "--db", db])
        .output()
        .unwrap())
    .into_iter()
    .filter(|e| e["type"] == "prompt_rendered")
    .collect()
}

#[test]
fn an_override_set_from_the_cli_reaches_the_next_run_and_is_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").display().to_string();
    let agent = model_agent(dir.path());

    let set = ok(weft()
        .args([
            "prompts", "set", "system", "--db", &db, "--label", "env=test",
        ])
        .args(["--template", "Test runs only."])
        .output()
        .unwrap());
    assert_eq!(set[0]["scope"]["labels"]["env"], "test");
    let global = ok(weft()
        .args(["prompts", "set", "system", "--db", &db])
        .args(["--template", "Be kind. {{ instruction }}"])
        .output()
        .unwrap());
    let bad = weft()
        .args([
            "prompts",
            "set",
            "system",
            "--db",
            &db,
            "--template",
            "{% if %}",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("system"));

    let listed = ok(weft()
        .args(["prompts", "list", "--db", &db])
        .output()
        .unwrap());
    assert_eq!(listed.len(), 2);
    let page = ok(weft()
        .args(["prompts", "list", "--db", &db, "--limit", "1"])
        .output()
        .unwrap());
    let cursor = page[1]["next_cursor"].as_str().unwrap().to_owned();
    let rest = ok(weft()
        .args([
            "prompts", "list", "--db", &db, "--limit", "1", "--cursor", &cursor,
        ])
        .output()
        .unwrap());
    assert_eq!(rest[0], listed[1]);

    // The run carries no `env` label: the global override applies.
    let event = run_rendering_system(&db, &agent);
    assert_eq!(event["version"], global[0]["version"]);
    assert_eq!(event["override"]["labels"], serde_json::json!({}));

    let clear = |code: i32| {
        let out = weft()
            .args(["prompts", "clear", "system", "--db", &db])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code));
    };
    clear(0);
    clear(1);
    let left = ok(weft()
        .args(["prompts", "list", "--db", &db])
        .output()
        .unwrap());
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["scope"]["labels"]["env"], "test");
}

#[test]
fn an_agent_file_s_own_template_renders_until_an_override_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").display().to_string();
    let agent = model_agent(dir.path());
    let template = "From the file. {{ instruction }}";
    let text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        format!("{text}\n[prompts]\nsystem = \"{template}\"\n"),
    )
    .unwrap();
    let event = run_rendering_system(&db, &agent);
    assert_eq!(
        event["version"],
        weft_core::prompt::template_version(template)
    );
    assert!(event.get("override").is_none(), "{event:?}");

    // A template that does not parse is refused when the file is read.
    std::fs::write(
        &agent,
        format!("{text}\n[prompts]\nsystem = \"{{% if %}}\"\n"),
    )
    .unwrap();
    let out = weft()
        .args(["run", "--db", &db, &agent, "hi"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[prompts]") && err.contains("system"), "{err}");
}
