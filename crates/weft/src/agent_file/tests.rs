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
    // Caps the file leaves out are at their defaults: none can be removed.
    let caps = weft_core::run::Policy::bounded();
    assert_eq!(f.policy().max_turns, caps.max_turns);
    assert_eq!(
        f.policy().max_consecutive_failures,
        caps.max_consecutive_failures
    );
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

#[test]
fn an_ask_turn_is_a_clarification_await() {
    let f = AgentFile::parse(
        "id = \"x\"\n[planner]\nkind = \"scripted\"\n[[planner.turns]]\nask = \"Which numbers?\"\n[[planner.turns]]\ntext = \"done\"",
        "a.toml",
    )
    .unwrap();
    let PlannerSpec::Scripted { turns, .. } = &f.planner else {
        panic!("not scripted");
    };
    let weft_core::planner::Decision::Await { items, .. } = turns[0].plan(1).decision else {
        panic!("an `ask` turn must await");
    };
    let [weft_core::awaiting::AwaitItem::Clarification(c)] = items.as_slice() else {
        panic!("one clarification expected: {items:?}");
    };
    assert_eq!(c.id.as_str(), "ask-1");
    assert_eq!(c.question, "Which numbers?");
    for bad in ["ask = \"\"", "ask = \"q\"\ntext = \"a\""] {
        let err = AgentFile::parse(
            &format!("id = \"x\"\n[planner]\nkind = \"scripted\"\n[[planner.turns]]\n{bad}"),
            "a.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("turn 1"), "{err}");
    }
}

#[test]
fn agent_toolsets_name_their_agents_and_bad_ones_are_refused() {
    let file = |toolset: &str| {
        format!(
            "id = \"boss\"\ntoolsets = [{toolset}]\n[planner]\nkind = \"scripted\"\nturns = []\n"
        )
    };
    let ok = AgentFile::parse(
        &file(r#"{ type = "agent", name = "team", agents = [{ id = "a", file = "a.toml", description = "A" }] }"#),
        "boss.toml",
    )
    .unwrap();
    assert_eq!(ok.toolsets[0].name(), "team");
    for (toolset, expected) in [
        (
            r#"{ type = "agent", name = "t.x", agents = [{ id = "a", file = "a.toml", description = "A" }] }"#,
            "without dots",
        ),
        (
            r#"{ type = "agent", name = "t", agents = [] }"#,
            "between 1 and",
        ),
        (
            r#"{ type = "agent", name = "t", agents = [{ id = "a", file = "a.toml", description = "A" }, { id = "a", file = "b.toml", description = "B" }] }"#,
            "twice",
        ),
        (
            r#"{ type = "agent", name = "t", agents = [{ id = "a", file = "a.toml" }] }"#,
            "description",
        ),
    ] {
        let err = AgentFile::parse(&file(toolset), "boss.toml").unwrap_err();
        assert!(err.to_string().contains(expected), "{toolset}: {err}");
    }
}

#[test]
fn the_history_section_names_a_bounded_policy() {
    use weft_core::history::HistoryPolicy;
    let parse = |history: &str| {
        AgentFile::parse(
            &format!("id = \"h\"\n[planner]\nkind = \"scripted\"\nturns = []\n{history}"),
            "h.toml",
        )
    };
    let policy = |history: &str| parse(history).unwrap().history.policy();
    assert_eq!(policy(""), HistoryPolicy::default());
    assert_eq!(
        policy("[history]\nkeep_turns = 3"),
        HistoryPolicy::LastTurns { turns: 3 }
    );
    assert_eq!(policy("[history]\nkeep_all = true"), HistoryPolicy::KeepAll);
    assert_eq!(
        policy("[history]\nkeep_turns = 2\nsummarize = { model = \"openai/gpt-4o-mini\" }"),
        HistoryPolicy::Summarize {
            keep_turns: 2,
            model: Some("openai/gpt-4o-mini".into())
        }
    );
    for bad in [
        "[history]\nkeep_all = true\nkeep_turns = 2",
        "[history]\nkeep_turns = 100000",
        "[history]\nsummarize = { model = \" \" }",
        "[history]\nturns = 2",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_team_is_read_from_the_files_its_agent_toolsets_name() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    let scripted = "[planner]\nkind = \"scripted\"\nturns = []\n";
    write(
        "boss.toml",
        &format!(
            "id = \"boss\"\ntoolsets = [{{ type = \"agent\", name = \"team\", agents = [\
             {{ id = \"helper\", file = \"sub/helper.toml\", description = \"Helps\" }}] }}]\n{scripted}"
        ),
    );
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    // The helper calls the boss back: each agent is read once.
    write(
        "sub/helper.toml",
        &format!(
            "id = \"helper\"\ntoolsets = [{{ type = \"agent\", name = \"up\", agents = [\
             {{ id = \"boss\", file = \"../boss.toml\", description = \"Boss\" }}] }}]\n{scripted}"
        ),
    );
    let team = load_team(&dir.path().join("boss.toml"), None).unwrap();
    let ids: Vec<&str> = team.iter().map(|a| a.id().as_str()).collect();
    assert_eq!(ids, ["boss", "helper"]);

    // A file whose id is not the one the toolset calls it is refused.
    write("sub/helper.toml", &format!("id = \"other\"\n{scripted}"));
    let err = load_team(&dir.path().join("boss.toml"), None).unwrap_err();
    assert!(err.to_string().contains("calls it `helper`"), "{err}");
}

#[test]
fn the_session_example_parses() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/session.toml");
    let f = AgentFile::load(&path).unwrap();
    assert!(matches!(
        f.planner,
        PlannerSpec::Scripted {
            across_session: true,
            ..
        }
    ));
    assert_eq!(
        f.history.policy(),
        weft_core::history::HistoryPolicy::LastTurns { turns: 10 }
    );
}

#[test]
fn the_policy_section_sets_the_tool_policy() {
    let f = AgentFile::parse(
        r#"
id = "p"
[planner]
kind = "scripted"
turns = []
[policy]
denied_tools = ["calc.divide"]
allowed_tags = ["math"]
denied_tags = ["network"]
confirm_tags = ["writes"]
confirm_destructive = true
"#,
        "p.toml",
    )
    .unwrap();
    let p = f.policy();
    assert!(p.denied_tools.contains(&ToolIdent::new("calc.divide")));
    assert_eq!(p.allowed_tags, Some(["math".to_owned()].into()));
    assert!(p.denied_tags.contains("network"));
    assert!(p.confirm_tags.contains("writes"));
    assert!(p.confirm_destructive);
}

/// The advisor example, its scripted model's path made absolute.
fn advisor_example() -> AgentFile {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let text = std::fs::read_to_string(format!("{root}/examples/advisor.toml")).unwrap();
    let text = text.replace("scripted/examples/", &format!("scripted/{root}/examples/"));
    AgentFile::parse(&text, "advisor.toml").unwrap()
}

#[test]
fn the_advisor_section_builds_an_agent_with_the_advisor() {
    let f = advisor_example();
    let spec = f.advisor.clone().unwrap();
    assert_eq!(spec.max_uses_per_run.get(), 1);
    assert_eq!(spec.max_output_tokens.map(|n| n.get()), Some(1024));
    let config = spec
        .config(f.system_prompt(), f.provider_options())
        .unwrap();
    assert_eq!(config.max_output_tokens.get(), 1024);
    let system = config.system.unwrap();
    assert!(system.starts_with("Compute what the user asks"), "{system}");
    assert!(
        system.ends_with(weft_runtime::advisor::GUIDANCE),
        "{system}"
    );
    assert_eq!(
        weft_runtime::advisor::strip_guidance(&system),
        system.replace(weft_runtime::advisor::GUIDANCE, "").trim()
    );
    // The planner's system prompt carries the guidance block.
    let guidance: Vec<String> = f
        .planner_toolsets()
        .iter()
        .filter_map(|t| weft_tools::find_instructions(&**t).map(|i| i.instructions_text()))
        .collect();
    assert_eq!(
        guidance.last().map(String::as_str),
        Some(weft_runtime::advisor::GUIDANCE)
    );
    assert!(f.agent(f.planner(None).unwrap()).is_ok());
}

#[test]
fn the_advisor_example_runs_and_spends_its_budget() {
    let f = advisor_example();
    let agent = f.agent(f.planner(None).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let runtime = weft_runtime::Runtime::builder().agent(agent).build();
        let handle = runtime
            .start("advisor", weft_runtime::StartRequest::user("go"))
            .await
            .unwrap();
        handle.outcome().await.unwrap();
        let stored = runtime
            .store()
            .load_run(handle.run_id())
            .await
            .unwrap()
            .unwrap();
        let kinds: Vec<serde_json::Value> = stored
            .snapshot
            .tool_outputs()
            .iter()
            .filter(|o| o.name.as_str() == "advisor")
            .filter_map(|o| match &o.result {
                weft_core::tool::ToolResultBody::Json(v) => Some(v["type"].clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                serde_json::json!("advice"),
                serde_json::json!("limit_reached")
            ]
        );
    });
}

#[test]
fn the_planner_s_provider_options_pass_through_to_the_advisor() {
    let text = r#"
id = "a"
instructions = "Be brief."
[planner]
kind = "model"
model = "anthropic/claude-sonnet-4-5"
temperature = 0.25
thinking_budget = 4096
[advisor]
model = "anthropic/claude-opus-4-1"
max_uses_per_run = 2
"#;
    let f = AgentFile::parse(text, "a.toml").unwrap();
    let options = f.provider_options();
    assert_eq!(
        options,
        InheritedOptions {
            temperature: Some(0.25),
            thinking_budget: Some(4096),
        }
    );
    // The planner asks with them too.
    let (_, settings) = f.model_spec(None).unwrap();
    assert_eq!(settings.temperature, Some(0.25));
    assert_eq!(settings.thinking_budget, Some(4096));
    // The advisor's nested request carries them.
    let model = std::sync::Arc::new(weft_models::ScriptedModel::new("adviser", vec![]));
    let config = f
        .advisor
        .as_ref()
        .unwrap()
        .config_on(model, f.system_prompt(), options);
    let request = weft_runtime::advisor::request(&config, &[], "which way?");
    assert_eq!(request.temperature, Some(0.25));
    assert_eq!(request.thinking_budget, Some(4096));
    assert!(request.tools.is_empty());
    // A scripted planner has none to pass on.
    let scripted = AgentFile::parse(
        "id = \"s\"\n[planner]\nkind = \"scripted\"\nturns = []\n",
        "s.toml",
    )
    .unwrap();
    assert_eq!(scripted.provider_options(), InheritedOptions::default());
}

#[test]
fn an_advisor_without_uses_is_refused() {
    let text = r#"
id = "a"
[advisor]
model = "anthropic/x"
max_uses_per_run = 0
[planner]
kind = "scripted"
turns = []
"#;
    assert!(matches!(
        AgentFile::parse(text, "a.toml"),
        Err(AgentFileError::Parse { .. })
    ));
}

#[test]
fn a_model_planner_may_stream_or_not_and_offer_the_ask_tool() {
    let parse = |extra: &str| {
        AgentFile::parse(
            &format!(
                "id = \"m\"\n[planner]\nkind = \"model\"\nmodel = \"openai/gpt-4o-mini\"\n{extra}"
            ),
            "m.toml",
        )
        .unwrap()
    };
    let settings = |extra: &str| parse(extra).model_spec(None).unwrap().1;
    assert_eq!(settings("").streaming, weft_models::Streaming::Auto);
    assert!(!settings("").ask_tool);
    assert_eq!(
        settings("stream = false").streaming,
        weft_models::Streaming::Never
    );
    assert_eq!(
        settings("stream = true").streaming,
        weft_models::Streaming::Always
    );
    assert!(settings("ask_user = true").ask_tool);
}

fn model_file(extra: &str) -> Result<AgentFile, AgentFileError> {
    AgentFile::parse(
        &format!("id = \"m\"\n[planner]\nkind = \"model\"\nmodel = \"compat/llama3.2\"\n{extra}"),
        "m.toml",
    )
}

#[test]
fn a_price_table_prices_the_file_s_model() {
    let f = model_file(
        "[planner.price]\ninput = 3\noutput = 15.0\ncached_input = 0.3\ncache_write = 3.75\n",
    )
    .unwrap();
    let price = f.model_spec(None).unwrap().1.price;
    assert_eq!(
        price,
        Some(weft_models::ModelPrice {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
            cache_write: Some(3.75),
        })
    );
    // The cache prices are optional.
    let f = model_file("[planner.price]\ninput = 0.5\noutput = 1.5\n").unwrap();
    assert_eq!(
        f.model_spec(None).unwrap().1.price,
        Some(weft_models::ModelPrice::new(0.5, 1.5))
    );
    // Another model given with `--model` is not priced at the file's price.
    assert_eq!(f.model_spec(Some("openai/gpt-4o")).unwrap().1.price, None);
    assert!(
        f.model_spec(Some("compat/llama3.2"))
            .unwrap()
            .1
            .price
            .is_some()
    );
    // Without a table there is no configured price (the built-in list
    // price, if any, applies).
    assert_eq!(
        model_file("").unwrap().model_spec(None).unwrap().1.price,
        None
    );
}

#[test]
fn a_negative_or_non_numeric_price_is_a_typed_error() {
    let price_error = |table: &str| match model_file(&format!("[planner.price]\n{table}\n")) {
        Err(AgentFileError::Price { path, error }) => {
            assert_eq!(path, "m.toml");
            error
        }
        other => panic!("{table}: {other:?}"),
    };
    assert_eq!(
        price_error("input = 3.0\noutput = -1.5"),
        PriceError::Negative {
            field: "output",
            value: -1.5
        }
    );
    assert_eq!(
        price_error("input = \"3.0\"\noutput = 15.0"),
        PriceError::NotANumber {
            field: "input",
            found: "\"3.0\"".into()
        }
    );
    assert!(matches!(
        price_error("input = nan\noutput = 1.0"),
        PriceError::NotANumber { field: "input", .. }
    ));
    assert!(matches!(
        price_error("input = 1.0\noutput = 1.0\ncached_input = inf"),
        PriceError::NotANumber {
            field: "cached_input",
            ..
        }
    ));
    assert_eq!(
        price_error("input = 3.0"),
        PriceError::Missing { field: "output" }
    );
    let message = model_file("[planner.price]\ninput = -3\noutput = 1\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "agent file m.toml: [planner.price] `input` must not be negative, not -3"
    );
    // A key the table does not know is a parse error naming it.
    let unknown = model_file("[planner.price]\ninptu = 3\noutput = 1\n").unwrap_err();
    assert!(
        matches!(&unknown, AgentFileError::Parse { message, .. } if message.contains("inptu")),
        "{unknown}"
    );
}
