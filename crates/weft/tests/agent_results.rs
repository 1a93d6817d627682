//! Agents called as tools with a result contract, from agent files: an
//! agent toolset declares an agent's `output_schema`, the agent's scripted
//! planner answers with a final tool result (`result = {...}`), and the
//! parent's call gets that result as structured JSON when it matches the
//! schema, or an `invalid_result` error naming the mismatch when it does
//! not.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use weft::agent_file::{AgentFile, load_team};
use weft::core::run::RunOutcome;
use weft::core::store::RunStore;
use weft::core::tool::ToolResultBody;
use weft::runtime::{INVALID_RESULT, MemoryStore, Runtime, StartRequest};

const SCHEMA: &str =
    r#"{ type = "object", required = ["sum"], properties = { sum = { type = "integer" } } }"#;

fn coordinator() -> String {
    format!(
        r#"
id = "coordinator"
instructions = "Have both adders add."

[[toolsets]]
type = "agent"
name = "team"
agents = [
  {{ id = "adder", file = "adder.toml", description = "Adds", output_schema = {SCHEMA} }},
  {{ id = "sloppy", file = "sloppy.toml", description = "Adds, in words", output_schema = {SCHEMA} }},
]

[planner]
kind = "scripted"

[[planner.turns]]
tool_calls = [
  {{ name = "team.adder", args = {{ input = "1 + 2" }} }},
  {{ name = "team.sloppy", args = {{ input = "1 + 2" }} }},
]

[[planner.turns]]
text = "Both answered."
"#
    )
}

fn adder(id: &str, result: &str) -> String {
    format!(
        r#"
id = "{id}"
instructions = "Add."

[planner]
kind = "scripted"

[[planner.turns]]
result = {result}
"#
    )
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[tokio::test]
async fn a_child_s_result_reaches_its_parent_as_json_or_as_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "coordinator.toml", &coordinator());
    write(dir.path(), "adder.toml", &adder("adder", "{ sum = 3 }"));
    write(
        dir.path(),
        "sloppy.toml",
        &adder("sloppy", r#"{ sum = "three" }"#),
    );
    let agents = load_team(&dir.path().join("coordinator.toml"), None).unwrap();
    let store = Arc::new(MemoryStore::new());
    let rt = agents
        .into_iter()
        .fold(Runtime::builder(), |b, a| b.agent(a))
        .store(store.clone())
        .build();
    let parent = rt
        .start("coordinator", StartRequest::user("go"))
        .await
        .unwrap();
    let outcome = parent.outcome().await.unwrap();
    assert!(
        matches!(outcome, RunOutcome::Response { .. }),
        "{outcome:?}"
    );
    let stored = store.load_run(parent.run_id()).await.unwrap().unwrap();
    let outputs = stored.snapshot.tool_outputs();
    let by_name = |name: &str| {
        outputs
            .iter()
            .find(|o| o.name.as_str() == name)
            .unwrap_or_else(|| panic!("no output of {name}"))
            .clone()
    };
    // The schema-valid result is the call's result, structured.
    assert_eq!(
        by_name("team.adder").result,
        ToolResultBody::Json(json!({"sum": 3}))
    );
    // The schema-invalid one is a typed error saying what was wrong.
    let sloppy = by_name("team.sloppy");
    let ToolResultBody::Error(e) = &sloppy.result else {
        panic!("{:?}", sloppy.result);
    };
    assert_eq!(e.code, INVALID_RESULT);
    assert!(e.message.contains("/sum"), "{}", e.message);
    assert!(e.message.contains("integer"), "{}", e.message);
}

#[test]
fn an_output_schema_must_compile_and_a_turn_gives_one_answer() {
    let bad_schema = coordinator().replace(SCHEMA, r#"{ type = 5 }"#);
    let err = AgentFile::parse(&bad_schema, "coordinator.toml").unwrap_err();
    assert!(
        err.to_string().contains("output schema of agent `adder`"),
        "{err}"
    );
    let both = adder("adder", "{ sum = 3 }") + "text = \"and words\"\n";
    let err = AgentFile::parse(&both, "adder.toml").unwrap_err();
    assert!(err.to_string().contains("exactly one of"), "{err}");
    AgentFile::parse(&adder("adder", "[1, 2]"), "adder.toml").unwrap();
}
