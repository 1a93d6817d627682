//! Tests of agent-file parsing and checking.
use super::*;

#[test]
fn parses_a_scripted_agent() {
    let f = AgentFile::parse(
        r#"
id = "calc"
toolsets = ["calc"]
[planner]
kind = "scripted"
[[planner.turns]]
tool_calls = [{ name = "calc.add", args = { a = 1, b = 2 } }]
[[planner.turns]]
text = "3"
[policy]
max_tool_calls = 4
time_budget_ms = 1000
"#,
        "a.toml",
    )
    .unwrap();
    assert_eq!(f.policy().max_tool_calls.map(|n| n.get()), Some(4));
    assert_eq!(f.policy().time_budget, Some(Duration::from_millis(1000)));
    assert!(f.scripted_planner().is_some());
}

#[test]
fn accepts_builtin_names_and_registry_tables() {
    let f = AgentFile::parse(
            r#"
id = "mixed"
toolsets = ["text", { type = "registry", name = "calc", gateway = "http://127.0.0.1:8790", alias = "remote" }]
[planner]
kind = "scripted"
[[planner.turns]]
text = "hi"
"#,
            "a.toml",
        )
        .unwrap();
    let names: Vec<String> = f.toolsets().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, vec!["text", "remote"]);
    let f = AgentFile::parse(
        r#"
id = "tables"
[[toolsets]]
type = "registry"
name = "calc"
gateway = "http://127.0.0.1:8790"
[planner]
kind = "scripted"
[[planner.turns]]
text = "hi"
"#,
        "a.toml",
    )
    .unwrap();
    assert_eq!(f.toolsets()[0].name(), "calc");
}

#[test]
fn rejects_bad_files_with_clear_messages() {
    let err = AgentFile::parse("id = 3", "a.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("a.toml is invalid"), "{err}");
    let err = AgentFile::parse(
        "id = \"x\"\ntoolsets = [\"nope\"]\n[planner]\nkind = \"scripted\"\nturns = []",
        "a.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("unknown toolset `nope`"), "{err}");
    let err = AgentFile::parse(
            "id = \"x\"\n[planner]\nkind = \"scripted\"\n[[planner.turns]]\ntext = \"a\"\ntool_calls = [{name = \"calc.add\"}]",
            "a.toml",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("exactly one of"), "{err}");
    let err = AgentFile::parse(
            "id = \"x\"\ntoolsets = [{ type = \"registry\", name = \"calc\", gateway = \"nope\" }]\n[planner]\nkind = \"scripted\"\nturns = []",
            "a.toml",
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("http(s) `gateway`"), "{err}");
    let err = AgentFile::parse(
        "id = \"x\"\n[planner]\nkind = \"scripted\"\nturns = []\n[policy]\nmax_tool_calls = 0",
        "a.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("nonzero"), "{err}");
}

#[test]
fn mcp_toolsets_are_tables_next_to_built_in_names() {
    let f = AgentFile::parse(
            r#"
id = "x"
toolsets = ["calc", { type = "mcp", name = "fs", command = "mcp-server-filesystem", args = ["/tmp"], prefix = "fs_" }]
[planner]
kind = "scripted"
turns = []
"#,
            "a.toml",
        )
        .unwrap();
    let names: Vec<String> = f.toolsets().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["calc", "fs"]);
    let f = AgentFile::parse(
            "id = \"x\"\n[[toolsets]]\ntype = \"mcp\"\nname = \"web\"\nurl = \"http://127.0.0.1:1/mcp\"\n[planner]\nkind = \"scripted\"\nturns = []",
            "a.toml",
        )
        .unwrap();
    assert_eq!(f.toolsets().len(), 1);
}

#[test]
fn bad_mcp_toolsets_and_name_collisions_are_named() {
    let parse = |toolsets: &str| {
        AgentFile::parse(
            &format!(
                "id = \"x\"\ntoolsets = {toolsets}\n[planner]\nkind = \"scripted\"\nturns = []"
            ),
            "a.toml",
        )
        .unwrap_err()
        .to_string()
    };
    let err = parse(r#"["calc", { type = "mcp", name = "calc", command = "srv" }]"#);
    assert!(
        err.contains("two toolsets are named `calc`: built-in `calc` and MCP server `srv`"),
        "{err}"
    );
    let err = parse(r#"[{ type = "mcp", name = "m" }]"#);
    assert!(err.contains("exactly one of `command`"), "{err}");
    let err = parse(r#"[{ type = "mcp", name = "m", command = "x", colour = 1 }]"#);
    assert!(err.contains("colour"), "{err}");
    let err = parse(r#"[{ type = "nope", name = "m" }]"#);
    assert!(err.contains("nope"), "{err}");
}
