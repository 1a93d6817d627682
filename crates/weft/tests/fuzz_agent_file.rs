//! Fuzz target of agent-file parsing, as a property test: arbitrary text,
//! generated valid agent files, those files with their TOML tree edited
//! (wrong types, missing and unknown keys) or their text mutated byte by
//! byte. Parsing never panics and fails only with a parse or check error;
//! a generated valid file always parses; whatever parses builds its
//! policy, planner and toolsets without panicking.
//!
//! `WEFT_FUZZ_CASES=10000000 cargo test --release -p weft --no-default-features --test fuzz_agent_file`
//! runs it ten million times.

use std::sync::Arc;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};
use weft::agent_file::{AgentFile, AgentFileError};
use weft_fuzz::json::{self as fjson, Vocab};
use weft_fuzz::text::{tricky, word_or_tricky};

static VOCAB: Vocab = Vocab {
    keys: &[
        "id",
        "instructions",
        "toolsets",
        "planner",
        "policy",
        "kind",
        "turns",
        "finalize",
        "text",
        "tool_calls",
        "name",
        "args",
        "model",
        "base_url",
        "max_tokens",
        "temperature",
        "tool_choice",
        "type",
        "command",
        "url",
        "headers",
        "env",
        "cwd",
        "prefix",
        "oauth",
        "gateway",
        "redis",
        "alias",
        "namespace",
        "call_timeout_ms",
        "start_timeout_ms",
        "max_tool_calls",
        "max_tool_calls_per_turn",
        "max_consecutive_failures",
        "time_budget_ms",
        "finalizer_grace_ms",
        "max_invalid_call_retries",
        "tool_timeout_ms",
        "allowed_tools",
        "confirm_tools",
        "token_dir",
        "redirect_port",
        "client_name",
        "scopes",
        "grant",
        "client_id",
        "client_secret_file",
        "client_secret_env",
        "private_key_file",
        "signing_algorithm",
    ],
    strings: &[
        "scripted",
        "model",
        "calc",
        "text",
        "journal",
        "builtin",
        "mcp",
        "registry",
        "calc.add",
        "anthropic/claude",
        "openai/gpt",
        "compat/llama",
        "local/smollm2",
        "auto",
        "client_credentials",
        "required",
        "none",
        "http://127.0.0.1:9",
        "https://h/mcp",
        "redis://127.0.0.1",
    ],
};

const WORDS: &[&str] = &["calc", "agent", "a", "é", "x.y", " "];

/// A name with no dots and something besides spaces.
fn name() -> BoxedStrategy<String> {
    word_or_tricky(WORDS)
        .prop_map(|s| format!("n{}", s.replace('.', "_")))
        .boxed()
}

/// A TOML-sized integer (TOML has no unsigned 64-bit integers).
fn ms() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(i64::MAX)),
        (0..100_000i64).prop_map(Value::from)
    ]
}

fn toolset() -> BoxedStrategy<Value> {
    let url = select(&["http://127.0.0.1:9/mcp", "https://h", "http://"][..]);
    prop_oneof![
        select(&["calc", "text", "journal"][..]).prop_map(Value::from),
        select(&["calc", "text", "journal"][..])
            .prop_map(|n| json!({"type": "builtin", "name": n})),
        (name(), tricky(WORDS, 4), vec(tricky(WORDS, 3), 0..3), ms()).prop_map(
            |(name, command, args, start)| json!({"type": "mcp", "name": name, "command": command,
                "args": args, "env": {"K": "v"}, "start_timeout_ms": start})
        ),
        (name(), url.clone(), any::<bool>(), any::<u16>()).prop_map(|(name, url, oauth, port)| {
            let mut t = json!({"type": "mcp", "name": name, "url": url, "headers": {"h": "v"}});
            if oauth {
                t["oauth"] = json!({"redirect_port": port, "scopes": ["read"]});
            }
            t
        }),
        (name(), url, proptest::option::of(name()), ms()).prop_map(|(name, gateway, alias, ms)| {
            let mut t = json!({"type": "registry", "name": name, "gateway": gateway,
                "call_timeout_ms": ms});
            if let Some(a) = alias {
                t["alias"] = a.into();
            }
            t
        }),
    ]
    .boxed()
}

fn turn() -> impl Strategy<Value = Value> {
    let call = (word_or_tricky(VOCAB.strings), fjson::value(&VOCAB, 2)).prop_map(|(n, a)| {
        let args = match a {
            Value::Object(m) => Value::Object(m),
            other => json!({ "v": other }),
        };
        json!({"name": n, "args": args})
    });
    prop_oneof![
        tricky(WORDS, 6).prop_map(|t| json!({ "text": t })),
        vec(call, 1..3).prop_map(|c| json!({ "tool_calls": c })),
    ]
}

fn planner() -> impl Strategy<Value = Value> {
    prop_oneof![
        (vec(turn(), 0..4), proptest::option::of(tricky(WORDS, 4))).prop_map(|(turns, fin)| {
            let mut p = json!({"kind": "scripted", "turns": turns});
            if let Some(f) = fin {
                p["finalize"] = f.into();
            }
            p
        }),
        (
            word_or_tricky(VOCAB.strings),
            select(&["auto", "required", "none", "calc.add"][..]),
            any::<u32>(),
            -2.0f32..2.0,
            any::<bool>(),
        )
            .prop_map(|(model, choice, max, temp, url)| {
                let mut p = json!({"kind": "model", "model": model, "tool_choice": choice,
                    "max_tokens": max, "temperature": temp});
                if url {
                    p["base_url"] = "http://127.0.0.1:9/v1".into();
                }
                p
            }),
    ]
}

fn policy() -> impl Strategy<Value = Value> {
    (1..=u32::MAX, ms(), ms(), 0..10u32, vec(name(), 0..3)).prop_map(|(max, budget, grace, retries, tools)| {
        json!({"max_tool_calls": max, "max_tool_calls_per_turn": 1, "max_consecutive_failures": max,
            "time_budget_ms": budget, "finalizer_grace_ms": grace, "tool_timeout_ms": budget,
            "max_invalid_call_retries": retries, "allowed_tools": tools, "confirm_tools": tools})
    })
}

/// A valid agent file, as a JSON tree in TOML's shape.
fn valid() -> impl Strategy<Value = Value> {
    (
        name(),
        proptest::option::of(tricky(WORDS, 8)),
        vec(toolset(), 0..4),
        planner(),
        policy(),
    )
        .prop_map(|(id, instructions, toolsets, planner, policy)| {
            let mut file = Map::new();
            file.insert("id".into(), id.into());
            if let Some(i) = instructions {
                file.insert("instructions".into(), i.into());
            }
            let mut toolsets = toolsets;
            // A `tool_choice` naming a tool names one of the agent's.
            if planner["tool_choice"] == "calc.add" {
                toolsets.insert(0, json!("calc"));
            }
            file.insert("toolsets".into(), unique(toolsets).into());
            file.insert("planner".into(), planner);
            file.insert("policy".into(), policy);
            Value::Object(file)
        })
}

/// The toolsets without a second one of the same name.
fn unique(toolsets: Vec<Value>) -> Vec<Value> {
    let name = |t: &Value| match t {
        Value::String(s) => s.clone(),
        t => t
            .get("alias")
            .or(t.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    };
    let mut seen = Vec::new();
    toolsets
        .into_iter()
        .filter(|t| {
            let n = name(t);
            let new = !seen.contains(&n);
            seen.push(n);
            new
        })
        .collect()
}

/// The tree as TOML text; null, which TOML lacks, becomes an empty string.
fn to_toml(v: &Value) -> String {
    fn conv(v: &Value) -> toml::Value {
        match v {
            Value::Null => toml::Value::String(String::new()),
            Value::Bool(b) => toml::Value::Boolean(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => toml::Value::Integer(i),
                None => toml::Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => toml::Value::String(s.clone()),
            Value::Array(a) => toml::Value::Array(a.iter().map(conv).collect()),
            Value::Object(m) => {
                toml::Value::Table(m.iter().map(|(k, v)| (k.clone(), conv(v))).collect())
            }
        }
    }
    match conv(v) {
        toml::Value::Table(t) => toml::to_string(&t).unwrap_or_default(),
        other => format!("id = {other}\n"),
    }
}

/// Seed files: the repository's examples.
fn examples() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

fn input() -> impl Strategy<Value = (String, bool)> {
    let edited = (valid(), vec(fjson::edit(&VOCAB), 1..4)).prop_map(|(mut v, edits)| {
        for e in &edits {
            fjson::apply(&mut v, e);
        }
        v
    });
    let seeds = Arc::new(examples());
    let lossy = |b: Vec<u8>| (String::from_utf8_lossy(&b).into_owned(), false);
    prop_oneof![
        1 => weft_fuzz::bytes::arbitrary(256).prop_map(lossy),
        2 => valid().prop_map(|v| (to_toml(&v), true)),
        3 => edited.prop_map(|v| (to_toml(&v), false)),
        2 => (valid(), vec(weft_fuzz::bytes::mutation(), 1..6)).prop_map(move |(v, ms)| {
            let mut b = to_toml(&v).into_bytes();
            for m in &ms {
                weft_fuzz::bytes::apply(&mut b, m);
            }
            lossy(b)
        }),
        1 => weft_fuzz::bytes::mutated(seeds, 6).prop_map(lossy),
    ]
}

proptest! {
    #![proptest_config(weft_fuzz::config(weft_fuzz::DEFAULT_CASES))]

    #[test]
    fn agent_file((text, valid) in input()) {
        check(&text, valid)?;
    }
}

fn check(text: &str, valid: bool) -> Result<(), TestCaseError> {
    match AgentFile::parse(text, "fuzz.toml") {
        Ok(file) => {
            let _ = file.policy();
            let _ = file.toolsets();
            if let Ok(planner) = file.planner(None) {
                let _ = file.agent(planner);
            }
        }
        Err(e @ (AgentFileError::Parse { .. } | AgentFileError::Invalid { .. })) => {
            prop_assert!(!valid, "a valid file was refused: {e}\n{text}");
            let _ = e.to_string();
        }
        Err(e) => prop_assert!(false, "parsing gave a reading error: {e}"),
    }
    Ok(())
}
